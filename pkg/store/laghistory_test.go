package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/store"
)

func ms(n int64) time.Time { return time.UnixMilli(n) }

func TestNextLagHistory(t *testing.T) {
	s := func(at, rec int64) store.LagSample {
		return store.LagSample{At: ms(at), Records: rec, Behind: time.Duration(rec) * time.Second}
	}
	lag := func(topic string, p int32, rec int64) store.PartitionLag {
		return store.PartitionLag{Topic: topic, Partition: p, Records: rec, Behind: time.Duration(rec) * time.Second}
	}
	for _, tc := range []struct {
		name    string
		old     []store.LagSeries
		at      int64
		lags    []store.PartitionLag
		keep    int
		want    []store.LagSeries
		changed bool
	}{
		{name: "first pass starts a series per partition, sorted",
			at: 10, keep: 3, lags: []store.PartitionLag{lag("b", 0, 1), lag("a", 1, 2), lag("a", 0, 3)},
			want:    []store.LagSeries{{"a", 0, []store.LagSample{s(10, 3)}}, {"a", 1, []store.LagSample{s(10, 2)}}, {"b", 0, []store.LagSample{s(10, 1)}}},
			changed: true},
		{name: "appends and keeps the newest keep",
			old: []store.LagSeries{{"a", 0, []store.LagSample{s(1, 1), s(2, 2), s(3, 3)}}},
			at:  4, keep: 3, lags: []store.PartitionLag{lag("a", 0, 4)},
			want:    []store.LagSeries{{"a", 0, []store.LagSample{s(2, 2), s(3, 3), s(4, 4)}}},
			changed: true},
		{name: "a partition the pass leaves out goes",
			old: []store.LagSeries{{"a", 0, []store.LagSample{s(1, 1)}}, {"gone", 0, []store.LagSample{s(1, 9)}}},
			at:  2, keep: 5, lags: []store.PartitionLag{lag("a", 0, 0)},
			want:    []store.LagSeries{{"a", 0, []store.LagSample{s(1, 1), s(2, 0)}}},
			changed: true},
		{name: "a pass no newer than the newest sample changes nothing",
			old: []store.LagSeries{{"a", 0, []store.LagSample{s(5, 1)}}},
			at:  5, keep: 5, lags: []store.PartitionLag{lag("a", 0, 7)},
			want: []store.LagSeries{{"a", 0, []store.LagSample{s(5, 1)}}}},
		{name: "keep below one keeps one; a duplicate partition counts once; negative lag is zero",
			old: []store.LagSeries{{"a", 0, []store.LagSample{s(1, 1)}}},
			at:  2, keep: 0, lags: []store.PartitionLag{lag("a", 0, -3), lag("a", 0, 8)},
			want:    []store.LagSeries{{"a", 0, []store.LagSample{{At: ms(2)}}}},
			changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := store.NextLagHistory(tc.old, ms(tc.at), tc.lags, tc.keep)
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("NextLagHistory = %+v, %v\nwant %+v, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

// TestNextLagHistoryBoundsTheItem: a group with very many partitions keeps fewer samples
// per partition rather than outgrow one DynamoDB item.
func TestNextLagHistoryBoundsTheItem(t *testing.T) {
	var lags []store.PartitionLag
	for p := range int32(4000) {
		lags = append(lags, store.PartitionLag{Topic: strings.Repeat("t", 200), Partition: p, Records: 1 << 40, Behind: time.Hour})
	}
	var h []store.LagSeries
	for i := range 30 {
		h, _ = store.NextLagHistory(h, ms(int64(i+1)*60_000), lags, 1000)
	}
	if n := len(store.EncodeLagHistory(h)); n > store.MaxLagHistoryBytes || len(h) == 0 {
		t.Fatalf("history of %d series encodes to %d bytes, want 1..%d", len(h), n, store.MaxLagHistoryBytes)
	}
}

func TestLagHistoryRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h []store.LagSeries
		for range rapid.IntRange(0, 5).Draw(t, "series") {
			s := store.LagSeries{Topic: rapid.StringMatching(`[a-z0-9._-]{1,20}`).Draw(t, "topic"), Partition: rapid.Int32Range(0, 1<<20).Draw(t, "p")}
			at := rapid.Int64Range(-1<<40, 1<<42).Draw(t, "at")
			for range rapid.IntRange(0, 8).Draw(t, "samples") {
				at += rapid.Int64Range(0, 1<<30).Draw(t, "step")
				s.Samples = append(s.Samples, store.LagSample{At: ms(at), Records: rapid.Int64().Draw(t, "rec"),
					Behind: time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "behind")) * time.Millisecond})
			}
			if s.Samples == nil {
				s.Samples = []store.LagSample{}
			}
			h = append(h, s)
		}
		got, err := store.DecodeLagHistory(store.EncodeLagHistory(h))
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			h = []store.LagSeries{}
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("round trip = %+v, want %+v", got, h)
		}
	})
}

func FuzzDecodeLagHistory(f *testing.F) {
	f.Add(store.EncodeLagHistory([]store.LagSeries{{Topic: "orders", Partition: 3, Samples: []store.LagSample{{At: ms(1), Records: 2, Behind: time.Second}}}}))
	f.Add([]byte{1, 200, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := store.DecodeLagHistory(b)
		if err != nil {
			if !errors.Is(err, store.ErrBadLagHistory) {
				t.Fatalf("error %v is not ErrBadLagHistory", err)
			}
			return
		}
		again, err := store.DecodeLagHistory(store.EncodeLagHistory(h))
		if err != nil || !reflect.DeepEqual(again, h) {
			t.Fatalf("re-encoding %+v: %+v, %v", h, again, err)
		}
	})
}
