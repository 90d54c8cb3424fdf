package stackrun_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/wire"
)

const (
	// httpGroup's members consume exampleTopic over HTTP with GrantConsume's rights.
	httpGroup = "http-members"
	poisonKey = "customer-poison"
)

// httpMember signs with the credentials of a principal that assumed the stack's
// HttpConsumerRole: its IAM rights are that role's, GrantConsume's, and nothing more.
var httpMember = apigwtest.Principal{AccessKeyID: "AKIAHTTPMEMBER", SecretAccessKey: "http-member-secret",
	ARN: "arn:aws:iam::" + stackrun.Account + ":user/http-member"}

// consumerGrants are the api's grants: the operator's, and the HTTP member's on its
// group, the topic and the group's parking topic.
const consumerGrants = `[{"principal": "arn:aws:iam::` + stackrun.Account + `:user/operator", "name": "operator",
  "allow": [{"resource": "topic:*", "ops": ["create", "describe", "append", "read", "alter"]},
            {"resource": "group:*", "ops": ["consume", "describe", "reset"]}]},
 {"principal": "arn:aws:iam::` + stackrun.Account + `:user/http-member", "name": "http-member",
  "allow": [{"resource": "topic:` + exampleTopic + `", "ops": ["describe", "read"]},
            {"resource": "topic:` + httpGroup + `.parked", "ops": ["describe", "append", "read"]},
            {"resource": "group:` + httpGroup + `", "ops": ["consume", "describe"]}]}]`

// TestStackConsumerGrants: the rights the stack gives consumers are enough to park a
// key and replay it once released, on the synthesized stack.
//
//   - SubscriberParksAndReplays: the subscribed example consumer (on_failure park),
//     under the IAM-checking proxy with the role the stack gives it, parks the poison
//     key and, once released, reads it back from its parking topic for the replay: no
//     request of any function is denied.
//   - HTTPMemberWithGrantConsume: a pkg/httpconsumer group member signing as a principal
//     with exactly GrantConsume's rights (the stack's HttpConsumerRole) behind the SigV4
//     front joins (heartbeat), parks a poison key through the member-side parked routes
//     (and its parking topic), replays it once released, and leaves: the front refuses
//     none of its requests, and the api function's role allows what the member routes
//     do.
//
// One stack serves both (it takes minutes to start); the member runs last, as its
// stop cancels requests in flight.
func TestStackConsumerGrants(t *testing.T) {
	if testing.Short() {
		t.Skip("the synthesized stack takes minutes: not in -short")
	}
	st := stackrun.Start(t, stackrun.Options{
		Context: map[string]string{
			"strata:exampleTopic":     exampleTopic,
			"strata:exampleGroup":     exampleGroup,
			"strata:exampleHTTPGroup": httpGroup,
			"strata:apiGrants":        consumerGrants,
		},
		Callers: []stackrun.Caller{
			{Principal: operator, Statements: []stackrun.Statement{{Effect: "Allow",
				Actions: []string{"execute-api:Invoke"}, Resources: []string{"{api}/*"}}}},
			{Principal: httpMember, Role: "HttpConsumerRole"},
		},
		Instances: 1,
	})
	defer func() { t.Logf("stack run summary:\n%s", st.Summary()) }()
	ctx := context.Background()
	op := sdk(t, st.APIURL, signed(operator, nil))
	if _, err := op.CreateTopic(ctx, exampleTopic, client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{exampleGroup, httpGroup} {
		if _, err := op.SetGroupSettings(ctx, g, client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 1, OnFailure: "park"}); err != nil {
			t.Fatal(err)
		}
	}
	zero := int32(0)
	order := func(i int) client.Record {
		return client.Record{Key: fmt.Appendf(nil, "customer-%d", i), Value: fmt.Appendf(nil, `{"order_id":"o-%d","amount":1}`, i), Partition: &zero}
	}
	if _, err := op.Append(ctx, exampleTopic, []client.Record{order(1), {Key: []byte(poisonKey), Value: []byte("this is not an order"), Partition: &zero}},
		client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	parked := func(g string) int {
		ks, err := op.ParkedKeys(ctx, g)
		if err != nil {
			return -1
		}
		return len(ks)
	}
	committedAt := func(g string, want int64) func() bool {
		return func() bool {
			d, err := op.DescribeGroup(ctx, g)
			if err != nil || len(d.Partitions) != 1 {
				return false
			}
			c := d.Partitions[0].CommittedOffset
			return c != nil && *c >= want
		}
	}

	t.Run("SubscriberParksAndReplays", func(t *testing.T) {
		consumerFn := st.Function("Strata example order consumer (functions/consumer)")
		logs := func() string { return consumerFn.Logs() }
		waitUntil(t, 2*time.Minute, "the subscribed consumer parks the poison key and commits past it", logs,
			func() bool { return committedAt(exampleGroup, 2)() && parked(exampleGroup) == 1 })
		if _, err := op.ReleaseParkedKey(ctx, exampleGroup, exampleTopic, []byte(poisonKey)); err != nil {
			t.Fatal(err)
		}
		// A release is seen when a run starts: a new order makes dispatch invoke one. The
		// run that takes it may have started before the release (an invocation still
		// draining the partition), so another order follows every 10 s until a run replays.
		const replayedMsg = "replay of a released key failed" // the poison fails again: it reached the handler
		next, nudged := 2, time.Time{}
		waitUntil(t, 2*time.Minute, "the released key's replay reads the parking topic "+wire.ParkingTopic(exampleGroup), logs,
			func() bool {
				if strings.Contains(consumerFn.Logs(), replayedMsg) || len(st.Denials()) > 0 {
					return true
				}
				if time.Since(nudged) > 10*time.Second {
					if _, err := op.Append(ctx, exampleTopic, []client.Record{order(next)}, client.AppendOptions{}); err != nil {
						t.Fatal(err)
					}
					next, nudged = next+1, time.Now()
				}
				return false
			})
		for _, d := range stackrun.DistinctDenials(st.Denials()) {
			t.Errorf("IAM denied a function's request: %s", d)
		}
		if !strings.Contains(consumerFn.Logs(), replayedMsg) {
			t.Errorf("the replay never reached the handler; consumer log:\n%s", consumerFn.Logs())
		}
	})

	t.Run("HTTPMemberWithGrantConsume", func(t *testing.T) {
		var poisoned atomic.Bool
		poisoned.Store(true)
		var replayed atomic.Int32
		h := func(_ context.Context, r httpconsumer.Record) error {
			if string(r.Key) != poisonKey {
				return nil
			}
			if poisoned.Load() {
				return errors.New("not an order")
			}
			replayed.Add(1)
			return nil
		}
		logs := &lockedBuffer{}
		gc, err := httpconsumer.NewGroupConsumer(sdk(t, st.APIURL, signed(httpMember, nil)), httpGroup, exampleTopic, h,
			httpconsumer.WithMember("m-1"), httpconsumer.WithOrderedKeys(), httpconsumer.WithLeaseTTL(3*time.Second),
			httpconsumer.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
			httpconsumer.WithConsumerConfig(func(cfg *consumer.Config) {
				cfg.CommitInterval, cfg.PollWait = 50*time.Millisecond, 200*time.Millisecond
				cfg.Backoff = func(int) time.Duration { return time.Millisecond }
			}))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- gc.Run(runCtx) }()
		defer func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("member: Run = %v", err)
			}
			if n := st.Front.Stats().Refused; n != 0 {
				t.Errorf("the front refused %d requests (403: GrantConsume lacks a route the member calls); member log:\n%s", n, logs.String())
			}
			for _, d := range stackrun.DistinctDenials(st.Denials()) {
				t.Errorf("IAM denied a function's request: %s", d)
			}
		}()
		detail := func() string {
			return fmt.Sprintf("front refused %d requests, denials %v; member log:\n%s", st.Front.Stats().Refused, stackrun.DistinctDenials(st.Denials()), logs.String())
		}
		wait := func(cond func() bool, what string) { t.Helper(); waitUntil(t, time.Minute, what, detail, cond) }
		wait(func() bool { return committedAt(httpGroup, 2)() && parked(httpGroup) == 1 }, "the member parks the poison key and commits past it")
		poisoned.Store(false)
		if _, err := op.ReleaseParkedKey(ctx, httpGroup, exampleTopic, []byte(poisonKey)); err != nil {
			t.Fatal(err)
		}
		wait(func() bool { return replayed.Load() == 1 && parked(httpGroup) == 0 }, "the released key replayed from the parking topic and unparked")
	})
}

// waitUntil waits for cond, failing t with what and detail() when it does not hold
// within timeout (a bound on a hung run, not a measure of anything).
func waitUntil(t *testing.T, timeout time.Duration, what string, detail func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; %s", what, detail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockedBuffer is a log sink several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
