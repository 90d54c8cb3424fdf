package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// oneWinner returns the index of the only nil error, failing t unless there is exactly one.
func oneWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("%s: goroutines %d and %d both succeeded", what, winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("%s: nobody succeeded: %v", what, errs)
	}
	return winner
}

func testRacePutIndexEntry(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	const n = 16
	es := make([]store.IndexEntry, n)
	errs := make([]error, n)
	for i := range es {
		es[i] = entry(topic, 0, 0, int64(i+1))
		es[i].ObjectKey = fmt.Sprintf("v1/%s/racer-%d", topic, i)
	}
	race(n, func(i int) {
		errs[i] = retryUnavailable(func() error { return m.PutIndexEntry(ctx, es[i]) })
	})
	w := oneWinner(t, "PutIndexEntry at one base", errs)
	for i, err := range errs {
		if i != w {
			wantConflictErr(t, fmt.Sprintf("losing PutIndexEntry %d", i), err, es[w])
		}
	}
	wantLast(ctx, t, m, topic, 0, es[w], true)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 100, es[w:w+1])
}

// testRaceSequencer: appenders committing concurrently to one partition must get
// disjoint ranges that tile its offsets densely from 0, each in its own commit order, and
// their materialised entries must tile the index.
func testRaceSequencer(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	const writers, each = 8, 10
	got := make([][]store.IndexEntry, writers)
	errs := make([]error, writers)
	race(writers, func(w int) {
		for i := range each {
			e := entry(topic, 0, 0, int64(1+(w*each+i)%3))
			e.ObjectKey = fmt.Sprintf("w%d-%d", w, i)
			put, err := AppendEntry(ctx, m, e)
			if err != nil {
				errs[w] = fmt.Errorf("append %s: %w", e.ObjectKey, err)
				return
			}
			got[w] = append(got[w], put)
		}
	})
	must(t, "concurrent appends", errors.Join(errs...))

	all, err := m.IndexEntries(ctx, topic, 0, 0, 10*writers*each)
	must(t, "IndexEntries", err)
	if err := CheckTiling(all); err != nil {
		t.Fatalf("entries of racing appenders do not tile: %v (%s)", err, fmtBases(all))
	}
	if len(all) != writers*each || all[0].BaseOffset != 0 {
		t.Fatalf("want %d entries tiling from 0: %s", writers*each, fmtBases(all))
	}
	byKey := make(map[string]store.IndexEntry, len(all))
	for _, e := range all {
		byKey[e.ObjectKey] = e
	}
	var total int64
	for w := range writers {
		for i, put := range got[w] {
			stored, ok := byKey[put.ObjectKey]
			if !ok || normEntry(stored) != normEntry(put) {
				t.Fatalf("writer %d append %d got %+v, stored %+v (found %v)", w, i, put, stored, ok)
			}
			if i > 0 && put.BaseOffset <= got[w][i-1].BaseOffset {
				t.Fatalf("writer %d: append %d at %d is not after its previous at %d", w, i, put.BaseOffset, got[w][i-1].BaseOffset)
			}
			total += put.Count
		}
	}
	wantNextOffset(ctx, t, m, topic, 0, total)
	st, err := m.Sequencer(ctx, topic, 0)
	must(t, "Sequencer", err)
	if st.NextSeq != writers*each {
		t.Fatalf("NextSeq = %d after %d commits", st.NextSeq, writers*each)
	}
}

// testRaceSequencerSeed: the first commits to a partition that has legacy index entries
// but no counter race to seed it; every commit must land after the legacy entries.
func testRaceSequencerSeed(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	legacy := entry(topic, 0, 0, 7)
	putEntries(ctx, t, m, legacy)
	const n = 6
	bases := make([]int64, n)
	errs := make([]error, n)
	race(n, func(i int) {
		e := entry(topic, 0, 0, 1)
		e.ObjectKey = fmt.Sprintf("seed-%d", i)
		put, err := AppendEntry(ctx, m, e)
		bases[i], errs[i] = put.BaseOffset, err
	})
	must(t, "concurrent first commits", errors.Join(errs...))
	slices.Sort(bases)
	for i, b := range bases {
		if b != legacy.End()+int64(i) {
			t.Fatalf("first commits after a legacy index ending at %d got bases %v", legacy.End(), bases)
		}
	}
	wantNextOffset(ctx, t, m, topic, 0, legacy.End()+n)
}

func testRaceIdempotency(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, key := UniqueName(t, "t"), UniqueName(t, "idem")
	const n = 8
	recs := make([]store.IdempotencyRecord, n)
	errs := make([]error, n)
	for i := range recs {
		recs[i] = record(key, 0, entry(topic, 0, int64(10*i), 5), fmt.Sprintf("sha256:%d", i))
	}
	race(n, func(i int) {
		errs[i] = retryUnavailable(func() error { return m.ClaimIdempotency(ctx, recs[i]) })
	})
	w := oneWinner(t, "ClaimIdempotency with one key", errs)
	for i, err := range errs {
		if i != w {
			wantIdemErr(t, err, recs[w])
		}
	}
	wantRecord(ctx, t, m, recs[w])
}

func testRaceCreateTopic(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "t")
	const n = 8
	errs := make([]error, n)
	tps := make([]store.Topic, n)
	for i := range tps {
		tps[i] = store.Topic{Name: name, Partitions: int32(i + 1), Retention: time.Duration(i+1) * time.Hour, CreatedAt: at(int64(i))}
	}
	race(n, func(i int) {
		errs[i] = retryUnavailable(func() error { return m.CreateTopic(ctx, tps[i]) })
	})
	w := oneWinner(t, "CreateTopic of one name", errs)
	for i, err := range errs {
		if i != w {
			wantErrIs(t, fmt.Sprintf("losing CreateTopic %d", i), err, store.ErrExists)
		}
	}
	got, err := m.GetTopic(ctx, name)
	must(t, "GetTopic", err)
	if normTopic(got) != normTopic(tps[w]) {
		t.Fatalf("GetTopic after the race = %+v, want the winner's %+v", got, tps[w])
	}
}

func testRaceAcquire(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	const n = 8
	errs := make([]error, n)
	got := make([]store.Assignment, n)
	race(n, func(i int) {
		errs[i] = retryUnavailable(func() error {
			var err error
			got[i], err = m.AcquireLease(ctx, k.group, k.topic, k.partition, fmt.Sprintf("m-%d", i), at(0), at(30_000))
			return err
		})
	})
	w := oneWinner(t, "AcquireLease of a free lease", errs)
	want := lease(k, fmt.Sprintf("m-%d", w), 1, 30_000)
	if normAssignment(got[w]) != normAssignment(want) {
		t.Fatalf("winning AcquireLease = %+v, want %+v", got[w], want)
	}
	for i, err := range errs {
		if i != w {
			wantHeld(t, err, want)
		}
	}
	wantAssignment(ctx, t, m, k, want)
}

// commitResult is one Commit call of a race and what it returned.
type commitResult struct {
	c   store.CommitRow
	err error
}

// testRaceCommit: on each of a few partitions at once, the owner (m-1) streams commits
// while m-2 takes the lease over and commits, and fenced members commit all along. The
// old owner's commits must succeed until the take-over and be fenced from then on; no
// fenced commit may land.
func testRaceCommit(ctx context.Context, t *testing.T, m store.MetaStore) {
	base := newGTP(t)
	const partitions = 4
	errs := make([]error, partitions)
	for p := range partitions {
		acquire(ctx, t, m, gtp{base.group, base.topic, int32(p)}, "m-1", 0, 30_000)
	}
	race(partitions, func(p int) {
		errs[p] = commitTakeOverRace(ctx, m, gtp{base.group, base.topic, int32(p)})
	})
	must(t, "commits racing a take-over", errors.Join(errs...))
}

// commitTakeOverRace runs one partition of testRaceCommit; m-1 must own k at generation 1.
func commitTakeOverRace(ctx context.Context, m store.MetaStore, k gtp) error {
	const newRounds, fencedRounds, newOffset, maxOld = 5, 12, 1 << 40, 200
	var oldRes, newRes, fencedRes []commitResult
	var observed []store.CommitRow
	var takeOverErr, afterErr error
	var afterTakeOver store.CommitRow // read right after the take-over
	started, takenOver := make(chan struct{}), make(chan struct{})
	commit := func(res *[]commitResult, member string, c store.CommitRow) error {
		err := retryUnavailable(func() error { return m.Commit(ctx, c, member) })
		*res = append(*res, commitResult{c, err})
		return err
	}
	race(4, func(i int) {
		switch i {
		case 0: // the owner: commits before, during and after the take-over
			fenced, r := 0, 0
			oldCommit := func() {
				c := commitRow(k, int64(1000+r), 1, int64(r), fmt.Sprintf("old-%d", r))
				if errors.Is(commit(&oldRes, "m-1", c), store.ErrFenced) {
					fenced++
				}
				r++
			}
			for r < 3 {
				oldCommit()
			}
			close(started)
			for fenced < 3 && r < maxOld {
				oldCommit()
			}
			<-takenOver
			for extra := 0; fenced < 3 && extra < 3; extra++ {
				oldCommit()
			}
		case 1: // takes over while the owner is committing, then commits above it
			<-started
			_, takeOverErr = m.AcquireLease(ctx, k.group, k.topic, k.partition, "m-2", at(30_000), at(900_000))
			close(takenOver)
			if takeOverErr != nil {
				return
			}
			afterTakeOver, afterErr = m.GetCommit(ctx, k.group, k.topic, k.partition)
			for r := range newRounds {
				commit(&newRes, "m-2", commitRow(k, newOffset, 2, int64(100+r), fmt.Sprintf("new-%d", r)))
			}
		case 2: // never the owner at its generation
			for r := range fencedRounds {
				member, gen := []string{"m-3", "m-2", "m-3", "m-1"}[r%4], []int64{1, 1, 2, 3}[r%4]
				commit(&fencedRes, member, commitRow(k, int64(9000+r), gen, int64(r), "fenced"))
			}
		case 3:
			for range 4 {
				if c, err := m.GetCommit(ctx, k.group, k.topic, k.partition); err == nil {
					observed = append(observed, c)
				}
			}
		}
	})
	if takeOverErr != nil || afterErr != nil {
		return fmt.Errorf("partition %d: take-over: %w; GetCommit after it: %w", k.partition, takeOverErr, afterErr)
	}
	fencedSeen := false
	for r, res := range oldRes {
		switch {
		case res.err == nil && fencedSeen:
			return fmt.Errorf("old owner's commit %+v landed after one of its commits was fenced", res.c)
		case res.err == nil && res.c.NextOffset > afterTakeOver.NextOffset:
			// It returned nil, so it must have been applied before the take-over.
			return fmt.Errorf("old owner's commit %+v succeeded but landed after the take-over, which read %+v", res.c, afterTakeOver)
		case res.err == nil:
		case errors.Is(res.err, store.ErrFenced) && r >= 3:
			fencedSeen = true
		default:
			return fmt.Errorf("old owner's commit %+v: %w, want nil before the take-over and ErrFenced after", res.c, res.err)
		}
	}
	if !fencedSeen {
		return fmt.Errorf("partition %d: no commit of the old owner was fenced after the take-over", k.partition)
	}
	for _, res := range newRes {
		if res.err != nil {
			return fmt.Errorf("new owner's commit %+v: %w", res.c, res.err)
		}
	}
	for _, res := range fencedRes {
		if !errors.Is(res.err, store.ErrFenced) {
			return fmt.Errorf("commit %+v: %v, want ErrFenced", res.c, res.err)
		}
	}
	for _, c := range observed {
		if c.Metadata == "fenced" {
			return fmt.Errorf("a fenced commit landed: %+v", c)
		}
	}
	want := commitRow(k, newOffset, 2, 100+newRounds-1, fmt.Sprintf("new-%d", newRounds-1))
	if got, err := m.GetCommit(ctx, k.group, k.topic, k.partition); err != nil || !sameCommit(got, want) {
		return fmt.Errorf("GetCommit after the race = %+v, %v; want %+v", got, err, want)
	}
	if got, err := m.GetAssignment(ctx, k.group, k.topic, k.partition); err != nil || normAssignment(got) != normAssignment(lease(k, "m-2", 2, 900_000)) {
		return fmt.Errorf("GetAssignment after the race = %+v, %v; want m-2 at generation 2", got, err)
	}
	return nil
}

func testRaceEnsureGroup(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "g")
	const n = 8
	errs := make([]error, n)
	got := make([]store.GroupConfig, n)
	race(n, func(i int) {
		errs[i] = retryUnavailable(func() error {
			var err error
			got[i], err = m.EnsureGroup(ctx, store.GroupConfig{Name: name, ResetPolicy: "earliest", MaxAttempts: i + 1, CreatedAt: at(int64(i))})
			return err
		})
	})
	must(t, "concurrent EnsureGroup", errors.Join(errs...))
	stored, err := m.GetGroup(ctx, name)
	must(t, "GetGroup", err)
	if stored.MaxAttempts < 1 || stored.MaxAttempts > n || !stored.CreatedAt.Equal(at(int64(stored.MaxAttempts-1))) {
		t.Fatalf("GetGroup = %+v is none of the configs ensured", stored)
	}
	for i, g := range got {
		if normGroup(g) != normGroup(stored) {
			t.Fatalf("EnsureGroup %d returned %+v, but %+v is stored", i, g, stored)
		}
	}
}
