package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// TestCompactionRoutes: the compaction function runs its scheduled pass for a scheduled
// event and one partition's pass for a CompactPartitionEvent (partition 0 included),
// answers the pass's stats and counts each pass by trigger in EMF; a partition event
// naming no valid topic or partition, and any other event, is ErrUnknownEvent with
// nothing run.
func TestCompactionRoutes(t *testing.T) {
	sink := &bytesSink{}
	var calls []string
	h := lambdafn.NewCompaction(func(context.Context) (compact.Stats, error) {
		calls = append(calls, "schedule")
		return compact.Stats{}, nil
	}, func(_ context.Context, topic string, p int32) (compact.Stats, error) {
		calls = append(calls, fmt.Sprintf("%s/%d", topic, p))
		return compact.Stats{Rewrites: 2, RecordsRemoved: 7}, nil
	}, emf.New(sink, "Strata", nil))
	if _, err := h.Invoke(context.Background(), fixture(t, "scheduled-event.json")); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{
		`{"strata_compact_topic":"config","strata_compact_partition":0}`,
		`{"strata_compact_topic":"config","strata_compact_partition":3,"strata_compact_trigger":"dirty"}`,
	} {
		out, err := h.Invoke(context.Background(), []byte(ev))
		if err != nil {
			t.Fatal(err)
		}
		var st compact.Stats
		if err := json.Unmarshal(out, &st); err != nil || st.Rewrites != 2 || st.RecordsRemoved != 7 {
			t.Errorf("%s: answer %s (%v), want the partition pass's stats", ev, out, err)
		}
	}
	for _, bad := range []string{
		`{"strata_compact_topic":"../x","strata_compact_partition":0}`,
		`{"strata_compact_topic":"config"}`,
		`{"strata_compact_topic":"config","strata_compact_partition":-1}`,
		`{"strata_compact_topic":"config","strata_compact_partition":1024}`,
		`{"strata_compact_partition":0}`,
		`{"strata_retention_topic":"config"}`,
		`not json`,
	} {
		if _, err := h.Invoke(context.Background(), []byte(bad)); !errors.Is(err, lambdafn.ErrUnknownEvent) {
			t.Errorf("%s: %v, want ErrUnknownEvent", bad, err)
		}
	}
	if _, err := h.Invoke(context.Background(), fixture(t, "ddb-stream-sequencer.json")); !errors.Is(err, lambdafn.ErrUnknownEvent) {
		t.Errorf("a stream batch: %v, want ErrUnknownEvent", err)
	}
	if fmt.Sprint(calls) != "[schedule config/0 config/3]" {
		t.Errorf("passes %v, want the schedule's, then config/0 and config/3", calls)
	}
	checkEMF(t, sink, emf.CompactionRuns, 1)
}

// FuzzCompactionEvent: no payload makes the compaction handler panic; one it refuses
// runs nothing.
func FuzzCompactionEvent(f *testing.F) {
	for _, s := range []string{`{"strata_compact_topic":"a","strata_compact_partition":1}`, `{}`, `[]`, `{"source":"aws.events","detail-type":"Scheduled Event"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		ran := false
		h := lambdafn.NewCompaction(func(context.Context) (compact.Stats, error) { ran = true; return compact.Stats{}, nil },
			func(context.Context, string, int32) (compact.Stats, error) { ran = true; return compact.Stats{}, nil }, nil)
		if _, err := h.Invoke(context.Background(), payload); err != nil && ran {
			t.Errorf("%q: refused (%v) after running a pass", payload, err)
		}
	})
}
