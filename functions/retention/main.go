// Command retention is the scheduled retention Lambda function: each scheduled event
// runs the retention pass `strata dev` runs on its timer (pkg/retention on a node opened
// through pkg/node, with no HTTP runtime) and the compaction pass of compacted topics
// (pkg/compact), then samples every group's lag into the
// store's lag history (the api serves it; no api host lives long enough to keep it). Configuration: functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
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
	n, err := node.Open(context.Background(), cfg, node.PartRetention|node.PartCompaction|node.PartGroups)
	if err != nil {
		fatal(err)
	}
	// A pass's metrics share one aggregated line, written as the pass ends.
	sink := emf.NewAggregated(os.Stdout, cfg.Function.MetricsNamespace, nil, emf.DefaultFlushInterval)
	lambda.Start(lambdafn.NewRetention(n.RunScheduledPass, sink))
}
