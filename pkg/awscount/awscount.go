// Package awscount counts the requests an aws-sdk-go-v2 client sends, by service and
// operation, with the bytes sent and received and the attempts that failed. The cost
// tool (pkg/cost) prices a workload from these counts, so they must count what AWS
// bills: every attempt, retries included, and failed conditional writes, which DynamoDB
// bills like successful ones. DynamoDB requests on one table are also tallied by table
// (Counter.Table), so that a measurement can tell the reads of one table apart.
package awscount

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Op is the tally of one "Service.Operation".
type Op struct {
	// Requests counts attempts sent, retries included.
	Requests int64
	// Failed counts attempts answered with an error (ConditionalFailed included).
	Failed int64
	// ConditionalFailed counts DynamoDB ConditionalCheckFailedException and
	// TransactionCanceledException answers (billed as writes all the same).
	ConditionalFailed int64
	// BytesSent is the sum of request bodies' Content-Length (unknown lengths count 0).
	BytesSent int64
	// BytesReceived is the sum of response bodies' Content-Length.
	BytesReceived int64
}

// Answered is the attempts the service answered with the operation's outcome: a success
// or a failed condition, not an error the SDK retries (a throttle, a reset connection).
// It counts the requests the code made whatever the transport did, where Requests
// counts what was sent.
func (o Op) Answered() int64 { return o.Requests - o.Failed + o.ConditionalFailed }

func (o *Op) add(p Op) {
	o.Requests += p.Requests
	o.Failed += p.Failed
	o.ConditionalFailed += p.ConditionalFailed
	o.BytesSent += p.BytesSent
	o.BytesReceived += p.BytesReceived
}

// Counter counts requests. Install it with cfg.APIOptions = append(cfg.APIOptions,
// c.Middleware). It is safe for concurrent use; the zero value is not usable, use New.
type Counter struct {
	mu     sync.Mutex
	ops    map[string]Op
	tables map[tableOp]Op
}

// tableOp is one operation on one table.
type tableOp struct{ op, table string }

// tableKey is the stack value under which the Initialize step leaves the table name.
type tableKey struct{}

// New returns an empty counter.
func New() *Counter { return &Counter{ops: map[string]Op{}, tables: map[tableOp]Op{}} }

// Middleware adds the counter to a client's stack after the retry middleware, so each
// attempt counts once; the request's table, when its input names one, is read before.
func (c *Counter) Middleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("strataRequestTable",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if t := tableOf(in.Parameters); t != "" {
				ctx = middleware.WithStackValue(ctx, tableKey{}, t)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("strataRequestCount",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			key := awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx)
			table, _ := middleware.GetStackValue(ctx, tableKey{}).(string)
			var d Op
			d.Requests = 1
			if req, ok := in.Request.(*smithyhttp.Request); ok && req.ContentLength > 0 {
				d.BytesSent = req.ContentLength
			}
			out, md, err := next.HandleFinalize(ctx, in)
			if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp.ContentLength > 0 {
				d.BytesReceived = resp.ContentLength
			}
			if err != nil {
				d.Failed = 1
				if conditionalFailure(err) {
					d.ConditionalFailed = 1
				}
			}
			c.mu.Lock()
			o := c.ops[key]
			o.add(d)
			c.ops[key] = o
			if table != "" {
				t := c.tables[tableOp{key, table}]
				t.add(d)
				c.tables[tableOp{key, table}] = t
			}
			c.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

func conditionalFailure(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "ConditionalCheckFailedException", "TransactionCanceledException":
		return true
	}
	return false
}

// Get returns the tally of "Service.Operation" (e.g. "DynamoDB.UpdateItem").
func (c *Counter) Get(op string) Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// Table returns the tally of op on one table (a request whose input names a single
// table, e.g. a DynamoDB GetItem; a transaction or batch is counted under op only).
func (c *Counter) Table(op, table string) Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tables[tableOp{op, table}]
}

// TablesOf returns the tallies of op by table, for the requests whose input names a
// single table.
func (c *Counter) TablesOf(op string) map[string]Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]Op{}
	for k, v := range c.tables {
		if k.op == op {
			out[k.table] = v
		}
	}
	return out
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = map[string]Op{}
	c.tables = map[tableOp]Op{}
}

// tableOf is the TableName of an operation's input (a pointer to a struct with a
// TableName *string field, as every single-table DynamoDB input has), else "".
func tableOf(params any) string {
	v := reflect.ValueOf(params)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("TableName")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() || f.Elem().Kind() != reflect.String {
		return ""
	}
	return f.Elem().String()
}

// Snapshot returns a copy of the tallies and their keys, sorted.
func (c *Counter) Snapshot() (map[string]Op, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Op, len(c.ops))
	keys := make([]string, 0, len(c.ops))
	for k, v := range c.ops {
		out[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return out, keys
}

// Requests returns the attempts counted for the given operations, summed.
func (c *Counter) Requests(ops ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, op := range ops {
		n += c.ops[op].Requests
	}
	return n
}

// Answered returns the answered attempts (Op.Answered) of the given operations, summed.
func (c *Counter) Answered(ops ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, op := range ops {
		n += c.ops[op].Answered()
	}
	return n
}

// DynamoDBWrites are the DynamoDB operations billed as writes.
var DynamoDBWrites = []string{"DynamoDB.PutItem", "DynamoDB.UpdateItem", "DynamoDB.DeleteItem",
	"DynamoDB.TransactWriteItems", "DynamoDB.BatchWriteItem"}
