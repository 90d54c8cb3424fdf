package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

func metaStoreSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Topics", []testCase[store.MetaStore]{
			{"CreateThenGet", testTopicCreateGet},
			{"CreateExistingKeepsFirst", testTopicExists},
			{"GetUnknown", testTopicUnknown},
			{"ListSorted", testTopicList},
		}},
		{"Index", []testCase[store.MetaStore]{
			{"FieldsRoundTrip", testIndexRoundTrip},
			{"SkipRunsRoundTrip", testIndexSkipRoundTrip},
			{"ConflictHoldsExisting", testIndexConflict},
			{"LastOfEmptyPartition", testIndexLastEmpty},
			{"OffsetsAcrossByteBoundaries", testIndexByteBoundaries},
			{"EntriesFromContainingEntry", testIndexEntriesSemantics},
			{"EntriesFromBeforeFirst", testIndexEntriesBeforeFirst},
			{"PartitionsAndTopicsIsolated", testIndexIsolation},
			{"DeleteIndexEntry", testDeleteIndexEntry},
			{"DeleteIndexRange", testDeleteIndexRange},
		}},
		{"Sequencer", sequencerCases()},
		{"Batch", batchCases()},
		{"Fences", fenceCases()},
		{"Idempotency", []testCase[store.MetaStore]{
			{"ClaimOnce", testIdemClaimOnce},
			{"KeyIsPerPartition", testIdemPerPartition},
			{"FoldedClaimSlotsAreWriteOnce", testFoldedClaim},
			{"FoldedClaimResolvesLegacyRows", testFoldedClaimLegacy},
			{"GetUnknown", testIdemUnknown},
		}},
		{"Partitions", []testCase[store.MetaStore]{
			{"LogStartNeverLowers", testLogStart},
			{"LogStartNeverPassesEnd", testLogStartBeyondEnd},
		}},
		{"Leases", []testCase[store.MetaStore]{
			{"GetUnknown", testLeaseUnknown},
			{"AcquireNew", testLeaseAcquireNew},
			{"HeldByLiveOther", testLeaseHeld},
			{"TakeOverExpired", testLeaseTakeOver},
			{"ReacquireBySameMember", testLeaseReacquire},
			{"Renew", testLeaseRenew},
			{"Release", testLeaseRelease},
			{"IncarnationsIsolated", testLeaseIncarnationsIsolated},
		}},
		{"Commits", []testCase[store.MetaStore]{
			{"GetUnknown", testCommitUnknown},
			{"OwnerCommitsMonotonic", testCommitMonotonic},
			{"FencedChangesNothing", testCommitFenced},
			{"CompletedRangesStored", testCommitCompleted},
			{"ResetRefusedWhileLive", testResetLive},
			{"ResetAfterExpiryOrRelease", testResetAllowed},
			{"ResetFencesLapsedOwner", testResetFences},
			{"ListOrderedAndIsolated", testListAssignmentsCommits},
			{"BackwardByOwnerOnly", testCommitBackward},
			{"RenewOrReleaseRidesInCommit", testCommitLease},
			{"MetadataRoundTrip", testCommitMetadata},
		}},
		{"Names", nameCases()},
		{"Groups", []testCase[store.MetaStore]{
			{"EnsureIdempotent", testEnsureGroup},
			{"GetUnknown", testGroupUnknown},
			{"MembersHeartbeatLiveRemove", testMembers},
		}},
		{"Races", []testCase[store.MetaStore]{
			{"PutIndexEntrySameBase", testRacePutIndexEntry},
			{"SequencerTilesOffsets", testRaceSequencer},
			{"BatchesOrderedAlike", testRaceBatches},
			{"SequencerAgainstSeeding", testRaceSequencerSeed},
			{"IdempotencyKeyOnce", testRaceIdempotency},
			{"CreateTopicOnce", testRaceCreateTopic},
			{"AcquireFreeLeaseOnce", testRaceAcquire},
			{"FencedCommitNeverLands", testRaceCommit},
			{"EnsureGroupAgrees", testRaceEnsureGroup},
		}},
	}
}

// --- topics ---

func testTopicCreateGet(ctx context.Context, t *testing.T, m store.MetaStore) {
	tp := store.Topic{Name: UniqueName(t, "t"), Partitions: 8, Retention: 36 * time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	got, err := m.GetTopic(ctx, tp.Name)
	must(t, "GetTopic", err)
	if normTopic(got) != normTopic(tp) {
		t.Fatalf("GetTopic = %+v, want %+v", got, tp)
	}
}

func testTopicExists(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "t")
	first := store.Topic{Name: name, Partitions: 3, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, first))
	second := store.Topic{Name: name, Partitions: 1024, Retention: 48 * time.Hour, CreatedAt: at(5000)}
	wantErrIs(t, "CreateTopic of an existing name", m.CreateTopic(ctx, second), store.ErrExists)
	got, err := m.GetTopic(ctx, name)
	must(t, "GetTopic", err)
	if normTopic(got) != normTopic(first) {
		t.Fatalf("GetTopic after a refused create = %+v, want the first %+v", got, first)
	}
}

func testTopicUnknown(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "t")
	must(t, "CreateTopic", m.CreateTopic(ctx, store.Topic{Name: name, Partitions: 1, Retention: time.Hour, CreatedAt: at(0)}))
	for _, unknown := range []string{UniqueName(t, "t"), name + "x", name[:len(name)-1]} {
		_, err := m.GetTopic(ctx, unknown)
		wantErrIs(t, fmt.Sprintf("GetTopic(%q)", unknown), err, store.ErrNotFound)
	}
}

func testTopicList(ctx context.Context, t *testing.T, m store.MetaStore) {
	base := UniqueName(t, "t")
	suffixes := []string{"-b", "-a.x", "0", "-a", "-c", ""}
	for i, s := range suffixes {
		must(t, "CreateTopic", m.CreateTopic(ctx, store.Topic{Name: base + s, Partitions: int32(i + 1), Retention: time.Hour, CreatedAt: at(int64(i))}))
	}
	names, err := m.ListTopics(ctx)
	must(t, "ListTopics", err)
	if !slices.IsSorted(names) {
		t.Fatalf("ListTopics is not sorted: %q", names)
	}
	var ours []string
	for _, n := range names {
		if strings.HasPrefix(n, base) {
			ours = append(ours, n)
		}
	}
	want := []string{base, base + "-a", base + "-a.x", base + "-b", base + "-c", base + "0"}
	if !slices.Equal(ours, want) {
		t.Fatalf("ListTopics has %q of this test's topics, want %q", ours, want)
	}
}

// --- index ---

// entry returns a fully populated entry of [base, base+count) whose other fields are
// derived from base, so a mixed-up row is noticed.
func entry(topic string, partition int32, base, count int64) store.IndexEntry {
	return store.IndexEntry{
		Topic:        topic,
		Partition:    partition,
		BaseOffset:   base,
		Count:        count,
		ObjectKey:    fmt.Sprintf("v1/%s/obj-%d-%d", topic, partition, base),
		ByteOffset:   base%4096 + 7,
		ByteLength:   count*100 + 13,
		MaxTimestamp: at(base%100000 + 1),
		AppendedAt:   at(base%100000 + 2),
		ExpiresAt:    at(base%100000 + 86_400_000),
	}
}

// tiling returns entries of topic/partition covering [bases[0], end) with the given bases.
func tiling(topic string, partition int32, end int64, bases ...int64) []store.IndexEntry {
	es := make([]store.IndexEntry, len(bases))
	for i, b := range bases {
		next := end
		if i+1 < len(bases) {
			next = bases[i+1]
		}
		es[i] = entry(topic, partition, b, next-b)
	}
	return es
}

// testIndexSkipRoundTrip: an entry's skip runs (the blocks of idempotent attempts
// another owns, folded claims) read back as written, and decode to the runs.
func testIndexSkipRoundTrip(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	e := entry(topic, 0, 0, 10)
	e.Skip = store.EncodeSkip([]store.SkipRange{{Offset: 2, Count: 3}, {Offset: 7, Count: 1}})
	putEntries(ctx, t, m, e)
	wantLast(ctx, t, m, topic, 0, e, true)
	got, _, err := m.LastIndexEntry(ctx, topic, 0)
	must(t, "LastIndexEntry", err)
	runs, err := got.SkipRanges()
	must(t, "SkipRanges", err)
	if fmt.Sprint(runs) != "[{2 3} {7 1}]" {
		t.Fatalf("skip runs = %v, want [{2 3} {7 1}]", runs)
	}
}

func putEntries(ctx context.Context, t *testing.T, m store.MetaStore, es ...store.IndexEntry) {
	t.Helper()
	for _, e := range es {
		must(t, fmt.Sprintf("PutIndexEntry(%s/%d@%d)", e.Topic, e.Partition, e.BaseOffset), m.PutIndexEntry(ctx, e))
	}
}

func wantLast(ctx context.Context, t *testing.T, m store.IndexStore, topic string, partition int32, want store.IndexEntry, wantOK bool) {
	t.Helper()
	got, ok, err := m.LastIndexEntry(ctx, topic, partition)
	must(t, "LastIndexEntry", err)
	if ok != wantOK || (ok && normEntry(got) != normEntry(want)) {
		t.Fatalf("LastIndexEntry(%s/%d) = %+v, %v; want %+v, %v", topic, partition, got, ok, want, wantOK)
	}
}

func wantIndexEntries(ctx context.Context, t *testing.T, m store.IndexStore, topic string, partition int32, from int64, limit int, want []store.IndexEntry) {
	t.Helper()
	got, err := m.IndexEntries(ctx, topic, partition, from, limit)
	must(t, "IndexEntries", err)
	wantEntries(t, fmt.Sprintf("IndexEntries(%s/%d, from %d, limit %d)", topic, partition, from, limit), got, want)
}

// containing is the reference for IndexEntries: the entry with the greatest base <=
// from, if any, then the later ones, at most limit. es must be sorted.
func containing(es []store.IndexEntry, from int64, limit int) []store.IndexEntry {
	i, found := slices.BinarySearchFunc(es, from, func(e store.IndexEntry, off int64) int {
		return cmp.Compare(e.BaseOffset, off)
	})
	if !found && i > 0 {
		i--
	}
	out := es[i:]
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func testIndexRoundTrip(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	e := entry(topic, 7, 0, 42)
	e.ByteOffset, e.ByteLength = 1<<33+5, 6<<20
	putEntries(ctx, t, m, e)
	wantLast(ctx, t, m, topic, 7, e, true)
	wantIndexEntries(ctx, t, m, topic, 7, 0, 10, []store.IndexEntry{e})

	// A zero ExpiresAt means no TTL and must read back as the zero time.
	noTTL := entry(topic, 7, 42, 1)
	noTTL.ExpiresAt = time.Time{}
	putEntries(ctx, t, m, noTTL)
	wantLast(ctx, t, m, topic, 7, noTTL, true)
	wantIndexEntries(ctx, t, m, topic, 7, 0, 10, []store.IndexEntry{e, noTTL})
}

func testIndexConflict(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	first := entry(topic, 0, 100, 5)
	putEntries(ctx, t, m, first)
	other := entry(topic, 0, 100, 9)
	other.ObjectKey, other.ByteOffset, other.ExpiresAt = "v1/other", 1, time.Time{}
	for _, e := range []store.IndexEntry{other, first} {
		err := m.PutIndexEntry(ctx, e)
		var ce *store.ConflictError
		if !errors.As(err, &ce) {
			t.Fatalf("PutIndexEntry at a taken base: %v, want a *ConflictError", err)
		}
		wantErrIs(t, "PutIndexEntry at a taken base", err, store.ErrConflict)
		if normEntry(ce.Existing) != normEntry(first) {
			t.Fatalf("ConflictError.Existing = %+v, want the stored %+v", ce.Existing, first)
		}
	}
	wantLast(ctx, t, m, topic, 0, first, true)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, []store.IndexEntry{first})
}

func testIndexLastEmpty(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	wantLast(ctx, t, m, topic, 0, store.IndexEntry{}, false)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, nil)
	putEntries(ctx, t, m, entry(topic, 1, 0, 3))
	wantLast(ctx, t, m, topic, 0, store.IndexEntry{}, false)
	wantLast(ctx, t, m, topic, 2, store.IndexEntry{}, false)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, nil)
}

// testIndexByteBoundaries catches key encodings that do not sort numerically (decimal
// strings, little-endian, sign or width mistakes) and lookups that read the wrong row.
func testIndexByteBoundaries(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	const p = 3
	es := tiling(topic, p, 1<<40+10,
		0, 1, 9, 10, 11, 99, 100, 255, 256, 257, 65535, 65536, 1<<24, 1<<31, 1<<32, 1<<40, 1<<40+1)
	// Put them out of order: LastIndexEntry must be the greatest base, not the newest put.
	order := []int{5, 0, 16, 9, 2, 14, 7, 11, 1, 13, 3, 8, 15, 6, 10, 4, 12}
	if len(order) != len(es) {
		t.Fatalf("bad test: %d entries, %d in order", len(es), len(order))
	}
	var greatest store.IndexEntry
	for _, i := range order {
		putEntries(ctx, t, m, es[i])
		if es[i].BaseOffset >= greatest.BaseOffset {
			greatest = es[i]
		}
		wantLast(ctx, t, m, topic, p, greatest, true)
	}
	wantIndexEntries(ctx, t, m, topic, p, 0, 1000, es)
	for _, e := range es {
		for _, from := range []int64{e.BaseOffset - 1, e.BaseOffset} {
			if from < 0 {
				continue
			}
			wantIndexEntries(ctx, t, m, topic, p, from, 2, containing(es, from, 2))
		}
	}
}

func testIndexEntriesSemantics(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	es := tiling(topic, 0, 100, 0, 10, 15, 16)
	putEntries(ctx, t, m, es[2], es[0], es[3], es[1])
	for _, tc := range []struct {
		from  int64
		limit int
		want  []store.IndexEntry
	}{
		{0, 10, es},
		{0, 4, es},
		{0, 3, es[:3]},
		{0, 1, es[:1]},
		{5, 10, es},      // inside the first entry
		{9, 10, es},      // its last offset
		{10, 10, es[1:]}, // a boundary starts at the entry there
		{12, 2, es[1:3]},
		{14, 1, es[1:2]},
		{15, 10, es[2:]}, // a one-offset entry
		{16, 10, es[3:]},
		{99, 10, es[3:]},
		// From the high watermark or past it, the greatest base <= from is still the last entry.
		{100, 10, es[3:]},
		{1 << 50, 10, es[3:]},
	} {
		wantIndexEntries(ctx, t, m, topic, 0, tc.from, tc.limit, tc.want)
	}
}

func testIndexEntriesBeforeFirst(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	// Retention deleted the entries below 50: no entry contains 0..49.
	es := tiling(topic, 1, 70, 50, 60)
	putEntries(ctx, t, m, es...)
	wantIndexEntries(ctx, t, m, topic, 1, 0, 10, es)
	wantIndexEntries(ctx, t, m, topic, 1, 49, 10, es)
	wantIndexEntries(ctx, t, m, topic, 1, 10, 1, es[:1])
}

// testIndexIsolation: topics whose names prefix each other and partitions whose
// encodings share bytes (1, 10, 256) must not see each other's entries.
func testIndexIsolation(ctx context.Context, t *testing.T, m store.MetaStore) {
	base := UniqueName(t, "t")
	type tp struct {
		topic     string
		partition int32
	}
	parts := []tp{{base, 0}, {base, 1}, {base, 10}, {base, 256}, {base + "1", 0}, {base + "-1", 0}, {base + "0", 1}}
	want := map[tp][]store.IndexEntry{}
	for i, k := range parts {
		es := tiling(k.topic, k.partition, int64(2*i+3), 0, int64(i+1))
		putEntries(ctx, t, m, es...)
		want[k] = es
	}
	for _, k := range parts {
		es := want[k]
		wantLast(ctx, t, m, k.topic, k.partition, es[len(es)-1], true)
		wantIndexEntries(ctx, t, m, k.topic, k.partition, 0, 100, es)
	}
	wantLast(ctx, t, m, base, 2, store.IndexEntry{}, false)
	wantLast(ctx, t, m, base+"2", 0, store.IndexEntry{}, false)
}

// testDeleteIndexRange is retention's delete: only entries wholly below the cut go,
// never the entry holding the cut nor a later one nor another partition's.
func testDeleteIndexRange(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	// Partition 0: entries at 0, 10, 20, 40 (a gap at 30..40 where an entry was
	// deleted), ending at 50; partition 1 alike.
	es := append(tiling(topic, 0, 30, 0, 10, 20), entry(topic, 0, 40, 10))
	other := tiling(topic, 1, 50, 0, 10, 20, 40)
	putEntries(ctx, t, m, es...)
	putEntries(ctx, t, m, other...)

	deleteRange := func(below int64, want int) {
		t.Helper()
		n, err := m.DeleteIndexRange(ctx, topic, 0, below)
		must(t, fmt.Sprintf("DeleteIndexRange(below %d)", below), err)
		if n != want {
			t.Fatalf("DeleteIndexRange(below %d) = %d deleted, want %d", below, n, want)
		}
	}
	deleteRange(0, 0)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, es)
	deleteRange(15, 1) // 10..20 holds 15: kept
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, es[1:])
	deleteRange(15, 0)
	deleteRange(45, 2) // past the gap: 10 and 20 go, 40..50 holds 45
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, es[3:])
	deleteRange(50, 1)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, nil)
	wantIndexEntries(ctx, t, m, topic, 1, 0, 10, other)
	if n, err := m.DeleteIndexRange(ctx, topic+"x", 0, 100); err != nil || n != 0 {
		t.Fatalf("DeleteIndexRange of an unknown topic = %d, %v; want 0, nil", n, err)
	}
}

func testDeleteIndexEntry(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	es := tiling(topic, 0, 30, 0, 10, 20)
	putEntries(ctx, t, m, es...)

	must(t, "DeleteIndexEntry", m.DeleteIndexEntry(ctx, topic, 0, 20))
	wantLast(ctx, t, m, topic, 0, es[1], true)
	must(t, "DeleteIndexEntry again", m.DeleteIndexEntry(ctx, topic, 0, 20))
	must(t, "DeleteIndexEntry of an offset inside an entry", m.DeleteIndexEntry(ctx, topic, 0, 5))
	must(t, "DeleteIndexEntry of an unknown topic", m.DeleteIndexEntry(ctx, topic+"x", 0, 0))
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, es[:2])

	must(t, "DeleteIndexEntry of the first", m.DeleteIndexEntry(ctx, topic, 0, 0))
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, es[1:2])

	// The freed base can be written again.
	again := entry(topic, 0, 20, 4)
	again.ObjectKey = "v1/again"
	putEntries(ctx, t, m, again)
	wantLast(ctx, t, m, topic, 0, again, true)
}

// --- idempotency ---

func record(key string, partition int32, e store.IndexEntry, hash string) store.IdempotencyRecord {
	return store.IdempotencyRecord{
		Key: key, Partition: partition, BodyHash: hash,
		BaseOffset: e.BaseOffset, Count: e.Count, ExpiresAt: at(3_600_000),
	}
}

func wantRecord(ctx context.Context, t *testing.T, m store.MetaStore, want store.IdempotencyRecord) {
	t.Helper()
	got, err := m.GetIdempotency(ctx, want.Key, want.Partition)
	must(t, "GetIdempotency", err)
	if normRecord(got) != normRecord(want) {
		t.Fatalf("GetIdempotency = %+v, want %+v", got, want)
	}
}

func wantIdemErr(t *testing.T, err error, existing store.IdempotencyRecord) {
	t.Helper()
	var ie *store.IdempotencyError
	if !errors.As(err, &ie) {
		t.Fatalf("ClaimIdempotency with a used key: %v, want an *IdempotencyError", err)
	}
	wantErrIs(t, "ClaimIdempotency with a used key", err, store.ErrIdempotencyKeyUsed)
	if normRecord(ie.Existing) != normRecord(existing) {
		t.Fatalf("IdempotencyError.Existing = %+v, want the stored %+v", ie.Existing, existing)
	}
}

func wantConflictErr(t *testing.T, what string, err error, existing store.IndexEntry) {
	t.Helper()
	var ce *store.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: %v, want a *ConflictError", what, err)
	}
	wantErrIs(t, what, err, store.ErrConflict)
	if normEntry(ce.Existing) != normEntry(existing) {
		t.Fatalf("%s: ConflictError.Existing = %+v, want %+v", what, ce.Existing, existing)
	}
}

func testIdemClaimOnce(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, key := UniqueName(t, "t"), UniqueName(t, "idem")
	rec := record(key, 2, entry(topic, 2, 0, 5), "sha256:aa")
	must(t, "ClaimIdempotency", m.ClaimIdempotency(ctx, rec))
	wantRecord(ctx, t, m, rec)
	wantIdemErr(t, m.ClaimIdempotency(ctx, record(key, 2, entry(topic, 2, 5, 3), "sha256:bb")), rec)
	wantRecord(ctx, t, m, rec)

	// A request-level claim keeps the partition count its request was placed by.
	req := store.IdempotencyRecord{Key: key, Partition: -1, BodyHash: "sha256:aa", BaseOffset: -1, Count: 8,
		Partitions: 12, ExpiresAt: at(3_600_000)}
	must(t, "ClaimIdempotency of a request claim", m.ClaimIdempotency(ctx, req))
	wantRecord(ctx, t, m, req)
	wantIdemErr(t, m.ClaimIdempotency(ctx, store.IdempotencyRecord{Key: key, Partition: -1, BodyHash: "sha256:aa",
		BaseOffset: -1, Count: 8, Partitions: 24, ExpiresAt: at(3_600_000)}), req)
}

// wantClaim fails unless got is want (times at millisecond precision).
func wantClaim(t *testing.T, what string, got, want store.RequestClaim) {
	t.Helper()
	got.ExpiresAt, want.ExpiresAt = msTime(got.ExpiresAt), msTime(want.ExpiresAt)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %+v, want %+v", what, got, want)
	}
}

// testFoldedClaim: ClaimRequest stores a new key's claim, adds the slots a later
// attempt of the same request brings while keeping every slot already stored (the first
// attempt to claim a partition owns it) and its expiry, and changes nothing for another
// body or another placement.
func testFoldedClaim(ctx context.Context, t *testing.T, m store.MetaStore) {
	key := UniqueName(t, "idem")
	first := store.RequestClaim{Key: key, BodyHash: "sha256:aa", Count: 6, Partitions: 4, ExpiresAt: at(3_600_000),
		Parts: []store.PartClaim{{Partition: 3, BaseOffset: 10, Count: 2}, {Partition: 1, BaseOffset: 0, Count: 3}}}
	got, err := m.ClaimRequest(ctx, first)
	must(t, "ClaimRequest of a new key", err)
	want := first
	want.Parts = []store.PartClaim{{Partition: 1, BaseOffset: 0, Count: 3}, {Partition: 3, BaseOffset: 10, Count: 2}}
	wantClaim(t, "ClaimRequest of a new key", got, want)

	// A second attempt: partition 1 is taken (its slot stays), partition 2 is new.
	second := store.RequestClaim{Key: key, BodyHash: "sha256:aa", Count: 6, Partitions: 4, ExpiresAt: at(7_200_000),
		Parts: []store.PartClaim{{Partition: 1, BaseOffset: 40, Count: 3}, {Partition: 2, BaseOffset: 7, Count: 1}}}
	got, err = m.ClaimRequest(ctx, second)
	must(t, "ClaimRequest of a second attempt", err)
	want.Parts = []store.PartClaim{{Partition: 1, BaseOffset: 0, Count: 3}, {Partition: 2, BaseOffset: 7, Count: 1}, {Partition: 3, BaseOffset: 10, Count: 2}}
	wantClaim(t, "ClaimRequest of a second attempt", got, want)

	// Another body, or the body placed by another partition count, changes nothing.
	for _, other := range []store.RequestClaim{
		{Key: key, BodyHash: "sha256:bb", Count: 6, Partitions: 4, ExpiresAt: at(1), Parts: []store.PartClaim{{Partition: 0, BaseOffset: 5, Count: 6}}},
		{Key: key, BodyHash: "sha256:aa", Count: 6, Partitions: 8, ExpiresAt: at(1), Parts: []store.PartClaim{{Partition: 0, BaseOffset: 5, Count: 6}}},
	} {
		got, err = m.ClaimRequest(ctx, other)
		must(t, "ClaimRequest of another request", err)
		wantClaim(t, "ClaimRequest of another request", got, want)
	}
	got, err = m.ClaimRequest(ctx, second)
	must(t, "ClaimRequest again", err)
	wantClaim(t, "ClaimRequest after another request's", got, want)
	got, err = m.GetRequestClaim(ctx, key, []int32{0, 1})
	must(t, "GetRequestClaim", err)
	wantClaim(t, "GetRequestClaim", got, want)
	_, err = m.GetRequestClaim(ctx, UniqueName(t, "idem"), []int32{0})
	wantErrIs(t, "GetRequestClaim of an unknown key", err, store.ErrNotFound)
}

// testFoldedClaimLegacy: a key claimed in the per-partition format (a request row of
// partition -1 and a row per partition, as appends before folded claims wrote them) is
// still recognised: ClaimRequest answers the stored per-partition claims, claims the
// partitions that have none, and claims nothing for another body.
func testFoldedClaimLegacy(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, key := UniqueName(t, "t"), UniqueName(t, "idem")
	must(t, "ClaimIdempotency of a request row", m.ClaimIdempotency(ctx, store.IdempotencyRecord{Key: key, Partition: -1,
		BodyHash: "sha256:aa", BaseOffset: -1, Count: 5, Partitions: 4, ExpiresAt: at(3_600_000)}))
	must(t, "ClaimIdempotency of partition 0", m.ClaimIdempotency(ctx, record(key, 0, entry(topic, 0, 20, 2), "sha256:aa")))
	got, err := m.ClaimRequest(ctx, store.RequestClaim{Key: key, BodyHash: "sha256:aa", Count: 5, Partitions: 4, ExpiresAt: at(3_600_000),
		Parts: []store.PartClaim{{Partition: 0, BaseOffset: 90, Count: 2}, {Partition: 2, BaseOffset: 30, Count: 3}}})
	must(t, "ClaimRequest of a legacy key", err)
	wantClaim(t, "ClaimRequest of a legacy key", got, store.RequestClaim{Key: key, BodyHash: "sha256:aa", Count: 5, Partitions: 4,
		ExpiresAt: at(3_600_000), Parts: []store.PartClaim{{Partition: 0, BaseOffset: 20, Count: 2}, {Partition: 2, BaseOffset: 30, Count: 3}}})
	got, err = m.GetRequestClaim(ctx, key, []int32{0, 1, 2})
	must(t, "GetRequestClaim of a legacy key", err)
	wantClaim(t, "GetRequestClaim of a legacy key", got, store.RequestClaim{Key: key, BodyHash: "sha256:aa", Count: 5, Partitions: 4,
		ExpiresAt: at(3_600_000), Parts: []store.PartClaim{{Partition: 0, BaseOffset: 20, Count: 2}, {Partition: 2, BaseOffset: 30, Count: 3}}})
	rec, err := m.GetIdempotency(ctx, key, 2)
	must(t, "GetIdempotency of the partition ClaimRequest claimed", err)
	if rec.BaseOffset != 30 || rec.Count != 3 || rec.BodyHash != "sha256:aa" {
		t.Fatalf("partition 2's claim = %+v, want base 30, count 3", rec)
	}
	got, err = m.ClaimRequest(ctx, store.RequestClaim{Key: key, BodyHash: "sha256:bb", Count: 5, Partitions: 4, ExpiresAt: at(1),
		Parts: []store.PartClaim{{Partition: 3, BaseOffset: 50, Count: 5}}})
	must(t, "ClaimRequest of another body", err)
	if got.BodyHash != "sha256:aa" || len(got.Parts) != 0 {
		t.Fatalf("ClaimRequest of another body on a legacy key = %+v, want the stored hash and no slot", got)
	}
	_, err = m.GetIdempotency(ctx, key, 3)
	wantErrIs(t, "GetIdempotency of a partition another body asked for", err, store.ErrNotFound)
}

func testIdemPerPartition(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, key := UniqueName(t, "t"), UniqueName(t, "idem")
	var recs []store.IdempotencyRecord
	for _, p := range []int32{0, 1, 10} {
		_, err := m.GetIdempotency(ctx, key, p)
		wantErrIs(t, fmt.Sprintf("GetIdempotency(partition %d) before", p), err, store.ErrNotFound)
		e := entry(topic, p, 0, int64(p)+1)
		rec := record(key, p, e, fmt.Sprintf("sha256:%d", p))
		must(t, fmt.Sprintf("ClaimIdempotency(partition %d)", p), m.ClaimIdempotency(ctx, rec))
		recs = append(recs, rec)
	}
	for _, rec := range recs {
		wantRecord(ctx, t, m, rec)
	}
	// A key that extends another with "#1" is another key.
	longer := key + "#1"
	_, err := m.GetIdempotency(ctx, longer, 0)
	wantErrIs(t, "GetIdempotency of a longer key", err, store.ErrNotFound)
	e := entry(topic, 0, 1, 1)
	rec := record(longer, 0, e, "sha256:longer")
	must(t, "ClaimIdempotency with a longer key", m.ClaimIdempotency(ctx, rec))
	wantRecord(ctx, t, m, rec)
	wantRecord(ctx, t, m, recs[0])
}

func testIdemUnknown(ctx context.Context, t *testing.T, m store.MetaStore) {
	_, err := m.GetIdempotency(ctx, UniqueName(t, "idem"), 0)
	wantErrIs(t, "GetIdempotency of an unknown key", err, store.ErrNotFound)
}

// --- partitions ---

func wantLogStart(ctx context.Context, t *testing.T, m store.MetaStore, topic string, partition int32, want int64) {
	t.Helper()
	got, err := m.LogStart(ctx, topic, partition)
	must(t, "LogStart", err)
	if got != want {
		t.Fatalf("LogStart(%s/%d) = %d, want %d", topic, partition, got, want)
	}
}

func testLogStart(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	wantLogStart(ctx, t, m, topic, 0, 0)
	commit(ctx, t, m, entry(topic, 0, 0, 300))
	must(t, "AdvanceLogStart", m.AdvanceLogStart(ctx, topic, 0, 10))
	wantLogStart(ctx, t, m, topic, 0, 10)
	must(t, "AdvanceLogStart to a lower offset", m.AdvanceLogStart(ctx, topic, 0, 5))
	wantLogStart(ctx, t, m, topic, 0, 10)
	must(t, "AdvanceLogStart to the same offset", m.AdvanceLogStart(ctx, topic, 0, 10))
	wantLogStart(ctx, t, m, topic, 0, 10)
	must(t, "AdvanceLogStart", m.AdvanceLogStart(ctx, topic, 0, 256))
	must(t, "AdvanceLogStart to the end", m.AdvanceLogStart(ctx, topic, 0, 300))
	must(t, "AdvanceLogStart to a lower offset", m.AdvanceLogStart(ctx, topic, 0, 100))
	wantLogStart(ctx, t, m, topic, 0, 300)
	wantNextOffset(ctx, t, m, topic, 0, 300)

	commit(ctx, t, m, entry(topic, 10, 0, 3))
	must(t, "AdvanceLogStart of another partition", m.AdvanceLogStart(ctx, topic, 10, 3))
	wantLogStart(ctx, t, m, topic, 10, 3)
	wantLogStart(ctx, t, m, topic, 1, 0)
	wantLogStart(ctx, t, m, topic+"0", 0, 0)
	wantLogStart(ctx, t, m, topic, 0, 300)
}

// testLogStartBeyondEnd: the log start never passes the high watermark, and moving it
// never moves the high watermark.
func testLogStartBeyondEnd(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	err := m.AdvanceLogStart(ctx, topic, 0, 1)
	wantErrIs(t, "AdvanceLogStart of an empty partition", err, store.ErrBeyondEnd)
	commit(ctx, t, m, entry(topic, 0, 0, 4))
	err = m.AdvanceLogStart(ctx, topic, 0, 5)
	wantErrIs(t, "AdvanceLogStart past the end", err, store.ErrBeyondEnd)
	wantLogStart(ctx, t, m, topic, 0, 0)
	wantNextOffset(ctx, t, m, topic, 0, 4)
}
