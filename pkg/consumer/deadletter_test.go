package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// TestDeadLetterRedeliveryWithAnotherErrorIsARetry is issue 18.2: a poison record
// delivered again after it was dead-lettered (here after a reset; a crash between the
// dead-letter append and the commit, or a move, does the same) usually fails with
// another error text. The dead-letter append's body carried that text under the same
// Idempotency-Key, so the second append was refused as idempotency_key_reused and
// every later run failed at the record. The redelivery must be taken as a retry: the
// run succeeds, the record is in the dead-letter topic once, the partition moves on.
func TestDeadLetterRedeliveryWithAnotherErrorIsARetry(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 4)
		if _, err := f.log.CreateTopic(ctx, "orders.dlq", 1, 0); err != nil {
			t.Fatal(err)
		}
		var delivery atomic.Int64
		h := func(_ context.Context, r consumer.Record) error {
			if r.Offset == 2 {
				// Errors as handlers produce them: durations, hosts, request ids.
				return fmt.Errorf("payment service timed out after %dms (request %d)", 100+delivery.Add(1), delivery.Load())
			}
			return nil
		}
		for run := range 2 {
			c := f.consumer(t, "billing", fmt.Sprintf("m-%d", run), h, func(c *consumer.Config) {
				c.MaxAttempts, c.DeadLetterTopic = 1, "orders.dlq"
			})
			st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			if st.DeadLettered != 1 || f.committed(t, "billing") != 4 {
				t.Fatalf("run %d: stats %+v, committed %d", run, st, f.committed(t, "billing"))
			}
			if run == 0 {
				f.resetTo(t, "billing", 0) // the poison record is delivered again
			}
		}
		res, err := f.log.Poll(ctx, "orders.dlq", 0, 0, log.PollOptions{})
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("dead-letter topic: %d records, %v; want the record once", len(res.Records), err)
		}
	})
}

// TestDeadLetterKeysOfLongNamesAreDistinct is issue 18.3: the key was cut to 128
// characters, so with group and topic names of 60+ characters the cut removed the
// offset's digits and two poison records of a group shared one key; the second was
// refused (idempotency_key_reused) and stuck the partition. Both must be dead-lettered.
func TestDeadLetterKeysOfLongNamesAreDistinct(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		topic := "orders-" + strings.Repeat("t", 56)
		grp := "billing-" + strings.Repeat("g", 56)
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range []string{topic, "dlq"} {
			if _, err := l.CreateTopic(ctx, tp, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		p := int32(0)
		recs := make([]log.Record, 12)
		for i := range recs {
			recs[i] = log.Record{Value: fmt.Appendf(nil, "event-%d", i), Partition: &p}
		}
		if _, err := l.Append(ctx, topic, recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		h := func(_ context.Context, r consumer.Record) error {
			if r.Offset == 10 || r.Offset == 11 {
				return fmt.Errorf("poison %d", r.Offset)
			}
			return nil
		}
		c, err := consumer.New(l, group.New(s.Meta, l, nil), consumer.Config{Group: grp, Topic: topic, Member: "m-0", Handler: h,
			MaxAttempts: 1, DeadLetterTopic: "dlq", PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil || st.DeadLettered != 2 || st.Committed != 12 {
			t.Fatalf("stats %+v, %v; want 2 dead-lettered, committed 12", st, err)
		}
		res, err := l.Poll(ctx, "dlq", 0, 0, log.PollOptions{})
		if err != nil || len(res.Records) != 2 {
			t.Fatalf("dead-letter topic: %d records, %v", len(res.Records), err)
		}
	})
}

// TestDeadLetterKeyIsInjectiveWithinTheLimit: distinct (group, topic, partition,
// offset) give distinct keys, every one within wire.MaxIdempotencyKey, for names up to
// the longest valid ones.
func TestDeadLetterKeyIsInjectiveWithinTheLimit(t *testing.T) {
	name := rapid.StringMatching(`[a-zA-Z0-9._-]{1,255}`)
	type id struct {
		g, t string
		p    int32
		o    int64
	}
	rapid.Check(t, func(t *rapid.T) {
		a := id{name.Draw(t, "g"), name.Draw(t, "t"), rapid.Int32Min(0).Draw(t, "p"), rapid.Int64Min(0).Draw(t, "o")}
		b := a
		switch rapid.IntRange(0, 4).Draw(t, "vary") {
		case 0:
			b.g = name.Draw(t, "g2")
		case 1:
			b.t = name.Draw(t, "t2")
		case 2:
			b.p = rapid.Int32Min(0).Draw(t, "p2")
		case 3:
			b.o = rapid.Int64Min(0).Draw(t, "o2")
		case 4: // move a character from the group's end to the topic's start
			if len(a.g) > 1 {
				b.g, b.t = a.g[:len(a.g)-1], a.g[len(a.g)-1:]+a.t
			}
		}
		ka := consumer.DeadLetterKey(a.g, a.t, a.p, a.o)
		kb := consumer.DeadLetterKey(b.g, b.t, b.p, b.o)
		if len(ka) > wire.MaxIdempotencyKey || len(kb) > wire.MaxIdempotencyKey {
			t.Fatalf("keys %q, %q longer than %d", ka, kb, wire.MaxIdempotencyKey)
		}
		if (a == b) != (ka == kb) {
			t.Fatalf("%+v → %q, %+v → %q", a, ka, b, kb)
		}
	})
}
