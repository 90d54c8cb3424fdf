package log_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// overtake loses the answer of the next sequencer add once armed: before the add
// reaches DynamoDB (not applied) or after (applied), and in either case lets another
// append commit to the partition first, so that the lost commit is no longer the
// item's newest payload when the appender reads it.
type overtake struct {
	armed   atomic.Bool
	applied bool
	then    func()
}

func (o *overtake) middleware(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("overtake",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			if awsmiddleware.GetOperationName(ctx) != "UpdateItem" || !o.armed.CompareAndSwap(true, false) {
				return next.HandleDeserialize(ctx, in)
			}
			if o.applied {
				if _, _, err := next.HandleDeserialize(ctx, in); err != nil {
					return middleware.DeserializeOutput{}, middleware.Metadata{}, err
				}
			}
			o.then()
			return middleware.DeserializeOutput{}, middleware.Metadata{}, errors.New("injected: connection reset, answer lost")
		}), middleware.After)
}

// TestLostCommitAnswerOvertaken (issue 18 item 11): a plain append whose commit answer
// is lost while another append commits to the partition. The appender used to resolve a
// lost answer only when its block was still the sequencer item's newest payload, so
// under contention most lost answers failed the append (503; 8–11% of appends with 5%
// of AWS requests failed and 5% answered lost). Now an applied commit is found through
// the index once the materialiser wrote its entry, and a commit the index proves not
// applied is sent again: both appends succeed, each record once at its offset.
func TestLostCommitAnswerOvertaken(t *testing.T) {
	for _, applied := range []bool{true, false} {
		name := "not-applied"
		if applied {
			name = "applied"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			hook := &overtake{applied: applied}
			s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, hook.middleware) })
			l := newLog(t, s)
			backendtest.Materialise(t, s, l)
			mustTopic(t, l, "lost", 1)
			if _, err := l.Append(ctx, "lost", []log.Record{{Value: []byte("first")}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			other := newLog(t, s)
			var overtaker []log.Result
			var overErr error
			hook.then = func() {
				overtaker, overErr = other.Append(ctx, "lost", []log.Record{{Value: []byte("overtaker")}}, log.AppendOptions{})
			}
			hook.armed.Store(true)
			mine, err := l.Append(ctx, "lost", []log.Record{{Value: []byte("mine")}}, log.AppendOptions{})
			if hook.armed.Load() {
				t.Fatal("the hook never fired")
			}
			if overErr != nil {
				t.Fatalf("overtaking append: %v", overErr)
			}
			if err != nil {
				t.Fatalf("append whose commit answer was lost (applied %v) under an overtaking commit: %v", applied, err)
			}
			recs := readAll(t, l, "lost", 0)
			checkDense(t, recs)
			if len(recs) != 3 {
				t.Fatalf("%d records stored, want 3 (each once)", len(recs))
			}
			for _, r := range []struct {
				res  log.Result
				want string
			}{{mine[0], "mine"}, {overtaker[0], "overtaker"}} {
				if got := string(recs[r.res.Offset].Value); got != r.want {
					t.Fatalf("offset %d holds %q, acknowledged for %q", r.res.Offset, got, r.want)
				}
			}
		})
	}
}
