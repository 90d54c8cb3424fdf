package lambdafn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/stratalog/strata/pkg/dispatch/invoke"
)

// RetentionInvoker starts one topic's retention pass as an asynchronous invocation
// (InvocationType Event) of the retention function with a RetentionTopicEvent: how the
// scheduled pass fans out per topic. Lambda queues it and retries a failed one; the next
// schedule passes the topic again whatever became of it.
type RetentionInvoker struct {
	Client   invoke.API
	Function string // the retention function's own name (AWS_LAMBDA_FUNCTION_NAME)
}

// Start queues topic's pass.
func (r RetentionInvoker) Start(ctx context.Context, topic string) error {
	payload, err := json.Marshal(RetentionTopicEvent{Topic: topic})
	if err != nil {
		return err
	}
	out, err := r.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(r.Function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("invoke %s for topic %s: %w", r.Function, topic, err)
	}
	if out.StatusCode != 202 {
		return fmt.Errorf("invoke %s for topic %s: status %d, want 202 (accepted)", r.Function, topic, out.StatusCode)
	}
	return nil
}
