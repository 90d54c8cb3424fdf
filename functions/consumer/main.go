// Command consumer is the example order consumer, built on pkg/lambdaconsumer: each
// order event is written to the business table through the fenced business store
// (keyed by topic/partition/offset, conditional on the invocation's lease generation
// and on the record's marker), so a replay never applies an effect twice and a zombie
// invocation that lost its lease writes nothing. Configuration: functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/node"
)

func main() {
	cfg, err := node.FromEnv(os.Getenv)
	if err != nil {
		fatal(err)
	}
	cfg.Backend = node.BackendAWS
	orders := &orderTable{effects: lambdaconsumer.EffectsFrom}
	open := func(ctx context.Context) (lambdaconsumer.Backend, error) {
		return lambdaconsumer.OpenNodeEffects(ctx, cfg, cfg.Function.BusinessTable)
	}
	lambda.Start(lambdaconsumer.Handler(lambdaconsumer.Config{Workers: 4, OrderedKeys: true, Open: open}, orders.apply))
}

func fatal(err error) {
	slog.Error("consumer: cannot start", "error", err)
	os.Exit(1)
}
