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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/node"
)

func main() {
	cfg, err := node.FromEnv(os.Getenv)
	if err != nil {
		fatal(err)
	}
	cfg.Backend = node.BackendAWS
	awsCfg, err := cfg.AWS.LoadSDK(context.Background(), nil)
	if err != nil {
		fatal(err)
	}
	orders := &orderTable{client: dynamodb.NewFromConfig(awsCfg), table: cfg.Function.BusinessTable}
	open := func(ctx context.Context) (lambdaconsumer.Backend, error) { return lambdaconsumer.OpenNode(ctx, cfg) }
	lambda.Start(lambdaconsumer.Handler(lambdaconsumer.Config{Workers: 4, OrderedKeys: true, Open: open}, orders.apply))
}

func fatal(err error) {
	slog.Error("consumer: cannot start", "error", err)
	os.Exit(1)
}
