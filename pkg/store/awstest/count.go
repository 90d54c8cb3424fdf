package awstest

import (
	"context"
	"sort"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the requests an SDK client sends (every attempt, retries included), by
// service and operation. Add it to a config with cfg.APIOptions = append(cfg.APIOptions,
// c.Middleware). It is safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	n  map[string]int64 // "Service.Operation" → requests
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{n: map[string]int64{}} }

// Middleware installs the counter after the retry middleware, so each attempt counts.
func (c *Counter) Middleware(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("strataRequestCounter",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			key := awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx)
			c.mu.Lock()
			c.n[key]++
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// Get returns the requests counted for "Service.Operation" (e.g. "DynamoDB.UpdateItem").
func (c *Counter) Get(op string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// Sum returns the requests counted for the given operations.
func (c *Counter) Sum(ops ...string) int64 {
	var t int64
	for _, op := range ops {
		t += c.Get(op)
	}
	return t
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = map[string]int64{}
}

// Snapshot returns the counts, keyed "Service.Operation", and the keys sorted.
func (c *Counter) Snapshot() (map[string]int64, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.n))
	keys := make([]string, 0, len(c.n))
	for k, v := range c.n {
		out[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return out, keys
}

// DynamoDBWrites are the DynamoDB operations billed as writes.
var DynamoDBWrites = []string{"DynamoDB.PutItem", "DynamoDB.UpdateItem", "DynamoDB.DeleteItem",
	"DynamoDB.TransactWriteItems", "DynamoDB.BatchWriteItem"}
