// Command retention is the scheduled retention Lambda function: each scheduled event
// fans the retention pass `strata dev` runs on its timer out per topic — one
// asynchronous invocation of this function per live topic (lambdafn.RetentionTopicEvent),
// each passing that topic (pkg/retention on a node opened through pkg/node, with no HTTP
// runtime), so a pass takes its largest topic's time, not the sum — then purges deleted
// topics and samples every group's lag into the store's lag history (the api serves it;
// no api host lives long enough to keep it). It does not compact: the compaction
// function does (functions/compact). Configuration: functions/README.md.
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
	"github.com/stratalog/strata/pkg/retention"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fatal := func(err error) {
		logger.Error("retention: cannot start", "error", err)
		os.Exit(1)
	}
	cfg, err := node.FromEnv(os.Getenv)
	if err != nil {
		fatal(err)
	}
	cfg.Backend, cfg.Logger = node.BackendAWS, logger
	n, err := node.Open(context.Background(), cfg, node.PartRetention|node.PartGroups)
	if err != nil {
		fatal(err)
	}
	// A pass's metrics share one aggregated line, written as the pass ends.
	sink := emf.NewAggregated(os.Stdout, cfg.Function.MetricsNamespace, nil, emf.DefaultFlushInterval)
	awsCfg, _ := n.AWS() // loaded once, by the node: the Lambda client shares it
	fanout := lambdafn.RetentionInvoker{Client: awslambda.NewFromConfig(awsCfg), Function: os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}
	scheduled := func(ctx context.Context) (retention.Stats, error) { return n.RunScheduledFanout(ctx, fanout.Start) }
	if !cfg.Function.RetentionFanout || fanout.Function == "" {
		scheduled = n.RunScheduledPass // not asked to fan out, or not in Lambda: the whole pass here
	}
	lambda.Start(lambdafn.NewRetention(scheduled, sink).WithTopicPass(n.RunRetentionTopic))
}
