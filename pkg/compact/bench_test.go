package compact_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// appendRound appends value v of every key in keys, batch records per append.
func appendRound(b *testing.B, f *fixture, tp store.Topic, keys []int, valueSize, batch int, round int) {
	b.Helper()
	p := int32(0)
	for i := 0; i < len(keys); i += batch {
		recs := make([]log.Record, 0, batch)
		for _, k := range keys[i:min(i+batch, len(keys))] {
			v := make([]byte, valueSize)
			copy(v, fmt.Sprintf("round %d key %d", round, k))
			recs = append(recs, log.Record{Key: fmt.Appendf(nil, "key-%06d", k), Value: v, Partition: &p})
		}
		if _, err := f.log.Append(context.Background(), tp.Name, recs, log.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// compactFully runs passes (each past the head guard and the reader margin) until one
// rewrites nothing and its garbage is collected, adding up their stats.
func compactFully(b *testing.B, f *fixture, tp store.Topic) (compact.Stats, int) {
	b.Helper()
	var total compact.Stats
	passes := 0
	for {
		f.clock.Advance(compact.HeadGuard + time.Minute)
		var st compact.Stats
		if err := f.job.Topic(context.Background(), tp, &st); err != nil {
			b.Fatal(err)
		}
		passes++
		addStats(&total, st)
		if st.Rewrites == 0 && st.ObjectsDeleted == 0 && passes > 1 {
			return total, passes
		}
	}
}

func addStats(t *compact.Stats, s compact.Stats) {
	t.Rewrites += s.Rewrites
	t.RecordsRemoved += s.RecordsRemoved
	t.ObjectsDeleted += s.ObjectsDeleted
	t.Gets += s.Gets
	t.Puts += s.Puts
	t.Lists += s.Lists
	t.Deletes += s.Deletes
	t.IndexReads += s.IndexReads
	t.Swaps += s.Swaps
}

// storedBytes sums the sizes of the topic's stored objects.
func storedBytes(b *testing.B, f *fixture, tp store.Topic) int64 {
	b.Helper()
	var n int64
	for _, k := range f.objects(tp) {
		var size int64
		if err := f.s.Objects.List(context.Background(), k, func(o store.ObjectInfo) error {
			if o.Key == k {
				size = o.Size
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		n += size
	}
	return n
}

// BenchmarkCompactedStorage: 1,000 keys overwritten 100 times (100-byte values, one
// append per round), compacted to the end on the embedded backend: the bytes stored
// against the bytes of the latest keys and values (stored/latest, the goal ≤ 2).
func BenchmarkCompactedStorage(b *testing.B) {
	const keys, rounds, valueSize = 1000, 100, 100
	for range b.N {
		b.StopTimer()
		f := newFixture(b, backendtest.Local(context.Background(), b))
		tp := f.topic(fmt.Sprintf("storage%d", time.Now().UnixNano()), 1, nil)
		ks := make([]int, keys)
		for i := range ks {
			ks[i] = i
		}
		for r := range rounds {
			appendRound(b, f, tp, ks, valueSize, keys, r)
		}
		before := storedBytes(b, f, tp)
		b.StartTimer()
		st, passes := compactFully(b, f, tp)
		b.StopTimer()
		after := storedBytes(b, f, tp)
		latest := int64(keys * (valueSize + len("key-000000")))
		b.ReportMetric(float64(after)/float64(latest), "stored/latest")
		b.ReportMetric(float64(before)/float64(latest), "before/latest")
		b.ReportMetric(float64(passes), "passes")
		b.ReportMetric(float64(st.Swaps), "swaps")
		if after > 2*latest {
			b.Fatalf("stored %d bytes after compaction, above twice the latest values' %d", after, latest)
		}
	}
}

// BenchmarkCompactionPass: a partition of 10,000 live keys (100-byte values, appends of
// 1,000 records) after an hour of 10% updates (1,000 random keys, appends of 100), one
// pass on the embedded backend: its requests by kind, the index entries it writes, and
// its records read per second (the pass's throughput ceiling on one core).
func BenchmarkCompactionPass(b *testing.B) {
	const keys, valueSize = 10000, 100
	for range b.N {
		b.StopTimer()
		f := newFixture(b, backendtest.Local(context.Background(), b))
		f.job.MaxRewrites = 1 << 20 // measure the whole pass, unbounded
		tp := f.topic(fmt.Sprintf("pass%d", time.Now().UnixNano()), 1, nil)
		ks := make([]int, keys)
		for i := range ks {
			ks[i] = i
		}
		appendRound(b, f, tp, ks, valueSize, 1000, 0)
		rng := rand.New(rand.NewPCG(1, 2))
		upd := rng.Perm(keys)[:keys/10]
		appendRound(b, f, tp, upd, valueSize, 100, 1)
		f.clock.Advance(compact.HeadGuard + time.Minute)
		var st compact.Stats
		b.StartTimer()
		start := time.Now()
		if err := f.job.Topic(context.Background(), tp, &st); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		es, err := f.s.Meta.IndexEntries(context.Background(), tp.ID(), 0, 0, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Gets), "GETs/pass")
		b.ReportMetric(float64(st.Puts), "PUTs/pass")
		b.ReportMetric(float64(st.IndexReads), "index-reads/pass")
		b.ReportMetric(float64(st.Swaps), "swaps/pass")
		b.ReportMetric(float64(len(es)), "entries-after")
		b.ReportMetric(float64(st.RecordsRemoved), "removed")
		b.ReportMetric(float64(keys+keys/10)/took.Seconds(), "records-read/s")
	}
}
