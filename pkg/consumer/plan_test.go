package consumer

import (
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
)

// TestDecide is the run loop's step as tables of scenarios: what the loop does next
// from what it knows, with no store and no goroutine.
func TestDecide(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	lim := limits{TTL: 30 * time.Second, CommitInterval: time.Second, PollWait: time.Second,
		MaxInFlight: 2000, MaxInFlightBytes: 1 << 20, RetryAfter: 100 * time.Millisecond, IdlePoll: 5 * time.Millisecond}
	// base: caught up to nothing yet, just renewed and committed, nothing in flight.
	base := observed{Now: t0, LastRenew: t0, LastCommit: t0, Committed: 10, Next: 10, Fetch: 10, HighWatermark: -1}
	cases := []decideCase{
		{"idle: long-poll", nil, plan{Poll: true, PollWait: time.Second}},
		{"work in flight, more in the log: poll at once", func(o *observed) {
			o.Fetch, o.HighWatermark, o.InFlight = 20, 100, 10
		}, plan{Poll: true}},
		{"renew due at TTL/3", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.LastCommit = o.Now
		}, plan{Renew: true, Poll: true, PollWait: time.Second}},
		{"lease lapsed: renew at once", func(o *observed) {
			o.Now, o.LeaseLapsed = t0.Add(time.Second), true
			o.LastCommit = o.Now
		}, plan{Renew: true, Poll: true, PollWait: time.Second}},
		{"renew failed: wait for the retry", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.RenewRetryAt = o.Now.Add(50 * time.Millisecond)
			o.LastCommit = o.Now
			o.Fetch, o.HighWatermark, o.InFlight = 12000, 12000, 2000 // window full
		}, plan{Sleep: 50 * time.Millisecond}},
		{"commit due", func(o *observed) {
			o.Now, o.Next, o.Fetch, o.HighWatermark = t0.Add(time.Second), 15, 15, 15
		}, plan{Commit: true, Poll: true, PollWait: time.Second}},
		{"straggler: completions above it are due for a commit though Next stays", func(o *observed) {
			o.Now, o.Fetch, o.HighWatermark, o.InFlight, o.Unsaved = t0.Add(time.Second), 15, 15, 1, true
			o.LastPoll = o.Now
		}, plan{Commit: true, Sleep: 5 * time.Millisecond}},
		{"straggler, nothing completed since the last commit: no commit", func(o *observed) {
			o.Now, o.Fetch, o.HighWatermark, o.InFlight = t0.Add(time.Second), 15, 15, 1
			o.LastPoll, o.LastCommit = o.Now, o.Now
		}, plan{Sleep: 5 * time.Millisecond}},
		{"commit not yet due", func(o *observed) {
			o.Now, o.Next, o.Fetch, o.HighWatermark, o.InFlight = t0.Add(300*time.Millisecond), 15, 15+2000, 10000, 2000
		}, plan{Sleep: 700 * time.Millisecond}},
		// Issue 18.1: one answer of 10,000 records (a whole commit) is far over the
		// window; the loop keeps renewing and committing and waits for completions,
		// never for room in a worker's queue.
		{"whole commit over the window: renew and commit, no poll", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.Next, o.Fetch, o.HighWatermark, o.InFlight = 4000, 10010, 10010, 6010
		}, plan{Renew: true, Commit: true, Sleep: time.Second}},
		{"bytes over the window: no poll", func(o *observed) {
			o.Fetch, o.HighWatermark, o.InFlight, o.HeldBytes = 20, 100, 10, 1<<20
		}, plan{Sleep: time.Second}}, // the next commit is due then
		{"caught up while work drains: poll again after IdlePoll", func(o *observed) {
			o.Fetch, o.HighWatermark, o.InFlight, o.LastPoll = 20, 20, 10, t0.Add(-2*time.Millisecond)
		}, plan{Sleep: 3 * time.Millisecond}},
		{"caught up while work drains, IdlePoll passed: poll without a wait", func(o *observed) {
			o.Fetch, o.HighWatermark, o.InFlight, o.LastPoll = 20, 20, 10, t0.Add(-5*time.Millisecond)
		}, plan{Poll: true}},
		{"empty answer at an unreadable commit while work drains: poll again after IdlePoll", func(o *observed) {
			o.Fetch, o.HighWatermark, o.InFlight, o.LastPoll, o.LastPollEmpty = 20, 30, 10, t0.Add(-time.Millisecond), true
		}, plan{Sleep: 4 * time.Millisecond}},
		{"empty answer at an unreadable commit, nothing in flight: long-poll there", func(o *observed) {
			o.Fetch, o.Next, o.HighWatermark, o.LastPoll, o.LastPollEmpty = 10, 10, 30, t0, true
		}, plan{Poll: true, PollWait: time.Second}},
		{"poll failed: wait for the retry", func(o *observed) {
			o.PollRetryAt = t0.Add(80 * time.Millisecond)
		}, plan{Sleep: 80 * time.Millisecond}},
		{"out of range with work in flight: drain first", func(o *observed) {
			o.OutOfRange, o.InFlight, o.Fetch = true, 3, 13
		}, plan{Sleep: time.Second}},
		{"out of range, drained: reposition", func(o *observed) {
			o.OutOfRange = true
		}, plan{Reposition: true}},
		{"until caught up, done", func(o *observed) {
			o.UntilCaughtUp, o.HighWatermark = true, 10
		}, plan{Done: true}},
		{"until caught up, work in flight: not done", func(o *observed) {
			o.UntilCaughtUp, o.HighWatermark, o.Fetch, o.InFlight, o.LastPoll = true, 12, 12, 2, t0
		}, plan{Sleep: 5 * time.Millisecond}},
		{"until caught up, a parked key replaying: not done", func(o *observed) {
			o.UntilCaughtUp, o.HighWatermark, o.Replaying, o.LastPoll, o.LastPollEmpty = true, 10, 1, t0, true
		}, plan{Sleep: 5 * time.Millisecond}},
		{"a parked key replaying, nothing in flight: poll without a long wait", func(o *observed) {
			o.Replaying, o.LastPoll = 1, t0.Add(-time.Second)
		}, plan{Poll: true}},
		{"until caught up, no answer yet: poll", func(o *observed) {
			o.UntilCaughtUp = true
		}, plan{Poll: true, PollWait: time.Second}},
		{"a renewal due in a nanosecond sleeps minSleep, not zero", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.LastRenew = t0.Add(time.Nanosecond)
			o.LastCommit = o.Now
			o.Fetch, o.Next, o.HighWatermark, o.InFlight = 4000, 2000, 4000, 2000
		}, plan{Sleep: minSleep}},
	}
	runDecide(t, lim, base, cases)
}

// decideCase is one scenario of decide: base modified by mod, and the plan wanted.
type decideCase struct {
	name string
	mod  func(o *observed)
	want plan
}

// runDecide runs each case as a sub-test.
func runDecide(t *testing.T, lim limits, base observed, cases []decideCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base
			if c.mod != nil {
				c.mod(&o)
			}
			if got := decide(lim, o); got != c.want {
				t.Fatalf("decide = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestDecideCommitRenews: with a coordinator whose commits renew the lease, a renewal
// due with progress to save is a commit, none is sent beside a commit, a renewal due
// with records in flight waits for their commit up to TTL/2, and a renewal due with
// nothing to commit goes alone.
func TestDecideCommitRenews(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	lim := limits{TTL: 30 * time.Second, CommitInterval: 10 * time.Second, PollWait: time.Second, CommitRenews: true,
		MaxInFlight: 2000, MaxInFlightBytes: 1 << 20, RetryAfter: 100 * time.Millisecond, IdlePoll: 5 * time.Millisecond}
	base := observed{Now: t0, LastRenew: t0, LastCommit: t0, Committed: 10, Next: 10, Fetch: 10, HighWatermark: 10}
	cases := []decideCase{
		{"nothing new, renewal not due: no write", func(o *observed) {
			o.Now = t0.Add(9 * time.Second)
		}, plan{Poll: true, PollWait: time.Second}},
		{"nothing new, renewal due: it goes alone", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.LastCommit = t0.Add(5 * time.Second)
		}, plan{Renew: true, Poll: true, PollWait: time.Second}},
		{"progress, renewal due before the commit: the commit carries it", func(o *observed) {
			o.Now, o.LastRenew = t0.Add(10*time.Second), t0
			o.LastCommit = t0.Add(5 * time.Second)
			o.Next, o.Fetch, o.HighWatermark = 15, 15, 15
		}, plan{Commit: true, Poll: true, PollWait: time.Second}},
		{"progress, commit due: no renewal beside it", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.Next, o.Fetch, o.HighWatermark, o.InFlight, o.LastPoll = 15, 20, 20, 5, o.Now
		}, plan{Commit: true, Sleep: 5 * time.Millisecond}},
		{"progress, neither due: wait for the commit", func(o *observed) {
			o.Now = t0.Add(4 * time.Second)
			o.Next, o.Fetch, o.HighWatermark, o.InFlight = 15, 2015, 2015, 2000
		}, plan{Sleep: 6 * time.Second}},
		{"nothing done yet, records in flight, renewal due: their commit will carry it", func(o *observed) {
			o.Now = t0.Add(10 * time.Second)
			o.LastCommit = t0.Add(5 * time.Second)
			o.Fetch, o.HighWatermark, o.InFlight, o.LastPoll = 12, 12, 2, o.Now
		}, plan{Sleep: 5 * time.Millisecond}},
		{"records in flight past TTL/2: the renewal goes alone", func(o *observed) {
			o.Now = t0.Add(15 * time.Second)
			o.LastCommit = t0.Add(5 * time.Second)
			o.Fetch, o.HighWatermark, o.InFlight, o.LastPoll = 12, 12, 2, o.Now
		}, plan{Renew: true, Sleep: minSleep}},
		{"lease lapsed with progress: the commit renews at once", func(o *observed) {
			o.Now, o.LeaseLapsed = t0.Add(time.Second), true
			o.Next, o.Fetch, o.HighWatermark = 15, 15, 15
		}, plan{Commit: true, Poll: true, PollWait: time.Second}},
	}
	runDecide(t, lim, base, cases)
}

// TestDecideSleepsAreBounded: whatever the loop knows, a plan that does nothing else
// sleeps at least minSleep (no spinning) and at most TTL/3 (renewals keep their pace).
func TestDecideSleepsAreBounded(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	lim := limits{TTL: 3 * time.Second, CommitInterval: time.Second, PollWait: time.Second,
		MaxInFlight: 100, MaxInFlightBytes: 1 << 20, RetryAfter: 100 * time.Millisecond, IdlePoll: 5 * time.Millisecond}
	for _, renews := range []bool{false, true} {
		lim.CommitRenews = renews
		for _, lapsed := range []bool{false, true} {
			for _, ago := range []time.Duration{0, 500 * time.Millisecond, 999 * time.Millisecond, 2 * time.Second} {
				for _, inflight := range []int{0, 50, 100} {
					for _, done := range []int64{0, 10} {
						o := observed{Now: t0, LeaseLapsed: lapsed, LastRenew: t0.Add(-ago), LastCommit: t0.Add(-ago),
							Committed: 0, Next: done, Fetch: int64(inflight) + done, HighWatermark: int64(inflight) + done, InFlight: inflight,
							LastPoll: t0, OutOfRange: inflight == 50}
						p := decide(lim, o)
						if lapsed && !p.Renew && !(renews && p.Commit) {
							t.Errorf("%+v: lease lapsed and neither a renew nor a renewing commit", o)
						}
						if p.Poll || p.Done || p.Reposition {
							continue
						}
						if p.Sleep < minSleep || p.Sleep > lim.TTL/3 {
							t.Errorf("%+v: sleep %s outside [%s, %s]", o, p.Sleep, minSleep, lim.TTL/3)
						}
					}
				}
			}
		}
	}
}

// TestResolvePolicy: unset configuration fields take the group's settings (or a new
// group's defaults where an old row left one empty); set ones override and are named.
func TestResolvePolicy(t *testing.T) {
	g := group.Settings{ResetPolicy: "latest", MaxAttempts: 3, DeadLetterTopic: "dlq"}
	cases := []struct {
		name      string
		s         group.Settings
		cfg       Config
		want      policy
		overrides []string
	}{
		{"all unset: the group's", g, Config{}, policy{"latest", 3, "dlq", "dead_letter"}, nil},
		{"equal values are no override", g, Config{ResetPolicy: "latest", MaxAttempts: 3, DeadLetterTopic: "dlq"}, policy{"latest", 3, "dlq", "dead_letter"}, nil},
		{"every field overridden", g, Config{ResetPolicy: "fail", MaxAttempts: 1, DeadLetterTopic: "other", OnFailure: "park"},
			policy{"fail", 1, "other", "park"}, []string{"reset_policy", "max_attempts", "dead_letter_topic", "on_failure"}},
		{"empty group row: defaults", group.Settings{}, Config{}, policy{"earliest", 5, "", "dead_letter"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ov := resolvePolicy(c.s, c.cfg)
			var names []string
			for _, o := range ov {
				names = append(names, o.Setting)
			}
			if got != c.want || !slices.Equal(names, c.overrides) {
				t.Fatalf("resolvePolicy = %+v %v, want %+v %v", got, names, c.want, c.overrides)
			}
		})
	}
}
