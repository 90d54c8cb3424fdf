package lambdaconsumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/smithy-go"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// invokeFixture invokes h with dispatch's payload (testdata/consumer-event.json, group
// billing on orders/0) as aws-lambda-go decodes it in the function.
func invokeFixture(t *testing.T, h lambda.Handler) (lambdaconsumer.Result, error) {
	t.Helper()
	payload, err := os.ReadFile(filepath.Join("testdata", "consumer-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.Invoke(ctx, payload)
	var res lambdaconsumer.Result
	if err == nil {
		if uerr := json.Unmarshal(out, &res); uerr != nil {
			t.Fatal(uerr)
		}
	}
	return res, err
}

// TestLambdaConsumerHonoursGroupSettings is issue 17.4 for the Lambda consumer: with
// nothing in its Config, a poison record is tried the group's max attempts (2) and
// dead-lettered to the group's topic. Before, it was tried its own 5 times and dropped.
func TestLambdaConsumerHonoursGroupSettings(t *testing.T) {
	n := newNode(t, 1, time.Hour, 5)
	ctx := context.Background()
	if _, err := n.log.CreateTopic(ctx, "orders.dlq", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := n.coord.SetSettings(ctx, "billing", group.Settings{ResetPolicy: "earliest", MaxAttempts: 2, DeadLetterTopic: "orders.dlq"}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int64
	h := lambda.NewHandler(lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, IdleWait: 20 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Millisecond }},
		func(_ context.Context, r lambdaconsumer.Record) error {
			if r.Offset == 2 {
				attempts.Add(1)
				return errors.New("poison")
			}
			return nil
		}))
	res, err := invokeFixture(t, h)
	if err != nil {
		t.Fatal(err)
	}
	if attempts.Load() != 2 || res.DeadLetter != 1 || res.Dropped != 0 || res.Handled != 4 || res.Committed != 5 {
		t.Fatalf("%d attempts, result %+v; want 2 attempts, 1 dead-lettered, 4 handled, committed 5", attempts.Load(), res)
	}
	dl, err := n.log.Poll(ctx, "orders.dlq", 0, 0, log.PollOptions{})
	if err != nil || len(dl.Records) != 1 {
		t.Fatalf("dead-letter topic: %+v, %v", dl, err)
	}
}

// deniedLog answers appends to one topic as S3 answers a role without s3:PutObject
// there, wrapped as the log wraps store errors (a transient failure, to the log).
type deniedLog struct {
	consumer.Log
	topic   string
	appends atomic.Int64
}

func (d *deniedLog) Append(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions) ([]log.Result, error) {
	if topic != d.topic {
		return d.Log.Append(ctx, topic, recs, opt)
	}
	d.appends.Add(1)
	return nil, fmt.Errorf("%w: s3: put %q: %w", log.ErrUnavailable, "segments/"+topic+"/0/x",
		&smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"})
}

// TestLambdaConsumerDeadLetterDenied: a group whose dead-letter topic the function's
// role may not append to fails the invocation with ErrDeadLetterDenied naming the
// topic and the rights, at once (not retried as a transient failure), and commits
// nothing past the poison record.
func TestLambdaConsumerDeadLetterDenied(t *testing.T) {
	n := newNode(t, 1, time.Hour, 5)
	ctx := context.Background()
	if _, err := n.log.CreateTopic(ctx, "orders.dlq", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := n.coord.SetSettings(ctx, "billing", group.Settings{ResetPolicy: "earliest", MaxAttempts: 1, DeadLetterTopic: "orders.dlq"}); err != nil {
		t.Fatal(err)
	}
	denied := &deniedLog{Log: n.log, topic: "orders.dlq"}
	open := func(context.Context) (lambdaconsumer.Backend, error) {
		return lambdaconsumer.Backend{Log: denied, Groups: n.coord}, nil
	}
	h := lambda.NewHandler(lambdaconsumer.Handler(lambdaconsumer.Config{Open: open, Metrics: nopMetrics{}, IdleWait: 20 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Millisecond }},
		func(_ context.Context, r lambdaconsumer.Record) error {
			if r.Offset == 2 {
				return errors.New("poison")
			}
			return nil
		}))
	_, err := invokeFixture(t, h)
	if err == nil || !strings.Contains(err.Error(), "may not append to the dead-letter topic") || !strings.Contains(err.Error(), `"orders.dlq"`) ||
		!strings.Contains(err.Error(), "s3:PutObject") {
		t.Fatalf("invocation error %v; want one naming the dead-letter topic and the missing right", err)
	}
	if got := denied.appends.Load(); got != 1 {
		t.Errorf("%d dead-letter appends, want 1 (a refusal is not retried)", got)
	}
	if got := n.committed(t); got != 2 {
		t.Errorf("committed %d, want 2 (the poison record stays uncommitted)", got)
	}
}
