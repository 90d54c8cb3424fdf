// Command dispatch is the dispatch Lambda function: it reads the sequencer table's
// stream (materialising each commit's index entry and invoking the consumers it woke)
// and, on a schedule, sweeps every subscription for lagging partitions (pkg/dispatch).
// Configuration: functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/dispatch/params"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/runtime"
)

func main() {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fatal := func(err error) {
		logger.Error("dispatch: cannot start", "error", err)
		os.Exit(1)
	}
	subs, err := deploy.ParseSubscriptions(os.Getenv(deploy.EnvSubscriptions))
	if err != nil {
		fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{Backend: runtime.BackendAWS, AWS: runtime.AWSConfigFromEnv(), Logger: logger})
	if err != nil {
		fatal(err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fatal(err)
	}
	var attached dispatch.Source // subscriptions other apps attach, when the stack says where
	if path := os.Getenv(deploy.EnvSubscriptionsPath); path != "" {
		if attached, err = params.New(params.Config{Client: ssm.NewFromConfig(awsCfg), Path: path}); err != nil {
			fatal(err)
		}
	}
	d, err := dispatch.New(dispatch.Config{
		Subscriptions: subs,
		Source:        attached,
		Logger:        logger,
		Leases:        rt.Meta(),
		Offsets:       rt.Log(),
		Invoker:       asyncInvoker{client: awslambda.NewFromConfig(awsCfg)},
		Materializer:  lambdafn.LogMaterializer{Log: rt.Log()},
	})
	if err != nil {
		fatal(err)
	}
	lambda.Start(lambdafn.NewDispatch(d, lambdafn.DecodeSequencerImage, emf.New(os.Stdout, lambdafn.MetricsNamespace(), nil)))
}
