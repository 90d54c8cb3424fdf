// Command subscriber is a CDK app of its own — a user's, not Strata's — that attaches
// to a deployed Strata (the stack `npx aws-cdk deploy` creates from the repository root,
// whose exports are named "<stack>:<attribute>") and subscribes its own Go function,
// ./handler, to the topic "orders" in the group "billing", dead-lettering to
// "orders-dlq". infra/README.md, "Attach from your own app", walks through it.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/strata"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	if _, err := newStack(app, setting(app, "strata:deployment", "Strata"), setting(app, "subscriber:asset", "build")); err != nil {
		fmt.Fprintln(os.Stderr, "subscriber:", err)
		os.Exit(1)
	}
	app.Synth(nil)
}

// newStack is the subscriber's stack: its function, subscribed through the exports of
// the Strata stack named deployment; asset is the directory holding its bootstrap.
func newStack(app awscdk.App, deployment, asset string) (awscdk.Stack, error) {
	stack := awscdk.NewStack(app, jsii.String("Billing"), nil)
	log, err := strata.Attach(stack, "Strata", strata.ImportAttributes(deployment))
	if err != nil {
		return nil, err
	}
	fn := awslambda.NewFunction(stack, jsii.String("Billing"), &awslambda.FunctionProps{
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(asset), nil),
		Timeout:      awscdk.Duration_Minutes(jsii.Number(5)),
		// Dispatch invokes again while the partition lags; Lambda's retries would only
		// find the lease held.
		RetryAttempts: jsii.Number(0),
	})
	return stack, log.Subscribe(fn, "orders", "billing", &strata.SubscribeOptions{DeadLetterTopic: "orders-dlq"})
}

// setting is the app's context value of key, or def.
func setting(app awscdk.App, key, def string) string {
	if v := app.Node().TryGetContext(jsii.String(key)); v != nil && fmt.Sprint(v) != "" {
		return fmt.Sprint(v)
	}
	return def
}
