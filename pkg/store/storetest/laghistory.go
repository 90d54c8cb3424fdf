package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// makeLagHistory makes the harness's MetaStore and requires it to be a LagHistoryStore
// too: every backend keeps the lag history beside its metadata.
func makeLagHistory(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.LagHistoryStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.LagHistoryStore", m)
	}
	return m, nil
}

func lagHistorySections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"LagHistory", []testCase[store.MetaStore]{
			{"UnknownGroupIsEmpty", testLagHistoryEmpty},
			{"RingKeepsNewestAndDropsGonePartitions", testLagHistoryRing},
			{"LatePassIgnored", testLagHistoryLatePass},
			{"GroupsIsolatedAndDeleted", testLagHistoryDelete},
			{"ConcurrentPassesAllKept", testLagHistoryConcurrent},
			{"WideGroupFitsOneItem", testLagHistoryWide},
		}},
	}
}

func lagStore(m store.MetaStore) store.LagHistoryStore { return m.(store.LagHistoryStore) }

func pl(topic string, p int32, rec int64) store.PartitionLag {
	return store.PartitionLag{Topic: topic, Partition: p, Records: rec, Behind: time.Duration(rec) * time.Second}
}

// lagRecords is the history as "topic/partition: records@ms ..." lines, for comparison.
func lagRecords(h []store.LagSeries) string {
	s := ""
	for _, x := range h {
		s += fmt.Sprintf("%s/%d:", x.Topic, x.Partition)
		for _, smp := range x.Samples {
			s += fmt.Sprintf(" %d@%d(%s)", smp.Records, smp.At.Sub(t0).Milliseconds(), smp.Behind)
		}
		s += "\n"
	}
	return s
}

func testLagHistoryEmpty(ctx context.Context, t *testing.T, m store.MetaStore) {
	h, err := lagStore(m).LagHistory(ctx, UniqueName(t, "g"))
	must(t, "LagHistory", err)
	if h == nil || len(h) != 0 {
		t.Fatalf("LagHistory of an unknown group = %#v, want an empty list", h)
	}
	must(t, "DeleteLagHistory (none)", lagStore(m).DeleteLagHistory(ctx, UniqueName(t, "g")))
}

func testLagHistoryRing(ctx context.Context, t *testing.T, m store.MetaStore) {
	g, ls := UniqueName(t, "g"), lagStore(m)
	must(t, "RecordLag 1", ls.RecordLag(ctx, g, at(1000), []store.PartitionLag{pl("b", 0, 1), pl("a", 1, 10), pl("a", 0, 5)}, 2))
	must(t, "RecordLag 2", ls.RecordLag(ctx, g, at(2000), []store.PartitionLag{pl("a", 1, 11), pl("a", 0, 6), pl("b", 0, 2)}, 2))
	must(t, "RecordLag 3", ls.RecordLag(ctx, g, at(3000), []store.PartitionLag{pl("a", 0, 7), pl("a", 1, 12)}, 2))
	h, err := ls.LagHistory(ctx, g)
	must(t, "LagHistory", err)
	want := "a/0: 6@2000(6s) 7@3000(7s)\na/1: 11@2000(11s) 12@3000(12s)\n"
	if got := lagRecords(h); got != want {
		t.Fatalf("history after three passes keeping 2 (b/0 left out of the third):\n%s\nwant:\n%s", got, want)
	}
}

func testLagHistoryLatePass(ctx context.Context, t *testing.T, m store.MetaStore) {
	g, ls := UniqueName(t, "g"), lagStore(m)
	must(t, "RecordLag", ls.RecordLag(ctx, g, at(5000), []store.PartitionLag{pl("a", 0, 3)}, 5))
	must(t, "RecordLag (same time)", ls.RecordLag(ctx, g, at(5000), []store.PartitionLag{pl("a", 0, 9)}, 5))
	must(t, "RecordLag (earlier)", ls.RecordLag(ctx, g, at(4000), []store.PartitionLag{pl("z", 0, 9)}, 5))
	h, err := ls.LagHistory(ctx, g)
	must(t, "LagHistory", err)
	if got, want := lagRecords(h), "a/0: 3@5000(3s)\n"; got != want {
		t.Fatalf("history after late passes:\n%s\nwant:\n%s", got, want)
	}
}

func testLagHistoryDelete(ctx context.Context, t *testing.T, m store.MetaStore) {
	g1, g2, ls := UniqueName(t, "g1"), UniqueName(t, "g2"), lagStore(m)
	must(t, "RecordLag g1", ls.RecordLag(ctx, g1, at(1000), []store.PartitionLag{pl("a", 0, 1)}, 5))
	must(t, "RecordLag g2", ls.RecordLag(ctx, g2, at(1000), []store.PartitionLag{pl("a", 0, 2)}, 5))
	must(t, "DeleteLagHistory g1", ls.DeleteLagHistory(ctx, g1))
	h1, err := ls.LagHistory(ctx, g1)
	must(t, "LagHistory g1", err)
	h2, err := ls.LagHistory(ctx, g2)
	must(t, "LagHistory g2", err)
	if len(h1) != 0 || lagRecords(h2) != "a/0: 2@1000(2s)\n" {
		t.Fatalf("after deleting g1: g1 = %s, g2 = %s", lagRecords(h1), lagRecords(h2))
	}
}

// testLagHistoryConcurrent: passes racing on one group (two schedulers overlapping) each
// land; none overwrites another's sample.
func testLagHistoryConcurrent(ctx context.Context, t *testing.T, m store.MetaStore) {
	g, ls := UniqueName(t, "g"), lagStore(m)
	must(t, "RecordLag", ls.RecordLag(ctx, g, at(0), []store.PartitionLag{pl("a", 0, 0)}, 10))
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ls.RecordLag(ctx, g, at(int64(i+1)*1000), []store.PartitionLag{pl("a", 0, int64(i+1))}, 10)
		}()
	}
	wg.Wait()
	h, err := ls.LagHistory(ctx, g)
	must(t, "LagHistory", err)
	n := 0
	if len(h) == 1 {
		n = len(h[0].Samples)
	}
	// A pass older than one already stored is ignored, so the later ones may win
	// alone; at least one lands and the first sample is never lost.
	if n < 2 || h[0].Samples[0].Records != 0 {
		t.Fatalf("after concurrent passes (errors %v): %s", errs, lagRecords(h))
	}
}

// testLagHistoryWide: a group too wide for its whole history is still stored (one
// DynamoDB item holds at most 400 KB) and read back within MaxLagHistoryBytes.
func testLagHistoryWide(ctx context.Context, t *testing.T, m store.MetaStore) {
	g, ls := UniqueName(t, "g"), lagStore(m)
	topic := strings.Repeat("t", 200)
	lags := make([]store.PartitionLag, 3000)
	for i := range lags {
		lags[i] = store.PartitionLag{Topic: topic, Partition: int32(i), Records: 1 << 40, Behind: time.Hour}
	}
	for i := range 3 {
		must(t, "RecordLag", ls.RecordLag(ctx, g, at(int64(i+1)*1000), lags, 120))
	}
	h, err := ls.LagHistory(ctx, g)
	must(t, "LagHistory", err)
	if n := len(store.EncodeLagHistory(h)); len(h) == 0 || n > store.MaxLagHistoryBytes {
		t.Fatalf("wide group's history: %d series, %d bytes encoded, want some within %d", len(h), n, store.MaxLagHistoryBytes)
	}
}
