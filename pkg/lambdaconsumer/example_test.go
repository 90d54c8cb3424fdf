package lambdaconsumer_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

// A complete consumer function: the stack subscribes it to a topic and group
// (STRATA_SUBSCRIPTIONS of the dispatch function) and gives it the store names
// (STRATA_BUCKET, STRATA_TABLE_PREFIX).
func Example() {
	lambda.Start(lambdaconsumer.Handler(lambdaconsumer.Config{Workers: 4, OrderedKeys: true},
		func(ctx context.Context, r lambdaconsumer.Record) error {
			fmt.Printf("%s/%d@%d: %s\n", r.Topic, r.Partition, r.Offset, r.Value)
			return nil
		}))
}
