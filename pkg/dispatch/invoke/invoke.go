// Package invoke is dispatch's Invoker in AWS: an asynchronous Lambda invoke
// (InvocationType Event), which Lambda accepts at once and queues; the consumer's own
// retries and dispatch's sweep cover a lost invocation.
package invoke

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/stratalog/strata/pkg/deploy"
)

// API is the one Lambda call Async makes; *lambda.Client has it.
type API interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Async is a dispatch.Invoker over the Lambda API.
type Async struct {
	Client API
}

// Invoke implements dispatch.Invoker: the consumer event, queued for function.
func (a Async) Invoke(ctx context.Context, function string, ev deploy.ConsumerEvent) error {
	return Event(ctx, a.Client, function, ev)
}

// Event queues event, as JSON, for function: an asynchronous invoke that Lambda must
// accept (202) at once; anything else is an error naming the function.
func Event(ctx context.Context, client API, function string, event any) error {
	payload, err := json.Marshal(event)
	if err != nil {
		return err
	}
	out, err := client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", function, err)
	}
	if out.StatusCode != 202 {
		return fmt.Errorf("invoke %s: status %d, want 202 (accepted)", function, out.StatusCode)
	}
	return nil
}
