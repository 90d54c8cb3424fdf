package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// fenceCases specify SequencerStore.FenceRequest and the fences a topic commit topic's
// batches carry (fenced idempotency), and the members table location of index entries.
func fenceCases() []testCase[store.MetaStore] {
	return []testCase[store.MetaStore]{
		{"LaterBatchesCarryTheFence", testFenceCarried},
		{"FencePointIsStateBefore", testFencePoint},
		{"LowerOrSameAttemptSuperseded", testFenceSuperseded},
		{"SequencerStateCarriesFences", testFenceOnState},
		{"FencedProducerMemberSkipped", testFencedMemberSkipped},
		{"FencesPrunedByCommitsOnly", testFencePruning},
		{"RefusedFenceChangesNothing", testFenceRefused},
		{"EntryMembersRoundTrip", testEntryMembers},
		{"FencesBounded", testFencesBounded},
		{"EarlierFenceKeepsApplying", testEarlierFenceKeeps},
		{"FencesBoundedPerOwner", testFencesPerOwner},
		{"FenceAttemptsBounded", testFenceAttemptsBounded},
	}
}

// batchAt is batchOf with the batch's append time at (and its expiry a day later).
func batchAt(topic, object string, appended time.Time, pcs ...[2]int64) []store.SeqCommit {
	cs := batchOf(topic, object, pcs...)
	for i := range cs {
		cs[i].Entry.AppendedAt, cs[i].Entry.ExpiresAt = appended, appended.Add(24*time.Hour)
	}
	return cs
}

// commitBatch sequences cs as AppendBatch does and returns the commits as SequenceBatch
// answered them.
func commitBatch(ctx context.Context, t *testing.T, m store.MetaStore, cs []store.SeqCommit) []store.SeqCommit {
	t.Helper()
	var out []store.SeqCommit
	err := retryUnavailable(func() error {
		var errs []error
		out, errs = m.SequenceBatch(ctx, cs)
		return errors.Join(errs...)
	})
	must(t, "SequenceBatch", err)
	for _, c := range out {
		if c.Materialized {
			continue
		}
		err := retryUnavailable(func() error { return m.PutIndexEntry(ctx, c.Entry) })
		var ce *store.ConflictError
		if errors.As(err, &ce) && ce.Existing.ObjectKey == c.Entry.ObjectKey && ce.Existing.ByteOffset == c.Entry.ByteOffset {
			err = nil
		}
		must(t, fmt.Sprintf("index entry at %d", c.Entry.BaseOffset), err)
	}
	return out
}

func fence(ctx context.Context, t *testing.T, m store.MetaStore, topic string, f store.RequestFence) store.FencePoint {
	t.Helper()
	var fp store.FencePoint
	must(t, fmt.Sprintf("FenceRequest(%s, %+v)", topic, f), retryUnavailable(func() error {
		var err error
		fp, err = m.FenceRequest(ctx, topic, f)
		return err
	}))
	return fp
}

// normFences are fences with times in UTC milliseconds, none as nil.
func normFences(fs []store.RequestFence) []store.RequestFence {
	var out []store.RequestFence
	for _, f := range fs {
		f.At = msTime(f.At)
		out = append(out, f)
	}
	return out
}

// wantBatchFences checks every commit of a batch: numbered batch, carrying exactly want
// (in key order).
func wantBatchFences(t *testing.T, what string, cs []store.SeqCommit, batch int64, want ...store.RequestFence) {
	t.Helper()
	slices.SortFunc(want, func(a, b store.RequestFence) int { return strings.Compare(a.Key, b.Key) })
	for i, c := range cs {
		got := normFences(c.Fences)
		if c.Batch != batch || !slices.Equal(got, normFences(want)) {
			t.Fatalf("%s: commit %d is of batch %d with fences %+v, want batch %d with %+v", what, i, c.Batch, got, batch, normFences(want))
		}
	}
}

// wantPoint checks a fence point, a partition absent from either side being at 0.
func wantPoint(t *testing.T, what string, got store.FencePoint, batch int64, next map[int32]int64) {
	t.Helper()
	g := maps.Clone(got.Next)
	maps.DeleteFunc(g, func(_ int32, v int64) bool { return v == 0 })
	if got.Batch != batch || !maps.Equal(g, next) {
		t.Fatalf("%s: fence point %+v, want batch %d, high watermarks %v", what, got, batch, next)
	}
}

// testFenceCarried: every batch committed after a fence carries it (until the
// horizon), numbered above the fence's batch, and the fence applies there to the lower
// attempts of its key only.
func testFenceCarried(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	key, other := topic+"#k1", topic+"#k2"
	b1 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 2}, [2]int64{1, 3}))
	wantBatchFences(t, "the first batch", b1, 1)
	fp := fence(ctx, t, m, topic, store.RequestFence{Key: key, Attempt: 1, At: at(200)})
	want := store.RequestFence{Key: key, Attempt: 1, Batch: fp.Batch, At: at(200)}
	b2 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}, [2]int64{2, 1}))
	wantBatchFences(t, "the batch after the fence", b2, 2, want)
	b3 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/c", [2]int64{1, 1}))
	wantBatchFences(t, "the second batch after the fence", b3, 3, want)
	for _, c := range append(b2, b3...) {
		f := c.Fences[0]
		if c.Batch <= fp.Batch || !f.Applies(key, 0, c.Batch) || f.Applies(key, 1, c.Batch) || f.Applies(other, 0, c.Batch) {
			t.Fatalf("fence %+v in batch %d (fence point %d): applies to attempt 0 %v, 1 %v, another key %v; want true, false, false",
				f, c.Batch, fp.Batch, f.Applies(key, 0, c.Batch), f.Applies(key, 1, c.Batch), f.Applies(other, 0, c.Batch))
		}
	}
}

// testFencePoint: a fence's point is the topic's state after the last batch before it
// (its number and every partition's high watermark), and no batch before it carries
// it; on a topic never written the point is zero and the first batch carries it.
func testFencePoint(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 2}, [2]int64{1, 3}))
	b2 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{1, 1}, [2]int64{3, 4}))
	wantBatchFences(t, "the batch before the fence", b2, 2)
	fp := fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#k", Attempt: 1, At: at(300)})
	wantPoint(t, "after two batches", fp, 2, map[int32]int64{0: 2, 1: 4, 3: 4})

	fresh := TopicCommitID(t)
	fp = fence(ctx, t, m, fresh, store.RequestFence{Key: fresh + "#k", Attempt: 3, At: at(300)})
	wantPoint(t, "on a topic never written", fp, 0, map[int32]int64{})
	b1 := commitBatch(ctx, t, m, batchOf(fresh, "v1/o/c", [2]int64{2, 1}))
	wantBatchFences(t, "the first batch of a fenced topic", b1, 1, store.RequestFence{Key: fresh + "#k", Attempt: 3, At: at(300)})
	if b1[0].Entry.BaseOffset != 0 {
		t.Fatalf("the first batch after a fence at %d, want 0", b1[0].Entry.BaseOffset)
	}
}

// testFenceSuperseded: a fence of a key whose stored fence has the same or a higher
// attempt is ErrSuperseded and changes nothing; a higher attempt's fence is added beside
// the earlier one.
func testFenceSuperseded(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	key := topic + "#k"
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	fp := fence(ctx, t, m, topic, store.RequestFence{Key: key, Attempt: 2, At: at(10)})
	for _, attempt := range []int32{2, 1} {
		_, err := m.FenceRequest(ctx, topic, store.RequestFence{Key: key, Attempt: attempt, At: at(20)})
		wantErrIs(t, fmt.Sprintf("a fence of attempt %d after one of 2", attempt), err, store.ErrSuperseded)
	}
	b2 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	wantBatchFences(t, "after refused fences", b2, 2, store.RequestFence{Key: key, Attempt: 2, Batch: fp.Batch, At: at(10)})
	fp3 := fence(ctx, t, m, topic, store.RequestFence{Key: key, Attempt: 3, At: at(30)})
	wantPoint(t, "the replacing fence", fp3, 2, map[int32]int64{0: 2})
	b3 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/c", [2]int64{0, 1}))
	wantFenceBatches(t, "after a higher attempt's fence", b3[0], 3, map[int32]int64{2: fp.Batch, 3: 2})
}

// wantFenceBatches checks a commit of batch numbered batch against the fences of one key
// it must carry, by attempt → the batch it was set at (a backend may report the key's
// latest time for its earlier fences).
func wantFenceBatches(t *testing.T, what string, c store.SeqCommit, batch int64, want map[int32]int64) {
	t.Helper()
	got := map[int32]int64{}
	for _, f := range c.Fences {
		got[f.Attempt] = f.Batch
	}
	if c.Batch != batch || !maps.Equal(got, want) {
		t.Fatalf("%s: batch %d with fences (attempt → batch) %v, want batch %d with %v", what, c.Batch, got, batch, want)
	}
}

// testEarlierFenceKeeps: a later attempt's fence does not take the earlier one's place.
// The batch committed between the two is decided by the earlier (attempt 0 fenced, 1
// not), and every later view of it — the sequencer state while it is the newest batch,
// as a lost answer's resolution or a fence's stream record sees it — decides the same.
func testEarlierFenceKeeps(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	key := topic + "#k"
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	fence(ctx, t, m, topic, store.RequestFence{Key: key, Attempt: 1, At: at(10)})
	b2 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	fence(ctx, t, m, topic, store.RequestFence{Key: key, Attempt: 2, At: at(20)})
	decides := func(c store.SeqCommit) (fenced0, fenced1 bool) {
		for _, f := range c.Fences {
			fenced0 = fenced0 || f.Applies(key, 0, c.Batch)
			fenced1 = fenced1 || f.Applies(key, 1, c.Batch)
		}
		return
	}
	var st store.SeqState
	must(t, "Sequencer", retryUnavailable(func() error {
		var err error
		st, err = m.Sequencer(ctx, topic, 0)
		return err
	}))
	if st.Last == nil || st.Last.Batch != b2[0].Batch {
		t.Fatalf("sequencer state's last commit %+v, want batch %d's", st.Last, b2[0].Batch)
	}
	for what, c := range map[string]store.SeqCommit{"the commit's answer": b2[0], "the state after a later fence": *st.Last} {
		if f0, f1 := decides(c); !f0 || f1 {
			t.Fatalf("%s: attempt 0 fenced %t, attempt 1 fenced %t in the batch between the fences; want true, false", what, f0, f1)
		}
	}
}

// testFenceOnState: the sequencer state's last commit carries its batch's number and
// the topic's fences, as the stream's states do, so a materialiser decides as the
// appender did.
func testFenceOnState(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}, [2]int64{1, 1}))
	fp := fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#k", Attempt: 1, At: at(10)})
	b2 := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 2}))
	st, err := m.Sequencer(ctx, topic, 0)
	must(t, "Sequencer", err)
	if st.Last == nil {
		t.Fatalf("Sequencer(0) = %+v, want the second batch's commit", st)
	}
	wantBatchFences(t, "Sequencer(0).Last", []store.SeqCommit{*st.Last}, b2[0].Batch,
		store.RequestFence{Key: topic + "#k", Attempt: 1, Batch: fp.Batch, At: at(10)})
}

// testFencedMemberSkipped: a producer member's block is skipped in a batch a fence of
// its key applies to (a lower attempt), not otherwise, and a producer member is never
// claimed; a materialising backend writes that skip into the entry.
func testFencedMemberSkipped(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	key, other := topic+"#req", topic+"#other"
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	fence(ctx, t, m, topic, store.RequestFence{Key: key, Attempt: 2, At: at(10)})
	cs := batchOf(topic, "v1/o/b", [2]int64{0, 6})
	cs[0].Members = []store.CommitMember{
		{Key: key, Total: 2, Partitions: 1, Offset: 0, Count: 2, Producer: true, Attempt: 0},
		{Key: key, Total: 2, Partitions: 1, Offset: 2, Count: 2, Producer: true, Attempt: 2},
		{Key: other, Total: 2, Partitions: 1, Offset: 4, Count: 2, Producer: true, Attempt: 1},
	}
	cs[0].MembersOffset, cs[0].MembersLength = 60, 90
	out := commitBatch(ctx, t, m, cs)
	want := []store.SkipRange{{Offset: 0, Count: 2}}
	if got := store.SkipFor(out[0]); !slices.Equal(got, want) {
		t.Fatalf("SkipFor(the fenced batch's commit %+v) = %v, want the fenced attempt's block %v", out[0], got, want)
	}
	if out[0].Materialized {
		es, err := m.IndexEntries(ctx, topic, 0, out[0].Entry.BaseOffset, 1)
		must(t, "IndexEntries", err)
		var got []store.SkipRange
		if len(es) == 1 {
			got, err = es[0].SkipRanges()
			must(t, "SkipRanges", err)
		}
		if len(es) != 1 || !slices.Equal(got, want) {
			t.Fatalf("the materialised entry %+v skips %v, want %v", es, got, want)
		}
	}
	for _, k := range []string{key, other} {
		c, err := m.GetRequestClaim(ctx, k, []int32{0})
		wantErrIs(t, fmt.Sprintf("GetRequestClaim(%s) after a batch of producer members (%+v)", k, c), err, store.ErrNotFound)
	}
}

// testFencePruning: a fence request never drops a fence; a commit more than
// store.FenceHorizon after a fence was set may, and within two such commits it has;
// a fence within the horizon stays.
func testFencePruning(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	commitBatch(ctx, t, m, batchAt(topic, "v1/o/a", at(100), [2]int64{0, 1}))
	late := at(0).Add(store.FenceHorizon + 2*time.Minute)
	fpOld := fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#old", Attempt: 1, At: at(0)})
	fpNew := fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#new", Attempt: 1, At: late.Add(-time.Minute)})
	old := store.RequestFence{Key: topic + "#old", Attempt: 1, Batch: fpOld.Batch, At: at(0)}
	fresh := store.RequestFence{Key: topic + "#new", Attempt: 1, Batch: fpNew.Batch, At: late.Add(-time.Minute)}
	b := commitBatch(ctx, t, m, batchAt(topic, "v1/o/b", at(200), [2]int64{0, 1}))
	wantBatchFences(t, "a batch within both fences' horizon, after a later fence", b, 2, old, fresh)
	commitBatch(ctx, t, m, batchAt(topic, "v1/o/c", late, [2]int64{0, 1}))
	commitBatch(ctx, t, m, batchAt(topic, "v1/o/d", late, [2]int64{0, 1}))
	b = commitBatch(ctx, t, m, batchAt(topic, "v1/o/e", late, [2]int64{0, 1}))
	wantBatchFences(t, "the third batch past the old fence's horizon", b, 5, fresh)
	st, err := m.Sequencer(ctx, topic, 0)
	must(t, "Sequencer", err)
	if st.Last == nil {
		t.Fatalf("Sequencer(0) = %+v, want the last batch's commit", st)
	}
	wantBatchFences(t, "Sequencer(0).Last after pruning", []store.SeqCommit{*st.Last}, 5, fresh)
}

// testFenceRefused: a fence on a topic of another layout, or of no key or attempt, is
// refused with an error (not ErrSuperseded) and changes nothing.
func testFenceRefused(ctx context.Context, t *testing.T, m store.MetaStore) {
	legacy := UniqueName(t, "t")
	commit(ctx, t, m, entry(legacy, 0, 0, 2))
	_, err := m.FenceRequest(ctx, legacy, store.RequestFence{Key: legacy + "#k", Attempt: 1, At: at(0)})
	if err == nil || errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("FenceRequest on a topic of per-partition counters = %v, want an error", err)
	}
	wantNextOffset(ctx, t, m, legacy, 0, 2)
	out := commitBatch(ctx, t, m, batchOf(legacy, "v1/o/a", [2]int64{0, 1}))
	wantBatchFences(t, "a batch of a topic of per-partition counters", out, 0)

	topic := TopicCommitID(t)
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	for _, f := range []store.RequestFence{
		{Key: "", Attempt: 1, At: at(0)},
		{Key: topic + "#k", Attempt: 0, At: at(0)},
		{Key: topic + "#k", Attempt: -1, At: at(0)},
		{Key: topic + "#k", Attempt: 1},
	} {
		if _, err := m.FenceRequest(ctx, topic, f); err == nil || errors.Is(err, store.ErrSuperseded) {
			t.Fatalf("FenceRequest(%+v) = %v, want an error", f, err)
		}
	}
	out = commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	wantBatchFences(t, "a batch after refused fences", out, 2)
}

// testEntryMembers: an entry's members table location round-trips (zero when none),
// and a batch's commit carries its own into the entry written for it.
func testEntryMembers(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	e := entry(topic, 0, 0, 3)
	e.MembersOffset, e.MembersLength = 1<<33+7, 96
	none := entry(topic, 0, 3, 2)
	putEntries(ctx, t, m, e, none)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, []store.IndexEntry{e, none})

	cs := batchOf(topic, "v1/o/a", [2]int64{1, 2}, [2]int64{2, 1})
	for i := range cs {
		cs[i].MembersOffset, cs[i].MembersLength = 700, 40
	}
	out := commitBatch(ctx, t, m, cs)
	for i, c := range out {
		if c.Entry.MembersOffset != 700 || c.Entry.MembersLength != 40 {
			t.Fatalf("commit %d's entry %+v does not carry its members table [700, +40)", i, c.Entry)
		}
		wantIndexEntries(ctx, t, m, topic, c.Entry.Partition, 0, 10, []store.IndexEntry{c.Entry})
	}
}

// fenceLimits are the bounds m holds a topic's fences to: its own when it says (a
// harness may open it with small ones, so reaching them takes few writes), else the
// defaults.
func fenceLimits(m store.MetaStore) store.FenceLimits {
	if l, ok := m.(interface{ FenceLimits() store.FenceLimits }); ok {
		return l.FenceLimits().OrDefault()
	}
	return store.FenceLimits{}.OrDefault()
}

// testFencesBounded: a topic holding its limit of fences (its owners within their
// share) refuses a fence of a new key with ErrUnavailable, changing nothing, while a
// later attempt of a fenced key still fences: a storm of retries cannot grow the topic
// item without bound.
func testFencesBounded(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	lim := fenceLimits(m)
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	for i := range lim.Fences {
		fence(ctx, t, m, topic, store.RequestFence{Key: fmt.Sprintf("%s#p.%d", topic, i), Owner: fmt.Sprintf("o%d", i/lim.OwnerFences),
			Attempt: 1, At: at(0)})
	}
	_, err := m.FenceRequest(ctx, topic, store.RequestFence{Key: topic + "#one-more", Owner: "another", Attempt: 1, At: at(0)})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("fence %d of a topic: %v, want ErrUnavailable", lim.Fences+1, err)
	}
	fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#p.0", Owner: "o0", Attempt: 2, At: at(0)})
	out := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	keys := map[string]bool{}
	for _, f := range out[0].Fences {
		keys[f.Key] = true
	}
	if len(keys) != lim.Fences || len(out[0].Fences) != lim.Fences+1 {
		t.Fatalf("the batch after a refused fence carries %d fences of %d keys, want %d of %d",
			len(out[0].Fences), len(keys), lim.Fences+1, lim.Fences)
	}
	for _, f := range out[0].Fences {
		if f.Key == topic+"#one-more" {
			t.Fatal("the refused fence is on the topic")
		}
	}
}

// testFencesPerOwner: an owner retrying alone fences past its OwnerFences keys, while
// the topic has room, up to Fences-OwnerFences (the store's FenceLimits); a fence of a
// new key then is refused with ErrFenceLimit, changing nothing, while a later attempt of
// a key it holds still fences and another owner (the in-process owner "" too) still
// fences new keys: the last OwnerFences are the others', so one owner's retries
// never use up another's. Fences carry their owner.
func testFencesPerOwner(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	share := fenceLimits(m).Share()
	for i := range share {
		fence(ctx, t, m, topic, store.RequestFence{Key: fmt.Sprintf("%s#a.%d", topic, i), Owner: "a", Attempt: 1, At: at(0)})
	}
	_, err := m.FenceRequest(ctx, topic, store.RequestFence{Key: topic + "#a.more", Owner: "a", Attempt: 1, At: at(0)})
	if !errors.Is(err, store.ErrFenceLimit) {
		t.Fatalf("fence of key %d of one owner: %v, want ErrFenceLimit", share+1, err)
	}
	fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#a.0", Owner: "a", Attempt: 2, At: at(0)})
	fpB := fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#b.0", Owner: "b", Attempt: 1, At: at(5)})
	fpIn := fence(ctx, t, m, topic, store.RequestFence{Key: topic + "#in.0", Attempt: 1, At: at(6)})
	out := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	keys := map[string]string{}
	for _, f := range out[0].Fences {
		keys[f.Key] = f.Owner
	}
	if len(keys) != share+2 || keys[topic+"#a.0"] != "a" {
		t.Fatalf("the batch after a refused fence carries fences of %d keys (a.0 owned by %q), want %d (owned by %q)",
			len(keys), keys[topic+"#a.0"], share+2, "a")
	}
	if _, ok := keys[topic+"#a.more"]; ok {
		t.Fatal("the refused fence is on the topic")
	}
	var got []store.RequestFence
	for _, f := range out[0].Fences {
		if f.Owner != "a" {
			got = append(got, f)
		}
	}
	want := []store.RequestFence{
		{Key: topic + "#b.0", Owner: "b", Attempt: 1, Batch: fpB.Batch, At: at(5)},
		{Key: topic + "#in.0", Attempt: 1, Batch: fpIn.Batch, At: at(6)},
	}
	slices.SortFunc(got, func(a, b store.RequestFence) int { return strings.Compare(a.Key, b.Key) })
	if !slices.Equal(normFences(got), normFences(want)) {
		t.Fatalf("the other owners' fences %+v, want %+v", normFences(got), normFences(want))
	}
}

// testFenceAttemptsBounded: attempts up to store.MaxFenceAttempts fence; a later one is
// refused with ErrFenceLimit and changes nothing, so no client can pile attempts on one
// key to grow the topic item.
func testFenceAttemptsBounded(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	key := topic + "#k"
	commitBatch(ctx, t, m, batchOf(topic, "v1/o/a", [2]int64{0, 1}))
	fp := fence(ctx, t, m, topic, store.RequestFence{Key: key, Owner: "a", Attempt: store.MaxFenceAttempts, At: at(10)})
	for _, attempt := range []int32{store.MaxFenceAttempts + 1, store.MaxFenceAttempts + 100} {
		_, err := m.FenceRequest(ctx, topic, store.RequestFence{Key: key, Owner: "a", Attempt: attempt, At: at(20)})
		wantErrIs(t, fmt.Sprintf("a fence of attempt %d", attempt), err, store.ErrFenceLimit)
	}
	_, err := m.FenceRequest(ctx, topic, store.RequestFence{Key: topic + "#new", Owner: "a", Attempt: store.MaxFenceAttempts + 1, At: at(20)})
	wantErrIs(t, "a new key's fence past the attempts bound", err, store.ErrFenceLimit)
	out := commitBatch(ctx, t, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	wantBatchFences(t, "after refused attempts", out, 2, store.RequestFence{Key: key, Owner: "a", Attempt: store.MaxFenceAttempts, Batch: fp.Batch, At: at(10)})
}
