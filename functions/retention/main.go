// Command retention is the scheduled retention Lambda function: each scheduled event
// runs the retention pass `strata dev` runs on its timer (pkg/retention through
// pkg/runtime). Configuration: functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/runtime"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	rt, err := runtime.New(context.Background(), runtime.Config{
		Backend: runtime.BackendAWS,
		AWS:     runtime.AWSConfigFromEnv(),
		Logger:  logger,
	})
	if err != nil {
		logger.Error("retention: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(lambdafn.NewRetention(rt.RunRetention, emf.New(os.Stdout, lambdafn.MetricsNamespace(), nil)))
}
