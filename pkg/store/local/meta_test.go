package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/store"
)

var t0 = time.UnixMilli(1_732_870_000_123).UTC()

func openMeta(t testing.TB) (*MetaStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	m, err := OpenMetaStore(path)
	if err != nil {
		t.Fatalf("OpenMetaStore: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, path
}

func entry(topic string, p int32, base, count int64) store.IndexEntry {
	return store.IndexEntry{
		Topic: topic, Partition: p, BaseOffset: base, Count: count,
		ObjectKey: fmt.Sprintf("v1/%s/%d", topic, base), ByteOffset: base, ByteLength: count * 10,
		MaxTimestamp: t0.Add(time.Duration(base) * time.Millisecond), AppendedAt: t0,
	}
}

func bases(es []store.IndexEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.BaseOffset
	}
	return out
}

// Offsets and partitions are fixed-width big-endian in keys, so the order is numeric
// across byte boundaries, and topics that are prefixes of each other (or contain NUL)
// never bleed into one another's scans.
func TestIndexKeyOrderAcrossByteBoundaries(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	all := []int64{0, 1, 254, 255, 256, 257, 511, 512, 65535, 65536, 65537, 1<<24 - 1, 1 << 24, 1 << 32, 1<<32 + 1, 1<<62 + 5}
	// Neighbours whose encoded keys sort right next to ("t", 255)'s.
	neighbours := []struct {
		topic string
		p     int32
	}{{"t", 254}, {"t", 256}, {"t", 65535}, {"t", 65536}, {"t\x00", 255}, {"t\x00x", 255}, {"t0", 255}, {"", 255}, {"t", -1}}
	for i, base := range all {
		count := int64(1)
		if i+1 < len(all) {
			count = all[i+1] - base
		}
		if err := m.PutIndexEntry(ctx, entry("t", 255, base, count)); err != nil {
			t.Fatalf("put %d: %v", base, err)
		}
		for _, n := range neighbours {
			if err := m.PutIndexEntry(ctx, entry(n.topic, n.p, base, count)); err != nil {
				t.Fatalf("put %q/%d@%d: %v", n.topic, n.p, base, err)
			}
		}
	}
	got, err := m.IndexEntries(ctx, "t", 255, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bases(got), all) {
		t.Fatalf("IndexEntries from 0 = %v, want %v", bases(got), all)
	}
	for _, tc := range []struct {
		from  int64
		limit int
		want  []int64
	}{
		{255, 2, []int64{255, 256}},
		{256, 2, []int64{256, 257}},
		{300, 2, []int64{257, 511}},
		{65535, 1, []int64{65535}},
		{65536, 3, []int64{65536, 65537, 1<<24 - 1}},
		{65600, 1, []int64{65537}},
		{1<<32 - 1, 2, []int64{1 << 24, 1 << 32}},
		{1 << 40, 5, []int64{1<<32 + 1, 1<<62 + 5}},
		{1<<63 - 1, 5, []int64{1<<62 + 5}},
		{-1, 2, []int64{0, 1}},
		{0, 0, nil},
	} {
		got, err := m.IndexEntries(ctx, "t", 255, tc.from, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(bases(got), tc.want) {
			t.Errorf("IndexEntries(from %d, limit %d) = %v, want %v", tc.from, tc.limit, bases(got), tc.want)
		}
		for _, e := range got {
			if e.Topic != "t" || e.Partition != 255 {
				t.Errorf("IndexEntries of t/255 returned an entry of %q/%d", e.Topic, e.Partition)
			}
		}
	}
	for _, n := range append(neighbours, struct {
		topic string
		p     int32
	}{"t", 255}) {
		last, ok, err := m.LastIndexEntry(ctx, n.topic, n.p)
		if err != nil || !ok || last.BaseOffset != 1<<62+5 || last.Topic != n.topic || last.Partition != n.p {
			t.Errorf("LastIndexEntry(%q, %d) = %+v, %v, %v", n.topic, n.p, last, ok, err)
		}
	}
	if _, ok, err := m.LastIndexEntry(ctx, "t", 253); ok || err != nil {
		t.Errorf("LastIndexEntry of an empty partition = %v, %v", ok, err)
	}
}

// The key encoding preserves the order of (string, int32, int64) tuples.
func TestKeyEncodingPreservesTupleOrder(t *testing.T) {
	type tuple struct {
		s string
		p int32
		o int64
	}
	gen := rapid.Custom(func(t *rapid.T) tuple {
		return tuple{
			s: rapid.StringOfN(rapid.SampledFrom([]rune{0, 1, 'a', 'b', 0xFF, 'é'}), 0, 4, -1).Draw(t, "s"),
			p: rapid.Int32().Draw(t, "p"),
			o: rapid.Int64().Draw(t, "o"),
		}
	})
	cmp := func(a, b tuple) int {
		if c := bytes.Compare([]byte(a.s), []byte(b.s)); c != 0 {
			return c
		}
		if a.p != b.p {
			if a.p < b.p {
				return -1
			}
			return 1
		}
		switch {
		case a.o < b.o:
			return -1
		case a.o > b.o:
			return 1
		}
		return 0
	}
	rapid.Check(t, func(t *rapid.T) {
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		ka, kb := indexKey(a.s, a.p, a.o), indexKey(b.s, b.p, b.o)
		if got, want := bytes.Compare(ka, kb), cmp(a, b); got != want {
			t.Fatalf("compare(%x, %x) = %d, want %d", ka, kb, got, want)
		}
		if a.s != b.s && bytes.HasPrefix(partitionKey(a.s, a.p), appendString(nil, b.s)) {
			t.Fatalf("key of %q starts with the string prefix of %q", a.s, b.s)
		}
	})
}

// IndexEntries and LastIndexEntry agree with a sorted-slice model for any set of bases.
func TestIndexEntriesMatchModel(t *testing.T) {
	m, _ := openMeta(t)
	ctx := context.Background()
	run := 0
	rapid.Check(t, func(t *rapid.T) {
		run++
		topic := fmt.Sprintf("topic-%d", run)
		set := rapid.SliceOfNDistinct(rapid.Int64Range(-3, 70000), 0, 30, rapid.ID[int64]).Draw(t, "bases")
		slices.Sort(set)
		for _, b := range set {
			if err := m.PutIndexEntry(ctx, entry(topic, 7, b, 1)); err != nil {
				t.Fatalf("put %d: %v", b, err)
			}
			// A decoy in the neighbouring partition.
			if err := m.PutIndexEntry(ctx, entry(topic, 8, b-1, 1)); err != nil {
				t.Fatalf("put decoy: %v", err)
			}
		}
		for range 10 {
			from := rapid.Int64Range(-5, 70005).Draw(t, "from")
			limit := rapid.IntRange(0, 8).Draw(t, "limit")
			start := sort.Search(len(set), func(i int) bool { return set[i] > from }) - 1
			if start < 0 {
				start = 0
			}
			want := set[start:min(len(set), start+limit)]
			got, err := m.IndexEntries(ctx, topic, 7, from, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(bases(got), want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("IndexEntries(from %d, limit %d) = %v, want %v", from, limit, bases(got), want)
			}
		}
		last, ok, err := m.LastIndexEntry(ctx, topic, 7)
		if err != nil || ok != (len(set) > 0) || (ok && last.BaseOffset != set[len(set)-1]) {
			t.Fatalf("LastIndexEntry = %d, %v, %v; bases %v", last.BaseOffset, ok, err, set)
		}
	})
}

func seqErr(_ store.SeqCommit, err error) error { return err }

// fill writes one row to every table.
func fill(ctx context.Context, t testing.TB, m *MetaStore) {
	t.Helper()
	steps := []error{
		m.CreateTopic(ctx, store.Topic{Name: "orders", Partitions: 4, Retention: time.Hour, CreatedAt: t0}),
		seqErr(m.Sequence(ctx, store.SeqCommit{Entry: entry("orders", 1, 0, 3)})),
		m.ClaimIdempotency(ctx, store.IdempotencyRecord{Key: "k", Partition: 1, BodyHash: "h", Count: 3, ExpiresAt: t0.Add(time.Hour)}),
		m.AdvanceLogStart(ctx, "orders", 1, 2),
	}
	a, err := m.AcquireLease(ctx, "g", "orders", 1, "m-1", t0, t0.Add(time.Minute))
	steps = append(steps, err,
		m.Commit(ctx, store.CommitRow{Group: "g", Topic: "orders", Partition: 1, NextOffset: 3, Generation: a.Generation, CommittedAt: t0, Metadata: "md"}, "m-1"),
		m.Heartbeat(ctx, store.Member{Group: "g", ID: "m-1", ExpiresAt: t0.Add(time.Minute)}))
	_, err = m.EnsureGroup(ctx, store.GroupConfig{Name: "g", ResetPolicy: "earliest", MaxAttempts: 3, CreatedAt: t0})
	steps = append(steps, err)
	for i, err := range steps {
		if err != nil {
			t.Fatalf("fill step %d: %v", i, err)
		}
	}
}

func TestReopenKeepsEveryTable(t *testing.T) {
	ctx := context.Background()
	m, path := openMeta(t)
	fill(ctx, t, m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMetaStore(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer m.Close()

	tp, err := m.GetTopic(ctx, "orders")
	if err != nil || tp != (store.Topic{Name: "orders", Partitions: 4, Retention: time.Hour, CreatedAt: t0}) {
		t.Errorf("topic after reopen = %+v, %v", tp, err)
	}
	last, ok, err := m.LastIndexEntry(ctx, "orders", 1)
	if err != nil || !ok || last != entry("orders", 1, 0, 3) {
		t.Errorf("last entry after reopen = %+v, %v, %v", last, ok, err)
	}
	rec, err := m.GetIdempotency(ctx, "k", 1)
	if err != nil || rec.BodyHash != "h" || !rec.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("idempotency after reopen = %+v, %v", rec, err)
	}
	if ls, err := m.LogStart(ctx, "orders", 1); err != nil || ls != 2 {
		t.Errorf("log start after reopen = %d, %v", ls, err)
	}
	a, err := m.GetAssignment(ctx, "g", "orders", 1)
	if err != nil || a.Owner != "m-1" || a.Generation != 1 {
		t.Errorf("assignment after reopen = %+v, %v", a, err)
	}
	c, err := m.GetCommit(ctx, "g", "orders", 1)
	if err != nil || c.NextOffset != 3 || c.Metadata != "md" {
		t.Errorf("commit after reopen = %+v, %v", c, err)
	}
	if g, err := m.GetGroup(ctx, "g"); err != nil || g.MaxAttempts != 3 {
		t.Errorf("group after reopen = %+v, %v", g, err)
	}
	if ms, err := m.LiveMembers(ctx, "g", t0); err != nil || len(ms) != 1 {
		t.Errorf("members after reopen = %+v, %v", ms, err)
	}
}

// Stored bytes that do not decode make every reader return an error, never panic.
func TestCorruptRowsAreErrors(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	fill(ctx, t, m)
	for _, garbage := range [][]byte{{}, []byte("{"), []byte(`{"count":"x","log_start_offset":"x","next_offset":"x","created_at":"x","group":1}`), {0xff, 0x00}, []byte("null")} {
		err := m.db.Update(func(tx *bolt.Tx) error {
			for _, name := range allBuckets() {
				b := tx.Bucket([]byte(name))
				var keys [][]byte
				if err := b.ForEach(func(k, _ []byte) error {
					keys = append(keys, append([]byte(nil), k...))
					return nil
				}); err != nil {
					return err
				}
				for _, k := range keys {
					if err := b.Put(k, garbage); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if string(garbage) == "null" {
			continue // decodes to a zero record: not an error, and must not panic either
		}
		checks := map[string]error{}
		_, checks["GetTopic"] = m.GetTopic(ctx, "orders")
		_, _, checks["LastIndexEntry"] = m.LastIndexEntry(ctx, "orders", 1)
		_, checks["IndexEntries"] = m.IndexEntries(ctx, "orders", 1, 0, 10)
		checks["PutIndexEntry"] = m.PutIndexEntry(ctx, entry("orders", 1, 0, 1))
		_, checks["GetIdempotency"] = m.GetIdempotency(ctx, "k", 1)
		_, checks["LogStart"] = m.LogStart(ctx, "orders", 1)
		_, checks["AcquireLease"] = m.AcquireLease(ctx, "g", "orders", 1, "m-2", t0, t0)
		_, checks["GetAssignment"] = m.GetAssignment(ctx, "g", "orders", 1)
		checks["Commit"] = m.Commit(ctx, store.CommitRow{Group: "g", Topic: "orders", Partition: 1, Generation: 1}, "m-1")
		_, checks["GetCommit"] = m.GetCommit(ctx, "g", "orders", 1)
		checks["ResetCommits"] = m.ResetCommits(ctx, "g", "orders", map[int32]int64{1: 0}, t0)
		_, checks["ListAssignments"] = m.ListAssignments(ctx, "g")
		_, checks["ListCommits"] = m.ListCommits(ctx, "g")
		_, checks["GetGroup"] = m.GetGroup(ctx, "g")
		_, checks["EnsureGroup"] = m.EnsureGroup(ctx, store.GroupConfig{Name: "g"})
		_, checks["LiveMembers"] = m.LiveMembers(ctx, "g", t0)
		// Far enough ahead that every row has expired: the sweep decodes what it deletes.
		_, checks["DeleteExpired"] = m.DeleteExpired(ctx, t0.AddDate(100, 0, 0))
		_, checks["DeleteIndexRange"] = m.DeleteIndexRange(ctx, "orders", 1, 1<<62)
		for op, err := range checks {
			if err == nil {
				t.Errorf("%s over the stored bytes %q: no error", op, garbage)
			} else if errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s over the stored bytes %q: %v, want a decode error", op, garbage, err)
			}
		}
	}
}

func TestSecondOpenOfLockedFileFails(t *testing.T) {
	_, path := openMeta(t)
	start := time.Now()
	m2, err := OpenMetaStore(path)
	if err == nil {
		m2.Close()
		t.Fatal("a second OpenMetaStore of a file in use succeeded")
	}
	if time.Since(start) > openTimeout+2*time.Second {
		t.Fatalf("second open took %v", time.Since(start))
	}
}

func TestLeaseRefusesEmptyMember(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	if _, err := m.AcquireLease(ctx, "g", "t", 0, "", t0, t0.Add(time.Minute)); err == nil {
		t.Fatal("AcquireLease by an empty member succeeded")
	}
	a, err := m.AcquireLease(ctx, "g", "t", 0, "m-1", t0, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ReleaseLease(ctx, "g", "t", 0, "m-1", a.Generation); err != nil {
		t.Fatal(err)
	}
	// The released row has owner "", which must not match an empty member.
	if _, err := m.RenewLease(ctx, "g", "t", 0, "", a.Generation, t0.Add(time.Hour)); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("RenewLease by an empty member of a released lease = %v, want ErrFenced", err)
	}
	err = m.Commit(ctx, store.CommitRow{Group: "g", Topic: "t", Partition: 0, NextOffset: 5, Generation: a.Generation}, "")
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Commit by an empty member of a released lease = %v, want ErrFenced", err)
	}
}

func TestDeleteExpired(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	for base := int64(0); base < 4; base++ {
		e := entry("t", 0, base, 1)
		if base < 3 {
			e.ExpiresAt = t0.Add(time.Duration(base) * time.Second)
		}
		rec := store.IdempotencyRecord{Key: fmt.Sprint(base), BaseOffset: base, Count: 1, ExpiresAt: e.ExpiresAt}
		if err := errors.Join(m.PutIndexEntry(ctx, e), m.ClaimIdempotency(ctx, rec)); err != nil {
			t.Fatal(err)
		}
	}
	// At t0+1s: base 0 expired; base 1 expires exactly now (kept); 2 later; 3 never.
	n, err := m.DeleteExpired(ctx, t0.Add(time.Second))
	if err != nil || n != 2 {
		t.Fatalf("DeleteExpired = %d, %v; want 2 rows (one entry, one record)", n, err)
	}
	got, err := m.IndexEntries(ctx, "t", 0, 0, 10)
	if err != nil || !slices.Equal(bases(got), []int64{1, 2, 3}) {
		t.Fatalf("entries after DeleteExpired = %v, %v", bases(got), err)
	}
	if _, err := m.GetIdempotency(ctx, "0", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired idempotency record: %v, want ErrNotFound", err)
	}
	if _, err := m.GetIdempotency(ctx, "1", 0); err != nil {
		t.Fatalf("live idempotency record: %v", err)
	}
}

func BenchmarkPutIndexEntry(b *testing.B) {
	ctx := context.Background()
	m, _ := openMeta(b)
	base := int64(0)
	for b.Loop() {
		if err := m.PutIndexEntry(ctx, entry("bench", 0, base, 10)); err != nil {
			b.Fatal(err)
		}
		base += 10
	}
}

func BenchmarkIndexEntries(b *testing.B) {
	ctx := context.Background()
	m, _ := openMeta(b)
	err := m.db.Update(func(tx *bolt.Tx) error {
		for i := range int64(100_000) {
			if err := putIndexIfAbsent(tx, entry("bench", 0, i*10, 10)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	i := int64(0)
	for b.Loop() {
		got, err := m.IndexEntries(ctx, "bench", 0, (i*7919)%1_000_000, 20)
		if err != nil || len(got) == 0 {
			b.Fatal(len(got), err)
		}
		i++
	}
}

// TestFreelistEitherWay: the file is written without its freelist (NoFreelistSync) and a
// file written with one (as before) opens too, either way round, rows intact; pages freed
// before a close are reused after the open, which rebuilt the freelist by walking the
// file, so the file does not grow by what was deleted.
func TestFreelistEitherWay(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	value := bytes.Repeat([]byte("v"), 3000)
	put := func(m *MetaStore, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := m.PutProducerRow(ctx, fmt.Sprintf("row-%04d", i), value, 0, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := OpenMetaStore(path)
	if err != nil {
		t.Fatal(err)
	}
	put(m, 0, 400)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Opened as before (the freelist synced), it reads the rows and writes its freelist.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketProducers))
		var keys [][]byte
		if err := b.ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		}); err != nil {
			return err
		}
		if len(keys) != 400 {
			return fmt.Errorf("%d rows, want 400", len(keys))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err = OpenMetaStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	size := m.db.Stats().FreePageN
	if size == 0 {
		t.Fatal("no free pages after deleting every row")
	}
	before := fileSize(t, path)
	put(m, 1000, 1400)
	if after := fileSize(t, path); after > before {
		t.Fatalf("the file grew from %d to %d bytes: the %d free pages were not reused", before, after, size)
	}
	if _, ver, err := m.GetProducerRow(ctx, "row-1399"); err != nil || ver != 1 {
		t.Fatalf("row-1399: version %d, %v", ver, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
