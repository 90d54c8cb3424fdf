package group_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

const topic = "orders"

// TestPausedConsumerResumesAfterReassignment: A holds generation g and commits 5, pauses
// past its TTL; B takes over at g+1 and commits 8; when A resumes, its commit and its
// renewal are fenced and the committed offset never goes back.
func TestPausedConsumerResumesAfterReassignment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 2)
		f.off.appendN(topic, 1, 10)
		g := uniqueGroup("paused")
		const ttl = time.Second

		a := must(f.c.Acquire(ctx, g, topic, 1, "A", ttl))(t)
		if a.Committed != nil {
			t.Fatalf("first lease: committed = %d, want none", *a.Committed)
		}
		mustOK(t, f.c.Commit(ctx, g, topic, 1, "A", a.Generation, 5))

		f.clock.Advance(ttl + 500*time.Millisecond) // A pauses past its TTL

		b := must(f.c.Acquire(ctx, g, topic, 1, "B", ttl))(t)
		if b.Generation != a.Generation+1 {
			t.Fatalf("B's generation = %d, want %d", b.Generation, a.Generation+1)
		}
		if b.Committed == nil || *b.Committed != 5 {
			t.Fatalf("B's lease: committed = %v, want 5", b.Committed)
		}
		mustOK(t, f.c.Commit(ctx, g, topic, 1, "B", b.Generation, 8))

		// A resumes. A higher offset can only be refused by the fence; a lower one is
		// refused either way and must not regress the position.
		for _, o := range []int64{9, 8, 6} {
			err := f.c.Commit(ctx, g, topic, 1, "A", a.Generation, o)
			if o >= 8 && !errors.Is(err, group.ErrFenced) {
				t.Errorf("A's commit of %d after take-over: %v, want ErrFenced", o, err)
			}
			if o < 8 && !errors.Is(err, group.ErrFenced) && !errors.Is(err, group.ErrStaleCommit) {
				t.Errorf("A's commit of %d after take-over: %v, want ErrFenced or ErrStaleCommit", o, err)
			}
			if got := committed(t, f.c, g, topic, 1); got != 8 {
				t.Fatalf("after A's commit of %d: committed = %d, want 8", o, got)
			}
		}
		if _, err := f.c.Renew(ctx, g, topic, 1, "A", a.Generation, ttl); !errors.Is(err, group.ErrFenced) {
			t.Errorf("A's renew after take-over: %v, want ErrFenced", err)
		}
		if err := f.c.Release(ctx, g, topic, 1, "A", a.Generation); !errors.Is(err, group.ErrFenced) {
			t.Errorf("A's release after take-over: %v, want ErrFenced", err)
		}

		// B is untouched by all of it.
		info := must(f.c.Describe(ctx, g))(t)
		if len(info.Partitions) != 1 {
			t.Fatalf("describe: %d partitions, want 1: %+v", len(info.Partitions), info.Partitions)
		}
		p := info.Partitions[0]
		if p.Owner != "B" || p.Generation != b.Generation || p.Committed == nil || *p.Committed != 8 || p.LagRecords != 2 {
			t.Errorf("describe after A resumed: %+v (committed %v), want owner B gen %d committed 8 lag 2", p, p.Committed, b.Generation)
		}
		rb := must(f.c.Renew(ctx, g, topic, 1, "B", b.Generation, ttl))(t)
		if rb.Generation != b.Generation || rb.Committed == nil || *rb.Committed != 8 {
			t.Errorf("B's renew: %+v, want generation %d committed 8", rb, b.Generation)
		}
		mustOK(t, f.c.Commit(ctx, g, topic, 1, "B", b.Generation, 10))
	})
}

// TestTwoGroupsIndependentPositions: two groups on one partition have their own leases,
// generations, positions and resets.
func TestTwoGroupsIndependentPositions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 1)
		f.off.appendN(topic, 0, 20)
		g1, g2 := uniqueGroup("billing"), uniqueGroup("audit")

		l1 := must(f.c.Acquire(ctx, g1, topic, 0, "m-1", 0))(t)
		// The same member name in another group is another lease, not a re-acquire.
		l2 := must(f.c.Acquire(ctx, g2, topic, 0, "m-1", 0))(t)
		if l1.Generation != 1 || l2.Generation != 1 {
			t.Fatalf("generations %d and %d, want 1 and 1", l1.Generation, l2.Generation)
		}
		// A member of g2 is not blocked by g1's lease.
		if _, err := f.c.Acquire(ctx, g2, topic, 0, "m-2", 0); !errors.Is(err, group.ErrLeaseHeld) {
			t.Fatalf("second member of g2: %v, want ErrLeaseHeld (g2's own lease)", err)
		}
		mustOK(t, f.c.Commit(ctx, g1, topic, 0, "m-1", l1.Generation, 15))
		mustOK(t, f.c.Commit(ctx, g2, topic, 0, "m-1", l2.Generation, 3))
		if got := committed(t, f.c, g1, topic, 0); got != 15 {
			t.Errorf("g1 committed %d, want 15", got)
		}
		if got := committed(t, f.c, g2, topic, 0); got != 3 {
			t.Errorf("g2 committed %d, want 3", got)
		}
		// g2's commit of 4 is not stale though g1 is at 15.
		mustOK(t, f.c.Commit(ctx, g2, topic, 0, "m-1", l2.Generation, 4))

		mustOK(t, f.c.Release(ctx, g1, topic, 0, "m-1", l1.Generation))
		if _, err := f.c.Reset(ctx, g2, topic, group.ResetEarliest()); !errors.Is(err, group.ErrGroupActive) {
			t.Fatalf("reset of g2 with a live lease: %v, want ErrGroupActive", err)
		}
		if _, err := f.c.Reset(ctx, g1, topic, group.ResetOffset(2)); err != nil {
			t.Fatalf("reset of g1 while g2 is active: %v", err)
		}
		if got := committed(t, f.c, g1, topic, 0); got != 2 {
			t.Errorf("g1 committed %d after reset, want 2", got)
		}
		if got := committed(t, f.c, g2, topic, 0); got != 4 {
			t.Errorf("g2 committed %d after g1's reset, want 4", got)
		}
		d1 := must(f.c.Describe(ctx, g1))(t)
		d2 := must(f.c.Describe(ctx, g2))(t)
		if len(d1.Partitions) != 1 || d1.Partitions[0].LagRecords != 18 || d1.Partitions[0].Owner != "" {
			t.Errorf("describe g1: %+v, want lag 18 and no owner", d1.Partitions)
		}
		if len(d2.Partitions) != 1 || d2.Partitions[0].LagRecords != 16 || d2.Partitions[0].Owner != "m-1" {
			t.Errorf("describe g2: %+v, want lag 16 and owner m-1", d2.Partitions)
		}
	})
}

// errCase is one refused call: it must fail with want (tested against both the group
// and the store sentinel where one exists) and leave the committed offset as it was.
type errCase struct {
	name string
	// call runs the refused operation on a group where member "A" holds partition 0 at
	// generation gen = 2 with 5 committed, the HW is 10 and the log start 2.
	call  func(ctx context.Context, f *fixture, g string, gen int64) error
	want  error
	check func(t *testing.T, err error)
}

func TestErrors(t *testing.T) {
	long := strings.Repeat("m", 201)
	cases := []errCase{
		// Acquire.
		{name: "acquire/bad group", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, "a\x00"+g, topic, 0, "B", 0)
			return err
		}},
		{name: "acquire/bad topic name", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, "..", 0, "B", 0)
			return err
		}},
		{name: "acquire/empty member", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 1, "", 0)
			return err
		}},
		{name: "acquire/member too long", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 1, long, 0)
			return err
		}},
		{name: "acquire/member not printable", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 1, "m\n1", 0)
			return err
		}},
		{name: "acquire/ttl too short", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 1, "B", 99*time.Millisecond)
			return err
		}},
		{name: "acquire/ttl too long", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 1, "B", 5*time.Minute+time.Millisecond)
			return err
		}},
		{name: "acquire/negative partition", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, -1, "B", 0)
			return err
		}},
		{name: "acquire/partition out of range", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 2, "B", 0)
			return err
		}},
		{name: "acquire/unknown topic", want: group.ErrNotFound, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, "nope", 0, "B", 0)
			return err
		}},
		{name: "acquire/held by live other", want: group.ErrLeaseHeld, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Acquire(ctx, g, topic, 0, "B", 0)
			return err
		}, check: func(t *testing.T, err error) {
			owner, exp, ok := group.LeaseHolder(err)
			if !ok || owner != "A" || !exp.Equal(t0.Add(time.Minute)) {
				t.Errorf("LeaseHolder = %q, %s, %v; want A, %s", owner, exp, ok, t0.Add(time.Minute))
			}
			var lh *store.LeaseHeldError
			if !errors.As(err, &lh) || lh.Owner != "A" {
				t.Errorf("errors.As store.LeaseHeldError: %v", lh)
			}
		}},
		// Renew.
		{name: "renew/wrong generation", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			_, err := f.c.Renew(ctx, g, topic, 0, "A", gen+1, 0)
			return err
		}},
		{name: "renew/other member", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			_, err := f.c.Renew(ctx, g, topic, 0, "B", gen, 0)
			return err
		}},
		{name: "renew/never leased", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Renew(ctx, g, topic, 1, "A", 1, 0)
			return err
		}},
		{name: "renew/after take-over", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			f.clock.Advance(time.Minute)
			if _, err := f.c.Acquire(ctx, g, topic, 0, "B", 0); err != nil {
				return err
			}
			_, err := f.c.Renew(ctx, g, topic, 0, "A", gen, 0)
			return err
		}},
		{name: "renew/zero generation", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Renew(ctx, g, topic, 0, "A", 0, 0)
			return err
		}},
		{name: "renew/bad ttl", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			_, err := f.c.Renew(ctx, g, topic, 0, "A", gen, time.Hour)
			return err
		}},
		// Release.
		{name: "release/wrong generation", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Release(ctx, g, topic, 0, "A", gen-1)
		}},
		{name: "release/twice", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			if err := f.c.Release(ctx, g, topic, 0, "A", gen); err != nil {
				return err
			}
			return f.c.Release(ctx, g, topic, 0, "A", gen)
		}},
		{name: "release/bad member", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Release(ctx, g, topic, 0, "", gen)
		}},
		// Commit.
		{name: "commit/beyond high watermark", want: group.ErrBeyondHighWatermark, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 0, "A", gen, 11)
		}, check: func(t *testing.T, err error) {
			var b *group.BeyondHighWatermarkError
			if !errors.As(err, &b) || b.HighWatermark != 10 || b.Offset != 11 {
				t.Errorf("BeyondHighWatermarkError = %+v, want offset 11 HW 10", b)
			}
		}},
		{name: "commit/beyond high watermark by a fenced member", want: group.ErrBeyondHighWatermark, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 0, "B", gen+7, 1<<40)
		}},
		{name: "commit/negative", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 0, "A", gen, -1)
		}},
		{name: "commit/stale", want: group.ErrStaleCommit, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 0, "A", gen, 4)
		}},
		{name: "commit/obsolete generation", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 0, "A", gen-1, 7)
		}},
		{name: "commit/not the owner", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 0, "B", gen, 7)
		}},
		{name: "commit/after release", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			if err := f.c.Release(ctx, g, topic, 0, "A", gen); err != nil {
				return err
			}
			return f.c.Commit(ctx, g, topic, 0, "A", gen, 7)
		}},
		{name: "commit/after take-over", want: group.ErrFenced, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			f.clock.Advance(time.Minute)
			if _, err := f.c.Acquire(ctx, g, topic, 0, "B", 0); err != nil {
				return err
			}
			return f.c.Commit(ctx, g, topic, 0, "A", gen, 7)
		}},
		{name: "commit/unknown topic", want: group.ErrNotFound, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, "nope", 0, "A", gen, 0)
		}},
		{name: "commit/partition out of range", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			return f.c.Commit(ctx, g, topic, 5, "A", gen, 0)
		}},
		{name: "commit/zero generation", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			return f.c.Commit(ctx, g, topic, 0, "A", 0, 7)
		}},
		// Describe.
		{name: "describe/unknown group", want: group.ErrNotFound, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Describe(ctx, g+"-unknown")
			return err
		}},
		{name: "describe/bad name", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Describe(ctx, g+"\x00")
			return err
		}},
		// Reset.
		{name: "reset/live lease", want: group.ErrGroupActive, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Reset(ctx, g, topic, group.ResetEarliest())
			return err
		}},
		{name: "reset/live lease on another partition", want: group.ErrGroupActive, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			if err := f.c.Release(ctx, g, topic, 0, "A", gen); err != nil {
				return err
			}
			if _, err := f.c.Acquire(ctx, g, topic, 1, "B", 0); err != nil {
				return err
			}
			_, err := f.c.Reset(ctx, g, topic, group.ResetLatest())
			return err
		}},
		{name: "reset/offset above high watermark", want: group.ErrOffsetOutOfRange, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			if err := f.c.Release(ctx, g, topic, 0, "A", gen); err != nil {
				return err
			}
			_, err := f.c.Reset(ctx, g, topic, group.ResetOffset(11))
			return err
		}, check: func(t *testing.T, err error) {
			var o *group.OffsetOutOfRangeError
			if !errors.As(err, &o) || o.Partition != 0 || o.LogStartOffset != 2 || o.HighWatermark != 10 || o.Offset != 11 {
				t.Errorf("OffsetOutOfRangeError = %+v, want partition 0 offset 11 bounds [2, 10]", o)
			}
		}},
		{name: "reset/offset below log start", want: group.ErrOffsetOutOfRange, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			if err := f.c.Release(ctx, g, topic, 0, "A", gen); err != nil {
				return err
			}
			_, err := f.c.Reset(ctx, g, topic, group.ResetOffset(1))
			return err
		}, check: func(t *testing.T, err error) {
			var o *group.OffsetOutOfRangeError
			if !errors.As(err, &o) || o.LogStartOffset != 2 || o.HighWatermark != 10 {
				t.Errorf("OffsetOutOfRangeError = %+v, want bounds [2, 10]", o)
			}
		}},
		{name: "reset/offset beyond an empty partition", want: group.ErrOffsetOutOfRange, call: func(ctx context.Context, f *fixture, g string, gen int64) error {
			if err := f.c.Release(ctx, g, topic, 0, "A", gen); err != nil {
				return err
			}
			// Partition 0 has [2, 10] but partition 1 is empty: 3 fits only the first.
			_, err := f.c.Reset(ctx, g, topic, group.ResetOffset(3))
			return err
		}, check: func(t *testing.T, err error) {
			var o *group.OffsetOutOfRangeError
			if !errors.As(err, &o) || o.Partition != 1 || o.LogStartOffset != 0 || o.HighWatermark != 0 {
				t.Errorf("OffsetOutOfRangeError = %+v, want partition 1 bounds [0, 0]", o)
			}
		}},
		{name: "reset/negative offset", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Reset(ctx, g, topic, group.ResetOffset(-1))
			return err
		}},
		{name: "reset/no target", want: group.ErrInvalid, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Reset(ctx, g, topic, group.ResetTo{})
			return err
		}},
		{name: "reset/unknown topic", want: group.ErrNotFound, call: func(ctx context.Context, f *fixture, g string, _ int64) error {
			_, err := f.c.Reset(ctx, g, "nope", group.ResetEarliest())
			return err
		}},
	}
	storeSentinel := map[error]error{
		group.ErrFenced:      store.ErrFenced,
		group.ErrLeaseHeld:   store.ErrLeaseHeld,
		group.ErrStaleCommit: store.ErrStaleCommit,
		group.ErrGroupActive: store.ErrGroupActive,
		group.ErrNotFound:    store.ErrNotFound,
	}
	all := []error{group.ErrFenced, group.ErrLeaseHeld, group.ErrStaleCommit, group.ErrGroupActive,
		group.ErrNotFound, group.ErrInvalid, group.ErrBeyondHighWatermark, group.ErrOffsetOutOfRange}
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				f := newFixture(st)
				f.off.addTopic(topic, 2)
				f.off.appendN(topic, 0, 10)
				f.off.setLogStart(topic, 0, 2)
				g := uniqueGroup("err")
				// Twice, so generation 1 is an obsolete incarnation of A.
				must(f.c.Acquire(ctx, g, topic, 0, "A", time.Minute))(t)
				l := must(f.c.Acquire(ctx, g, topic, 0, "A", time.Minute))(t)
				mustOK(t, f.c.Commit(ctx, g, topic, 0, "A", l.Generation, 5))
				commitsBefore, resetsBefore := f.st.commits.Load(), f.st.resets.Load()

				err := tc.call(ctx, f, g, l.Generation)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				if s, ok := storeSentinel[tc.want]; ok && !errors.Is(err, s) {
					t.Errorf("errors.Is(%v, store sentinel %v) is false", err, s)
				}
				for _, other := range all {
					if other != tc.want && errors.Is(err, other) {
						t.Errorf("%v also matches %v", err, other)
					}
				}
				if tc.check != nil {
					tc.check(t, err)
				}
				if got := committed(t, f.c, g, topic, 0); got != 5 {
					t.Errorf("committed offset %d after a refused call, want 5", got)
				}
				if got := committed(t, f.c, g, topic, 1); got != -1 {
					t.Errorf("partition 1 committed %d after a refused call, want none", got)
				}
				switch tc.want {
				case group.ErrBeyondHighWatermark, group.ErrInvalid, group.ErrNotFound, group.ErrOffsetOutOfRange:
					// Refused before the store was asked to write.
					if n := f.st.commits.Load() - commitsBefore; n != 0 {
						t.Errorf("%d store commits for a call refused up front", n)
					}
					if n := f.st.resets.Load() - resetsBefore; n != 0 {
						t.Errorf("%d store resets for a call refused up front", n)
					}
				}
			})
		}
	})
}

// TestLeaseLifecycle: acquire creates the group with defaults, renew keeps the
// generation and moves the expiry, re-acquire by the same member bumps it, release
// frees the lease for another member at the next generation.
func TestLeaseLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 1)
		f.off.appendN(topic, 0, 3)
		g := uniqueGroup("life")

		if _, err := st.GetGroup(ctx, g); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("group before the first lease: %v, want ErrNotFound", err)
		}
		l := must(f.c.Acquire(ctx, g, topic, 0, "A", 0))(t)
		if l.Generation != 1 || !l.ExpiresAt.Equal(t0.Add(group.DefaultTTL)) || l.Member != "A" {
			t.Fatalf("first lease %+v, want generation 1 expiring at %s", l, t0.Add(group.DefaultTTL))
		}
		cfg := must(st.GetGroup(ctx, g))(t)
		if cfg.ResetPolicy != "earliest" || cfg.MaxAttempts != 5 || cfg.DeadLetterTopic != "" {
			t.Errorf("group created with %+v, want earliest/5/no dead letters", cfg)
		}

		f.clock.Advance(10 * time.Second)
		r := must(f.c.Renew(ctx, g, topic, 0, "A", 1, 2*time.Second))(t)
		if r.Generation != 1 || !r.ExpiresAt.Equal(t0.Add(12*time.Second)) {
			t.Errorf("renewed %+v, want generation 1 expiring at %s", r, t0.Add(12*time.Second))
		}
		// Expired but not taken over: the owner may still renew.
		f.clock.Advance(5 * time.Second)
		must(f.c.Renew(ctx, g, topic, 0, "A", 1, time.Second))(t)

		again := must(f.c.Acquire(ctx, g, topic, 0, "A", 0))(t)
		if again.Generation != 2 {
			t.Errorf("re-acquire by the same member: generation %d, want 2", again.Generation)
		}
		if err := f.c.Commit(ctx, g, topic, 0, "A", 1, 1); !errors.Is(err, group.ErrFenced) {
			t.Errorf("commit by the earlier incarnation: %v, want ErrFenced", err)
		}
		mustOK(t, f.c.Commit(ctx, g, topic, 0, "A", 2, 3))
		mustOK(t, f.c.Commit(ctx, g, topic, 0, "A", 2, 3)) // the same offset again is fine
		mustOK(t, f.c.Release(ctx, g, topic, 0, "A", 2))

		b := must(f.c.Acquire(ctx, g, topic, 0, "B", 0))(t)
		if b.Generation != 3 || b.Committed == nil || *b.Committed != 3 {
			t.Errorf("B after release: %+v (committed %v), want generation 3 committed 3", b, b.Committed)
		}
	})
}

// TestDescribe checks positions, both lags, and that owner and expiry show only while
// the lease is live.
func TestDescribe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 3)
		f.off.addTopic("events", 1)
		// Record i of each partition is appended at t0 + i seconds.
		for p := range int32(3) {
			for i := range 10 {
				f.off.append(topic, p, t0.Add(time.Duration(i)*time.Second))
			}
		}
		f.off.setLogStart(topic, 2, 4)
		g := uniqueGroup("desc")

		f.clock.Advance(100 * time.Second)
		l0 := must(f.c.Acquire(ctx, g, topic, 0, "A", 10*time.Second))(t)
		mustOK(t, f.c.Commit(ctx, g, topic, 0, "A", l0.Generation, 5))
		l1 := must(f.c.Acquire(ctx, g, topic, 1, "A", 10*time.Second))(t)
		mustOK(t, f.c.Commit(ctx, g, topic, 1, "A", l1.Generation, 10))
		must(f.c.Acquire(ctx, g, topic, 2, "B", time.Second))(t) // never commits
		lev := must(f.c.Acquire(ctx, g, "events", 0, "A", time.Second))(t)
		mustOK(t, f.c.Release(ctx, g, "events", 0, "A", lev.Generation))

		f.clock.Advance(2 * time.Second) // B's lease has expired, A's have not
		now := t0.Add(102 * time.Second)
		info := must(f.c.Describe(ctx, g))(t)
		if info.Config.Name != g {
			t.Errorf("config name %q, want %q", info.Config.Name, g)
		}
		type want struct {
			topic      string
			partition  int32
			committed  int64 // -1: none
			hw, start  int64
			lagRecords int64
			lagTime    time.Duration
			owner      string
			gen        int64
		}
		wants := []want{
			{"events", 0, -1, 0, 0, 0, 0, "", lev.Generation},
			{topic, 0, 5, 10, 0, 5, now.Sub(t0.Add(5 * time.Second)), "A", l0.Generation},
			{topic, 1, 10, 10, 0, 0, 0, "A", l1.Generation},
			{topic, 2, -1, 10, 4, 6, now.Sub(t0.Add(4 * time.Second)), "", 1},
		}
		if len(info.Partitions) != len(wants) {
			t.Fatalf("describe: %d partitions, want %d: %+v", len(info.Partitions), len(wants), info.Partitions)
		}
		for i, w := range wants {
			p := info.Partitions[i]
			c := int64(-1)
			if p.Committed != nil {
				c = *p.Committed
			}
			if p.Topic != w.topic || p.Partition != w.partition || c != w.committed || p.HighWatermark != w.hw ||
				p.LogStartOffset != w.start || p.LagRecords != w.lagRecords || p.LagTime != w.lagTime ||
				p.Owner != w.owner || p.Generation != w.gen {
				t.Errorf("partition %d: got %+v committed %d, want %+v", i, p, c, w)
			}
			if (p.Owner == "") != p.LeaseExpiresAt.IsZero() {
				t.Errorf("partition %d: owner %q with expiry %s", i, p.Owner, p.LeaseExpiresAt)
			}
		}
		if !info.Partitions[1].LeaseExpiresAt.Equal(t0.Add(110 * time.Second)) {
			t.Errorf("lease expiry %s, want %s", info.Partitions[1].LeaseExpiresAt, t0.Add(110*time.Second))
		}
	})
}

// TestReset covers every target and checks the positions it reports are the ones a
// lease then sees.
func TestReset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 2)
		for i := range 10 {
			f.off.append(topic, 0, t0.Add(time.Duration(i)*time.Second))
		}
		for i := range 4 {
			f.off.append(topic, 1, t0.Add(time.Duration(2*i)*time.Second))
		}
		f.off.setLogStart(topic, 0, 3)
		g := uniqueGroup("reset")

		// A group that never leased is created by its first reset.
		cases := []struct {
			to   group.ResetTo
			want []int64
		}{
			{group.ResetLatest(), []int64{10, 4}},
			{group.ResetEarliest(), []int64{3, 0}},
			{group.ResetOffset(4), []int64{4, 4}},
			{group.ResetTime(t0.Add(3500 * time.Millisecond)), []int64{4, 2}}, // at or after 3.5s
			{group.ResetTime(t0.Add(4 * time.Second)), []int64{4, 2}},         // exactly at 4s
			{group.ResetTime(t0.Add(-time.Hour)), []int64{3, 0}},              // before everything: the log start
			{group.ResetTime(t0.Add(time.Hour)), []int64{10, 4}},              // after everything: the HW
			{group.ResetOffset(3), []int64{3, 3}},                             // below an earlier position
		}
		for _, tc := range cases {
			got := must(f.c.Reset(ctx, g, topic, tc.to))(t)
			if len(got) != 2 {
				t.Fatalf("reset to %s: %+v", tc.to, got)
			}
			for p, w := range tc.want {
				if got[p].Partition != int32(p) || got[p].Offset != w {
					t.Errorf("reset to %s: partition %d -> %+v, want %d", tc.to, p, got[p], w)
				}
				if c := committed(t, f.c, g, topic, int32(p)); c != w {
					t.Errorf("reset to %s: partition %d committed %d, want %d", tc.to, p, c, w)
				}
			}
		}
		must(f.c.Describe(ctx, g))(t)

		// A released or expired lease does not block a reset.
		l := must(f.c.Acquire(ctx, g, topic, 0, "A", time.Second))(t)
		if l.Committed == nil || *l.Committed != 3 {
			t.Errorf("lease after reset: committed %v, want 3", l.Committed)
		}
		f.clock.Advance(time.Second)
		must(f.c.Reset(ctx, g, topic, group.ResetLatest()))(t)
		if c := committed(t, f.c, g, topic, 0); c != 10 {
			t.Errorf("after reset with an expired lease: committed %d, want 10", c)
		}
	})
}
