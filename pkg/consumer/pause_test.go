package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
)

// skews are the client clock offsets from the server's the pause scenarios run with.
var skews = []time.Duration{-time.Minute, 0, time.Minute}

// waitUntil polls cond until it holds, failing t after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPausedPastLeaseIsFenced is the pause scenario on a scripted clock: a consumer
// whose clock is skewed from the server's by −1, 0 or +1 minute handles records 0–4,
// then the whole process stops in the middle of record 5 (no renewals, no commits)
// until the server's clock is past its lease. Meanwhile either another member takes
// the partition over and finishes it, or an operator resets the group to the earliest
// offset while nobody holds the partition. When the process resumes, its run ends
// fenced; it commits nothing (the committed offset stays where the new owner or the
// reset put it) and starts no record after record 5.
func TestPausedPastLeaseIsFenced(t *testing.T) {
	for _, after := range []string{"takeover", "reset"} {
		for _, skew := range skews {
			t.Run(fmt.Sprintf("%s/skew%+v", after, skew), func(t *testing.T) {
				backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
					pausedPastLease(t, s, after, skew)
				})
			})
		}
	}
}

func pausedPastLease(t *testing.T, s backendtest.Stores, after string, skew time.Duration) {
	ctx := context.Background()
	f := newFixture(t, s, "orders", 20)
	grp := "billing-" + after
	server := clocktest.New(time.Now())
	coord := group.New(s.Meta, f.log, server.Now)
	gate := newPausable(coord)
	const ttl = 10 * time.Second
	var started seen
	paused, resume := make(chan struct{}), make(chan struct{})
	h := func(ctx context.Context, r consumer.Record) error {
		started.add(r.Offset)
		if r.Offset == 5 {
			close(paused)
			<-resume
		}
		return nil
	}
	zombie, err := consumer.New(f.log, gate, consumer.Config{Group: grp, Topic: "orders", Member: "zombie", Handler: h,
		PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: ttl,
		Clock: func() time.Time { return server.Now().Add(skew) }})
	if err != nil {
		t.Fatal(err)
	}
	done := runAsync(ctx, zombie)
	select {
	case <-paused:
	case <-time.After(10 * time.Second):
		t.Fatalf("with its clock %v off the server's the consumer started %v in 10 s, want 0–5", skew, started.get())
	}
	// Let the commits of 0–4 through (the commit interval runs on the scripted clock).
	waitUntil(t, "the commit of 0–4", func() bool {
		server.Advance(time.Millisecond)
		return f.committedOr(ctx, grp) >= 5
	})
	gate.set(true) // the process stops
	server.Advance(ttl + time.Second)

	want := int64(0)
	switch after {
	case "takeover":
		repl, err := consumer.New(f.log, coord, consumer.Config{Group: grp, Topic: "orders", Member: "replacement",
			Handler: func(context.Context, consumer.Record) error { return nil }, PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repl.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		want = 20
	case "reset":
		if _, err := coord.Reset(ctx, grp, "orders", group.ResetEarliest()); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.committedOr(ctx, grp); got != want {
		t.Fatalf("committed %d after the %s, want %d", got, after, want)
	}

	gate.set(false) // the process resumes
	close(resume)
	var res runResult
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed consumer's run did not end")
	}
	if !errors.Is(res.err, group.ErrFenced) || !res.st.Fenced {
		t.Fatalf("resumed run ended with %v (fenced %v), want ErrFenced", res.err, res.st.Fenced)
	}
	if got := f.committedOr(ctx, grp); got != want {
		t.Fatalf("committed %d after the resumed consumer ended, want %d: it committed after its pause", got, want)
	}
	if got := started.get(); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("the paused consumer started %v, want 0–5 and nothing after its pause", got)
	}
}

// TestLeaseDeadlineIsLocal: the consumer measures its lease on its own clock, from the
// moment it sent the acquire or renew, never against the server's expiry. With its
// clock −1, 0 or +1 minute off the server's it consumes normally; and when renewals
// fail it stops starting records (and ends the run) once LeaseTTL has passed on its
// own clock — not a minute early, nor a minute late.
func TestLeaseDeadlineIsLocal(t *testing.T) {
	for _, skew := range skews {
		t.Run(fmt.Sprintf("skew%+v", skew), func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, backendtest.Local(ctx, t), "orders", 20)
			server := clocktest.New(time.Now())
			coord := group.New(f.stores.Meta, f.log, server.Now)
			const ttl = 10 * time.Second
			var started seen
			release := make(chan struct{}, 20)
			h := func(ctx context.Context, r consumer.Record) error {
				started.add(r.Offset)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			c, err := consumer.New(f.log, failingRenew{coord}, consumer.Config{Group: "billing", Topic: "orders", Member: "m",
				Handler: h, PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: ttl,
				Clock: func() time.Time { return server.Now().Add(skew) }})
			if err != nil {
				t.Fatal(err)
			}
			done := runAsync(ctx, c)
			for i := range 3 {
				waitUntil(t, fmt.Sprintf("record %d to start (clock %v off)", i, skew), func() bool { return len(started.get()) > i })
				release <- struct{}{}
			}
			waitUntil(t, "record 3 to start", func() bool { return len(started.get()) == 4 })
			// Every renewal fails from now on; just short of the TTL the lease still holds.
			server.Advance(ttl - time.Second)
			release <- struct{}{} // record 3 completes
			waitUntil(t, "record 4 to start before the deadline", func() bool { return len(started.get()) == 5 })
			select {
			case res := <-done:
				t.Fatalf("run ended before its lease deadline: %v", res.err)
			case <-time.After(20 * time.Millisecond):
			}
			server.Advance(2 * time.Second) // past the local deadline
			release <- struct{}{}           // record 4 completes; nothing more may start
			var res runResult
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("with its clock %v off and renewals failing the run went on past its deadline (started %v)", skew, started.get())
			}
			if !errors.Is(res.err, group.ErrUnavailable) {
				t.Fatalf("run ended with %v, want the renewal's ErrUnavailable", res.err)
			}
			if got := started.get(); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
				t.Fatalf("started %v, want 0–4 and nothing after the deadline", got)
			}
		})
	}
}

// failingRenew fails every renewal as a store outage would.
type failingRenew struct{ consumer.Coordinator }

func (failingRenew) Renew(context.Context, string, string, int32, string, int64, time.Duration) (group.Lease, error) {
	return group.Lease{}, fmt.Errorf("renew: %w", group.ErrUnavailable)
}

// TestPollWaitMustFitTheLease: a poll wait longer than a third of the lease TTL is
// refused (the lease could lapse between renewals); by default the wait is cut to fit.
func TestPollWaitMustFitTheLease(t *testing.T) {
	f := newFixture(t, backendtest.Local(context.Background(), t), "orders", 0)
	h := func(context.Context, consumer.Record) error { return nil }
	for _, tc := range []struct {
		ttl, wait time.Duration
		ok        bool
	}{
		{300 * time.Millisecond, 100 * time.Millisecond, true},
		{300 * time.Millisecond, 101 * time.Millisecond, false},
		{3 * time.Second, 2 * time.Second, false},
		{300 * time.Millisecond, 0, true}, // default: min(1s, TTL/3)
		{0, 10 * time.Second, true},       // default TTL 30s
		{0, 11 * time.Second, false},
	} {
		_, err := consumer.New(f.log, f.coord, consumer.Config{Group: "g", Topic: "orders", Member: "m", Handler: h,
			LeaseTTL: tc.ttl, PollWait: tc.wait})
		if (err == nil) != tc.ok {
			t.Errorf("TTL %s, poll wait %s: err %v, want ok %v", tc.ttl, tc.wait, err, tc.ok)
		}
	}
}
