// Command dispatch is the dispatch Lambda function: it reads the sequencer table's
// stream (materialising each commit's index entry and invoking the consumers it woke)
// and, on a schedule, sweeps every subscription for lagging partitions (pkg/dispatch),
// on a node opened through pkg/node with no HTTP runtime. Configuration:
// functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/dispatch/invoke"
	"github.com/stratalog/strata/pkg/dispatch/params"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
)

func main() {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fatal := func(err error) {
		logger.Error("dispatch: cannot start", "error", err)
		os.Exit(1)
	}
	cfg, err := node.FromEnv(os.Getenv)
	if err != nil {
		fatal(err)
	}
	cfg.Backend, cfg.Logger = node.BackendAWS, logger
	n, err := node.Open(ctx, cfg, node.PartGroups)
	if err != nil {
		fatal(err)
	}
	awsCfg, _ := n.AWS()         // loaded once, by the node: the Lambda and SSM clients share it
	var attached dispatch.Source // subscriptions other apps attach, when the stack says where
	if path := cfg.Function.SubscriptionsPath; path != "" {
		if attached, err = params.New(params.Config{Client: ssm.NewFromConfig(awsCfg), Path: path}); err != nil {
			fatal(err)
		}
	}
	d, err := dispatch.New(dispatch.Config{
		Subscriptions: cfg.Function.Subscriptions,
		Source:        attached,
		Logger:        logger,
		Leases:        n.Meta(),
		Offsets:       n.Log(),
		Invoker:       invoke.Async{Client: awslambda.NewFromConfig(awsCfg)},
		Materializer:  lambdafn.LogMaterializer{Log: n.Log()},
	})
	if err != nil {
		fatal(err)
	}
	// Metrics are aggregated per environment (functions/api says when they are written).
	sink := emf.NewAggregated(os.Stdout, cfg.Function.MetricsNamespace, nil, emf.DefaultFlushInterval)
	h := lambdafn.NewDispatch(d, lambdafn.DecodeSequencerImage, sink)
	lambda.StartWithOptions(h.WithHealth(n.Coordinator()), lambda.WithEnableSIGTERM(sink.Flush))
}
