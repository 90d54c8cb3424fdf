// Command api is the api Lambda function: the whole HTTP contract (docs/API.md) behind
// an API Gateway HTTP API (payload format 2.0), served by the handler `strata dev`
// serves, on a node opened through pkg/node. With STRATA_COMPACT_FUNCTION its appends
// to compacted topics run the dirty-ratio trigger, which invokes the compaction
// function asynchronously for a partition found dirty. Configuration:
// functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// On Lambda Managed Instances one environment runs many invocations at once; the
	// node's group commit (on there by default) coalesces their appends.
	cfg, err := node.FromEnv(os.Getenv)
	if err != nil {
		fatal(logger, err)
	}
	cfg.Backend = node.BackendAWS
	// Without grants every caller is refused, unless the stack opted out explicitly.
	principals, err := lambdafn.APIPrincipals(cfg.Function)
	if err != nil {
		fatal(logger, err)
	}
	sink := emf.NewAggregated(os.Stdout, cfg.Function.MetricsNamespace, nil, emf.DefaultFlushInterval)
	// The trigger's invoker gets its client from the node's SDK configuration, loaded
	// as the node opens; no append runs before then.
	compactor := &lambdafn.CompactInvoker{Function: cfg.Function.CompactFunction}
	if compactor.Function != "" {
		cfg.CompactStart = func(ctx context.Context, topic string, p int32) error {
			return compactor.Start(ctx, topic, p, lambdafn.CompactTriggerDirty)
		}
	}
	rt, err := runtime.New(context.Background(), runtime.Config{
		Node:   cfg,
		Auth:   principals.Authorizer(),
		Sink:   sink,
		Logger: logger,
	})
	if err != nil {
		fatal(logger, err)
	}
	if awsCfg, ok := rt.Node().AWS(); ok {
		compactor.Client = awslambda.NewFromConfig(awsCfg)
	}
	// Metrics are aggregated per environment and written every interval, at the end of
	// the invocation that finds it passed, and at shutdown (SIGTERM, which Lambda sends
	// a Go runtime once it registers an extension; WithEnableSIGTERM registers one).
	lambda.StartWithOptions(lambdafn.NewAPI(rt.Handler(), principals).WithMetrics(sink),
		lambda.WithEnableSIGTERM(sink.Flush))
}

func fatal(logger *slog.Logger, err error) {
	logger.Error("api: cannot start", "error", err)
	os.Exit(1)
}
