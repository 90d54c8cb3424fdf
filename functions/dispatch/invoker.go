package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/stratalog/strata/pkg/deploy"
)

// asyncInvoker is dispatch's Invoker in AWS: an asynchronous invoke (InvocationType
// Event), which Lambda accepts at once and queues; the consumer's own retries and the
// sweep cover a lost invocation.
type asyncInvoker struct {
	client *awslambda.Client
}

// Invoke implements dispatch.Invoker.
func (i asyncInvoker) Invoke(ctx context.Context, function string, ev deploy.ConsumerEvent) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	out, err := i.client.Invoke(ctx, &awslambda.InvokeInput{
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
