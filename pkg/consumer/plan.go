package consumer

import "time"

// The run loop decides, then acts: it reads what it knows into an observed (the clock,
// the tracker, its own buffers — never a store), decide turns that into a plan with no
// I/O, and the loop applies the plan (renew, commit, reposition, poll, or wait for a
// worker). Nothing in the loop waits on a worker: records a poll answered beyond what
// the workers' queues hold stay in the loop's buffer, and polling stops while the
// window is full, so renewals and commits go on however slow the handler is.

// limits are the configuration decide applies.
type limits struct {
	TTL            time.Duration
	CommitInterval time.Duration
	PollWait       time.Duration
	// MaxInFlight bounds fetch − Next (records polled beyond the committable position);
	// MaxInFlightBytes bounds the bytes of polled records not yet completed. Either one
	// full stops polling; one answer may overshoot both (a whole commit is answered whole).
	MaxInFlight      int
	MaxInFlightBytes int64
	// RetryAfter is the pause after a failed renew or poll; IdlePoll the pause between
	// polls that find nothing new while records are still being handled.
	RetryAfter time.Duration
	IdlePoll   time.Duration
	// CommitRenews: a commit renews the lease too (LeaseCommitter), so a renewal due with
	// progress to save is made by committing it, and none is made beside a commit.
	CommitRenews bool
}

// observed is what the loop knows when it decides.
type observed struct {
	Now time.Time
	// LeaseLapsed: the local lease deadline is at or before Now.
	LeaseLapsed bool
	// LastRenew is when the last successful renew (or the acquire) was sent;
	// RenewRetryAt, after a failed renew, is the earliest time for the next one.
	LastRenew, RenewRetryAt time.Time
	// LastCommit is when the last commit was made; Committed what it stored.
	LastCommit time.Time
	Committed  int64
	// Next is the end of the contiguous completed prefix; Fetch the next offset to poll.
	Next, Fetch int64
	// Unsaved: records completed since the last commit (above Next too), whose
	// completed ranges a commit would remember.
	Unsaved bool
	// HighWatermark is the last poll answer's (−1 before the first answer).
	HighWatermark int64
	// InFlight is the records started and not completed (in the loop's buffer or at a
	// worker); HeldBytes their bytes.
	InFlight  int
	HeldBytes int64
	// LastPoll is when the last poll answered and LastPollEmpty whether it answered no
	// records (caught up, or at a commit not readable yet); PollRetryAt, after a failed
	// poll, the earliest time for the next one.
	LastPoll, PollRetryAt time.Time
	LastPollEmpty         bool
	// OutOfRange: the last poll found the position outside the log; the reset policy
	// applies once every record in flight is done.
	OutOfRange bool
	// UntilCaughtUp: the run ends once everything below the high watermark is handled.
	UntilCaughtUp bool
	// Replaying is the releases of parked keys queued and not finished (park.go).
	Replaying int
}

// plan is what the loop does next, in this order: renew, commit, then one of done,
// reposition, poll or sleep.
type plan struct {
	Renew  bool
	Commit bool // commit the checkpoint: Next and the completed ranges above it
	// Done ends the run (caught up, nothing in flight).
	Done bool
	// Reposition applies the reset policy (nothing is in flight any more).
	Reposition bool
	// Poll polls from Fetch, long-polling for PollWait (zero: answer at once).
	Poll     bool
	PollWait time.Duration
	// Sleep is how long to wait for a worker's completion before deciding again (a
	// completion ends it early); set when nothing else is to be done.
	Sleep time.Duration
}

// minSleep keeps a loop with nothing to do from spinning on a deadline that is due now.
const minSleep = time.Millisecond

// decide is the run loop's pure step: what to do next given what the loop knows.
func decide(lim limits, o observed) plan {
	var p plan
	renewAt := o.LastRenew.Add(lim.TTL / 3)
	if o.LeaseLapsed {
		renewAt = o.Now // workers wait for this renewal
	}
	if o.RenewRetryAt.After(renewAt) {
		renewAt = o.RenewRetryAt
	}
	commitAt := o.LastCommit.Add(lim.CommitInterval)
	pending := o.Next > o.Committed || o.Unsaved
	if lim.CommitRenews && !pending && o.InFlight > 0 && !o.LeaseLapsed && !o.Now.Before(renewAt) {
		// Records in flight will complete, and the commit of them carries the renewal:
		// wait for them up to TTL/2 (half the lease still left) before renewing alone.
		if half := o.LastRenew.Add(lim.TTL / 2); half.After(renewAt) {
			renewAt = half
		}
	}
	p.Renew = !o.Now.Before(renewAt)
	p.Commit = pending && !o.Now.Before(commitAt)
	if lim.CommitRenews && pending && p.Renew {
		// The renewal rides in a commit of what is done so far.
		p.Commit, p.Renew = true, false
	}
	if lim.CommitRenews && p.Commit {
		p.Renew = false
	}

	// wake is when something becomes due without a worker's completion.
	wake := renewAt
	if p.Renew || (lim.CommitRenews && p.Commit) {
		// A commit that carries the renewal renews at most CommitInterval late when it
		// finds nothing to store (commitAt below wakes the loop), within TTL/3.
		wake = o.Now.Add(lim.TTL / 3)
	}
	if pending || o.InFlight > 0 {
		// Completions do not wake the loop one by one: look for them to commit.
		if p.Commit {
			commitAt = o.Now.Add(lim.CommitInterval)
		}
		wake = earliest(wake, commitAt)
	}
	sleep := func() plan {
		p.Sleep = max(wake.Sub(o.Now), minSleep)
		return p
	}

	caughtUp := o.HighWatermark >= 0 && o.Fetch >= o.HighWatermark
	switch {
	case o.OutOfRange && o.InFlight == 0:
		p.Reposition = true
		return p
	case o.OutOfRange:
		return sleep() // drain what was polled before the position left the log
	case o.UntilCaughtUp && caughtUp && o.InFlight == 0 && o.Replaying == 0:
		p.Done = true
		return p
	case o.Fetch-o.Next >= int64(lim.MaxInFlight) || o.HeldBytes >= lim.MaxInFlightBytes:
		return sleep() // window full: a completion wakes the loop
	case o.Now.Before(o.PollRetryAt):
		wake = earliest(wake, o.PollRetryAt)
		return sleep()
	case o.InFlight == 0 && o.Replaying == 0:
		// Nothing to handle: long-poll (a poll delays the next decision by its wait,
		// which New bounds by TTL/3, so renewals keep their pace).
		p.Poll, p.PollWait = true, lim.PollWait
		return p
	case (caughtUp || o.LastPollEmpty) && o.Now.Before(o.LastPoll.Add(lim.IdlePoll)):
		// Work drains and the last poll found nothing new: look again shortly, never
		// with a wait (commits must keep pace with completions).
		wake = earliest(wake, o.LastPoll.Add(lim.IdlePoll))
		return sleep()
	default:
		p.Poll = true
		return p
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// route is the worker a record goes to: by key when keys must stay in order, else
// round-robin by offset.
func route(offset int64, key []byte, workers int, orderedKeys bool, byKey func([]byte, int32) int32) int {
	if workers <= 1 {
		return 0
	}
	if orderedKeys && key != nil {
		return int(byKey(key, int32(workers)))
	}
	return int(offset % int64(workers))
}
