package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

func (f *faultyMeta) IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	es, err := f.MetaStore.IndexEntries(ctx, topic, partition, from, limit)
	if f.corruptSkip.Load() {
		for i := range es {
			es[i].Skip = "x"
		}
	}
	return es, err
}

// TestPartitionStatsRoute: the stats route answers the partition's stored bytes (the
// sizes of its index entries' blocks), a lower bound marked incomplete under a small
// max_entries, 404 for a partition or topic that does not exist, 400 for a bad
// max_entries, which changes nothing, 500 for corrupt entries and 503 with the store down.
func TestPartitionStatsRoute(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if r := e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 2}); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	for range 3 {
		body := map[string]any{"records": []map[string]any{{"value": "dmFsdWU=", "partition": 0}, {"value": "dg==", "partition": 0}, {"value": "dg==", "partition": 1}}}
		if r := e.call("POST", "/v1/topics/orders/records", body); r.status != http.StatusOK {
			t.Fatalf("append: %d %s", r.status, r.raw)
		}
	}
	tp, err := e.log.Topic(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.meta.IndexEntries(ctx, tp.ID(), 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, x := range entries {
		sum += x.ByteLength
	}
	if len(entries) != 3 || sum == 0 {
		t.Fatalf("partition 0 has %d entries of %d bytes, want 3 appended blocks", len(entries), sum)
	}
	stats := func(query string, want int) wire.PartitionStats {
		t.Helper()
		r := e.call("GET", "/v1/topics/orders/partitions/0/stats"+query, nil)
		if r.status != want {
			t.Fatalf("stats%s: %d %s, want %d", query, r.status, r.raw, want)
		}
		var s wire.PartitionStats
		if want == http.StatusOK {
			if err := json.Unmarshal(r.raw, &s); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	full := stats("", http.StatusOK)
	if want := (wire.PartitionStats{HighWatermark: 6, Records: 6, Bytes: sum, EntriesScanned: 3, Complete: true}); full != want {
		t.Errorf("stats: %+v, want %+v", full, want)
	}
	if s := stats("?max_entries=1", http.StatusOK); s.Complete || s.EntriesScanned != 1 || s.Bytes != entries[0].ByteLength || s.Records != 2 {
		t.Errorf("stats?max_entries=1: %+v, want one entry of %d bytes, incomplete", s, entries[0].ByteLength)
	}
	for _, q := range []string{"?max_entries=0", "?max_entries=100001", "?max_entries=x", "?max_entries=1&max_entries=2", "?x=1"} {
		stats(q, http.StatusBadRequest)
	}
	if s := stats("", http.StatusOK); s != full {
		t.Errorf("after refused requests: %+v, want %+v", s, full)
	}
	for _, path := range []string{"/v1/topics/orders/partitions/2/stats", "/v1/topics/nope/partitions/0/stats"} {
		if r := e.call("GET", path, nil); r.status != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", path, r.status, r.raw)
		}
	}
	// An entry whose skip runs cannot be read is corrupt data, a 500; the store down is
	// a retryable 503.
	e.meta.corruptSkip.Store(true)
	stats("", http.StatusInternalServerError)
	e.meta.corruptSkip.Store(false)
	e.meta.down.Store(true)
	stats("", http.StatusServiceUnavailable)
	e.meta.down.Store(false)
}
