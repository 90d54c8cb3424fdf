package lambdafn

import (
	"context"
	"fmt"

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
	if err := invoke.Event(ctx, r.Client, r.Function, RetentionTopicEvent{Topic: topic}); err != nil {
		return fmt.Errorf("pass of topic %s: %w", topic, err)
	}
	return nil
}
