// Command compact is the compaction Lambda function, the one place that compacts
// compacted topics on AWS (`strata dev` runs the same pass, pkg/compact, after each
// retention pass). Each scheduled event fans the pass out per partition — one
// asynchronous invocation of this function per partition of each compacted topic
// (lambdafn.CompactPartitionEvent), each that partition's bounded pass — and collects
// each compacted topic's replaced objects once no reader can hold them. An append that
// finds a partition's dirty ratio past the threshold invokes it with that partition's
// event too (compact.Trigger). Configuration: functions/README.md.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fatal := func(err error) {
		logger.Error("compact: cannot start", "error", err)
		os.Exit(1)
	}
	cfg, err := node.FromEnv(os.Getenv)
	if err != nil {
		fatal(err)
	}
	cfg.Backend, cfg.Logger = node.BackendAWS, logger
	n, err := node.Open(context.Background(), cfg, node.PartCompaction)
	if err != nil {
		fatal(err)
	}
	sink := emf.NewAggregated(os.Stdout, cfg.Function.MetricsNamespace, nil, emf.DefaultFlushInterval)
	awsCfg, _ := n.AWS() // loaded once, by the node: the Lambda client shares it
	fanout := lambdafn.CompactInvoker{Client: awslambda.NewFromConfig(awsCfg), Function: os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}
	scheduled := func(ctx context.Context) (compact.Stats, error) {
		return n.RunCompactionFanout(ctx, func(ctx context.Context, topic string, p int32) error {
			return fanout.Start(ctx, topic, p, lambdafn.CompactTriggerFanout)
		})
	}
	if !cfg.Function.CompactFanout || fanout.Function == "" {
		// Not asked to fan out, or not in Lambda: every partition's pass here, one after
		// another, feeding the dirty counters as the fanned-out passes do.
		scheduled = func(ctx context.Context) (compact.Stats, error) {
			var all compact.Stats
			st, err := n.RunCompactionFanout(ctx, func(ctx context.Context, topic string, p int32) error {
				ps, err := n.RunCompactionPartition(ctx, topic, p)
				all = all.Add(ps)
				if errors.Is(err, node.ErrNotCompacted) {
					return nil
				}
				return err
			})
			return all.Add(st), err
		}
	}
	partition := func(ctx context.Context, topic string, p int32) (compact.Stats, error) {
		st, err := n.RunCompactionPartition(ctx, topic, p)
		if errors.Is(err, node.ErrNotCompacted) {
			// Deleted or altered since the event was sent: nothing to do, and no
			// retry of the asynchronous invocation would find more.
			logger.Info("compact: partition skipped", "topic", topic, "partition", p, "reason", err.Error())
			return st, nil
		}
		return st, err
	}
	lambda.Start(lambdafn.NewCompaction(scheduled, partition, sink))
}
