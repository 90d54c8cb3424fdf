// Command consumer is the example order consumer, built on pkg/lambdaconsumer: each
// order event is written to the business table with a conditional put keyed by
// topic/partition/offset, so a replay (a crash before the commit, a duplicate
// invocation that lost its lease) never applies an effect twice. Configuration:
// functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

func main() {
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		slog.Error("consumer: cannot start", "error", err)
		os.Exit(1)
	}
	table := os.Getenv(deploy.EnvBusinessTable)
	if table == "" {
		table = deploy.BusinessDefaultTable
	}
	orders := &orderTable{client: dynamodb.NewFromConfig(awsCfg), table: table}
	lambda.Start(lambdaconsumer.Handler(lambdaconsumer.Config{Workers: 4, OrderedKeys: true}, orders.apply))
}
