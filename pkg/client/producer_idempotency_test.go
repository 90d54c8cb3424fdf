package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

// producerID is the producer id part of a producer request's key.
func producerID(key string) string {
	id, _, _ := strings.Cut(key, ".")
	return id
}

// elapsedMs reads a call's Strata-Retry-Elapsed-Ms, failing the test unless it is one
// the contract accepts.
func elapsedMs(t *testing.T, c appendCall) time.Duration {
	t.Helper()
	d, present, err := wire.ParseRetryElapsed([]string{c.Elapsed})
	if err != nil || !present {
		t.Fatalf("call %s: Strata-Retry-Elapsed-Ms %q: %v", c.Key, c.Elapsed, err)
	}
	return d
}

// TestProducerIdempotencyHeadersPerAttempt (issue 20): every attempt of a Producer's
// request says Strata-Idempotency: producer and its Strata-Attempt (0, 1, 2… in order);
// the first attempt sends no Strata-Retry-Elapsed-Ms and each retry a larger one; the
// key <producer id>.<sequence> is the same across a request's retries, differs between
// requests of one Producer (same id, another sequence) and between Producers (another
// id). In binary and, against a server without the format, in JSON.
func TestProducerIdempotencyHeadersPerAttempt(t *testing.T) {
	for _, mode := range []blocksMode{blocksOn, blocks415} {
		t.Run(fmt.Sprint("blocks mode ", mode), func(t *testing.T) {
			f := newFake(t, 1)
			f.blocks = mode
			// The first request (after a 415 in blocks415 mode) meets a 503, a dropped
			// answer (appended) and a 429, then goes through.
			faults := []fault{fault503, faultDrop, fault429}
			injected := 0 // the fake calls inject under its lock, for appends it parsed
			f.inject = func(int, appendCall) fault {
				injected++
				if injected <= len(faults) {
					return faults[injected-1]
				}
				return faultNone
			}
			c, err := client.New(f.URL)
			if err != nil {
				t.Fatal(err)
			}
			cfg := client.ProducerConfig{Partitions: 1, Backoff: 5 * time.Millisecond, MaxBackoff: 5 * time.Millisecond}
			ctx := context.Background()
			var all []sent
			send := func(p *client.Producer, v string) {
				t.Helper()
				rec := client.Record{Value: []byte(v)}
				fut, err := p.Send(ctx, rec)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				all = append(all, sent{rec: rec, fut: fut})
			}
			p1, err := client.NewProducer(ctx, c, "orders", cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p1.Close(ctx)
			send(p1, "a")
			send(p1, "b")
			p2, err := client.NewProducer(ctx, c, "orders", cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p2.Close(ctx)
			send(p2, "c")
			checkDelivery(t, f, all)

			calls, _, _, _ := f.snapshot()
			if mode == blocks415 {
				if len(calls) == 0 || !calls[0].Refused || calls[0].Attempt != "0" || calls[0].Idempotency != wire.IdempotencyProducer {
					t.Fatalf("the refused binary attempt:\n%s", callsSummary(calls))
				}
				refused := calls[0].Key
				calls = calls[1:]
				for _, c := range calls {
					if c.Key == refused {
						t.Fatalf("the JSON request reuses the refused binary request's key %s:\n%s", refused, callsSummary(calls))
					}
				}
			}
			if len(calls) != 6 {
				t.Fatalf("%d calls, want 4 of the first request and 1 each of two more:\n%s", len(calls), callsSummary(calls))
			}
			var last time.Duration
			for i, c := range calls {
				if c.Idempotency != wire.IdempotencyProducer {
					t.Fatalf("call %d: Strata-Idempotency %q, want %q", i, c.Idempotency, wire.IdempotencyProducer)
				}
				want := "0"
				if i < 4 {
					want = strconv.Itoa(i)
				}
				if c.Attempt != want {
					t.Fatalf("call %d: Strata-Attempt %q, want %s:\n%s", i, c.Attempt, want, callsSummary(calls))
				}
				switch {
				case want == "0" && c.Elapsed != "":
					t.Fatalf("call %d, a first attempt, sends Strata-Retry-Elapsed-Ms %q", i, c.Elapsed)
				case want != "0":
					d := elapsedMs(t, c)
					if d <= last {
						t.Fatalf("call %d: retry elapsed %v, not above the previous attempt's %v:\n%s", i, d, last, callsSummary(calls))
					}
					last = d
				}
			}
			for i := 1; i < 4; i++ {
				if calls[i].Key != calls[0].Key {
					t.Fatalf("retry %d has key %s, the first attempt %s", i, calls[i].Key, calls[0].Key)
				}
			}
			// Every attempt of a request carries, as its batch floor, the newest mark
			// answered before its first attempt was sent ("0" before any), however many
			// answers came between its attempts.
			every, _, _, _ := f.snapshot()
			floorBefore := func(i int) string {
				for j := i - 1; j >= 0; j-- {
					if every[j].Fault != faultDrop {
						return every[j].Mark
					}
				}
				return "0"
			}
			firstOf := map[string]int{}
			for i, c := range every {
				if c.Refused {
					continue // a binary attempt refused whole: its request is sent again under another key
				}
				if _, ok := firstOf[c.Key]; !ok {
					firstOf[c.Key] = i
				}
				if want := floorBefore(firstOf[c.Key]); c.Floor != want {
					t.Fatalf("call %d (attempt %s): Strata-Batch-Floor %q, want %q, the mark before its request's first attempt:\n%s",
						i, c.Attempt, c.Floor, want, callsSummary(every))
				}
			}
			k1, k2, k3 := calls[0].Key, calls[4].Key, calls[5].Key
			if k1 == k2 || producerID(k1) != producerID(k2) {
				t.Fatalf("two requests of one producer have keys %s and %s, want one producer id and two sequences", k1, k2)
			}
			if producerID(k3) == producerID(k1) {
				t.Fatalf("two producers share the producer id of %s and %s", k1, k3)
			}
		})
	}
}

// TestProducerDeliveryTimeoutStopsRetries (issue 20): a request the server keeps
// refusing 503 is retried only while the time since its first attempt plus the backoff
// stays within DeliveryTimeout, far fewer times than MaxRetries allows; its records then
// fail with ErrDeliveryTimeout wrapping the last error, and no retry says an elapsed time
// beyond the timeout.
func TestProducerDeliveryTimeoutStopsRetries(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(int, appendCall) fault { return fault503 }
	const timeout = time.Second
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, MaxRetries: wire.MaxFencedAttempt, Backoff: 200 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, DeliveryTimeout: timeout})
	_, err := p.SendSync(context.Background(), client.Record{Value: []byte("a")})
	if !errors.Is(err, client.ErrDeliveryTimeout) || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrDeliveryTimeout wrapping the last 503", err)
	}
	calls, logs, _, _ := f.snapshot()
	// Backoff with jitter waits at least 100 ms: at most timeout/100ms retries fit, fewer
	// than MaxRetries.
	if most := int(timeout/(100*time.Millisecond)) + 1; len(calls) < 2 || len(calls) > most {
		t.Fatalf("%d calls, want a retry or more and at most %d (MaxRetries %d not reached):\n%s", len(calls), most, wire.MaxFencedAttempt, callsSummary(calls))
	}
	for _, c := range calls[1:] {
		if d := elapsedMs(t, c); d > timeout {
			t.Fatalf("a retry sent %v after the first attempt, past the delivery timeout %v", d, timeout)
		}
	}
	if len(logs[0]) != 0 {
		t.Fatalf("the fake appended %d records", len(logs[0]))
	}
	if s := p.Stats(); s.RecordsFailed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestNewProducerValidatesDeliveryTimeout: a negative DeliveryTimeout, or one not below
// wire.MaxRetryElapsed (the longest a server searches for earlier attempts), is refused;
// 0 takes the default and a timeout just below the bound is taken. MaxRetries above
// wire.MaxAttempt (the largest Strata-Attempt a server takes) is refused too.
func TestNewProducerValidatesDeliveryTimeout(t *testing.T) {
	f := newFake(t, 1)
	c, err := client.New(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{
		{0, true}, {time.Millisecond, true}, {wire.MaxRetryElapsed - time.Millisecond, true},
		{wire.MaxRetryElapsed, false}, {time.Hour, false}, {-time.Second, false},
	} {
		p, err := client.NewProducer(context.Background(), c, "orders", client.ProducerConfig{Partitions: 1, DeliveryTimeout: tc.d})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, client.ErrInvalid)) {
			t.Errorf("DeliveryTimeout %v: %v, want ok %v", tc.d, err, tc.ok)
		}
		if p != nil {
			_ = p.Close(context.Background())
		}
	}
	for _, tc := range []struct {
		n  int
		ok bool
	}{{wire.MaxFencedAttempt, true}, {wire.MaxFencedAttempt + 1, false}, {wire.MaxAttempt, false}, {-1, true}} {
		p, err := client.NewProducer(context.Background(), c, "orders", client.ProducerConfig{Partitions: 1, MaxRetries: tc.n})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, client.ErrInvalid)) {
			t.Errorf("MaxRetries %d: %v, want ok %v (a server fences attempts up to wire.MaxFencedAttempt)", tc.n, err, tc.ok)
		}
		if p != nil {
			_ = p.Close(context.Background())
		}
	}
	if client.DefaultDeliveryTimeout >= wire.MaxRetryElapsed {
		t.Errorf("DefaultDeliveryTimeout %v is not below wire.MaxRetryElapsed %v", client.DefaultDeliveryTimeout, wire.MaxRetryElapsed)
	}
}

// TestProducerRetriesSuperseded (issue 20): a 409 superseded (another delivery of the
// attempt fenced it, nothing of this answer acknowledged) is retried with the next
// attempt under the same key, and the record is delivered once.
func TestProducerRetriesSuperseded(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(n int, _ appendCall) fault {
		if n < 2 {
			return faultSuperseded
		}
		return faultNone
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Backoff: time.Millisecond})
	rec := client.Record{Value: []byte("a")}
	fut, err := p.Send(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	checkDelivery(t, f, []sent{{rec: rec, fut: fut}})
	calls, _, _, _ := f.snapshot()
	if len(calls) != 3 || calls[1].Key != calls[0].Key || calls[2].Key != calls[0].Key ||
		calls[0].Attempt != "0" || calls[1].Attempt != "1" || calls[2].Attempt != "2" {
		t.Fatalf("want three attempts of one key after two 409 superseded:\n%s", callsSummary(calls))
	}
}

// TestProducerRetryUndecidedNotRetried: a retry answered 409 retry_undecided (the
// server cannot tell whether the request's first attempt, its answer lost, was appended)
// is not retried again: the record fails with ErrRetryUndecided after the two attempts.
func TestProducerRetryUndecidedNotRetried(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(n int, _ appendCall) fault {
		return [...]fault{faultDrop, faultUndecided}[min(n, 1)]
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Backoff: time.Millisecond})
	fut, err := p.Send(context.Background(), client.Record{Value: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fut.Wait(context.Background()); !errors.Is(err, client.ErrRetryUndecided) {
		t.Fatalf("the record: %v, want ErrRetryUndecided", err)
	}
	if calls, _, _, _ := f.snapshot(); len(calls) != 2 || calls[1].Attempt != "1" || calls[1].Floor != calls[0].Floor {
		t.Fatalf("want the first attempt and one retry with its floor:\n%s", callsSummary(calls))
	}
}

// TestClientAppendKeepsClaimedKeys (issue 20): Client.Append, whose caller picks the
// key and may repeat it, sends its Idempotency-Key alone (the server claims it): no
// Strata-Idempotency, no Strata-Attempt, no Strata-Retry-Elapsed-Ms; and a 409
// superseded is not a sentinel it retries on.
func TestClientAppendKeepsClaimedKeys(t *testing.T) {
	f := newFake(t, 1)
	c, err := client.New(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []string{"order-7", ""} {
		if _, err := c.Append(ctx, "orders", []client.Record{{Value: []byte("a")}}, client.AppendOptions{IdempotencyKey: key}); err != nil {
			t.Fatal(err)
		}
	}
	calls, _, _, _ := f.snapshot()
	if len(calls) != 2 || calls[0].Key != "order-7" || calls[1].Key != "" {
		t.Fatalf("calls:\n%s", callsSummary(calls))
	}
	for i, c := range calls {
		if c.Idempotency != "" || c.Attempt != "" || c.Elapsed != "" {
			t.Fatalf("Append call %d sends Strata-Idempotency %q, Strata-Attempt %q, Strata-Retry-Elapsed-Ms %q; want none",
				i, c.Idempotency, c.Attempt, c.Elapsed)
		}
	}
	f.inject = func(int, appendCall) fault { return faultSuperseded }
	_, err = c.Append(ctx, "orders", []client.Record{{Value: []byte("b")}}, client.AppendOptions{IdempotencyKey: "order-8"})
	if !errors.Is(err, client.ErrSuperseded) || client.IsRetryable(err) {
		t.Fatalf("a 409 superseded to Append: %v (retryable %v), want ErrSuperseded, not retryable as is", err, client.IsRetryable(err))
	}
}

// TestProducerAttemptNotResentByTransport (issue 20): when the answer to a first attempt
// is lost on a kept-alive connection (the fake appended it, then closed the connection),
// the next delivery of the request is the Producer's retry, attempt 1 with its elapsed
// time, never the transport resending attempt 0 by itself (Go's transport resends a
// POST with an Idempotency-Key on a reused connection): a second first attempt is
// fenced by nothing and would append the records twice on a server keeping no claim.
func TestProducerAttemptNotResentByTransport(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(n int, _ appendCall) fault {
		if n == 1 {
			return faultDrop
		}
		return faultNone
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Backoff: time.Millisecond})
	ctx := context.Background()
	var all []sent
	for _, v := range []string{"warms the connection", "answer lost"} {
		rec := client.Record{Value: []byte(v)}
		fut, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, fut: fut})
	}
	checkDelivery(t, f, all)
	calls, _, _, _ := f.snapshot()
	if len(calls) != 3 || calls[1].Key != calls[2].Key || calls[1].Attempt != "0" || calls[2].Attempt != "1" || calls[2].Elapsed == "" {
		t.Fatalf("want the lost answer's request delivered as attempt 0, then attempt 1 with its elapsed time:\n%s", callsSummary(calls))
	}
}
