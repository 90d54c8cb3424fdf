// Command api is the api Lambda function: the whole HTTP contract (docs/API.md) behind
// an API Gateway HTTP API (payload format 2.0), served by the handler `strata dev`
// serves, assembled by pkg/runtime. Configuration: functions/README.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/runtime"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// Without grants every caller is refused, unless the stack opted out explicitly.
	principals, err := lambdafn.PrincipalsFromEnv(os.Getenv)
	if err != nil {
		fatal(logger, err)
	}
	// On Lambda Managed Instances one environment runs many invocations at once; group
	// commit coalesces their appends into shared objects and commits.
	window, err := deploy.GroupCommitWindow(os.Getenv)
	if err != nil {
		fatal(logger, err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{
		Backend:           runtime.BackendAWS,
		AWS:               runtime.AWSConfigFromEnv(),
		Auth:              principals.Authorizer(),
		Sink:              emf.New(os.Stdout, lambdafn.MetricsNamespace(), nil),
		Logger:            logger,
		GroupCommitWindow: window,
	})
	if err != nil {
		fatal(logger, err)
	}
	lambda.Start(lambdafn.NewAPI(rt.Handler(), principals))
}

func fatal(logger *slog.Logger, err error) {
	logger.Error("api: cannot start", "error", err)
	os.Exit(1)
}
