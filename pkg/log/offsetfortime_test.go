package log_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestOffsetForTimeWithUnindexedNewestCommit is issue 18.4: while the newest commit
// has no index entry (milliseconds on every DynamoDB append; for good if the appender
// died and the materialiser is slow), OffsetForTime kept receiving the same entry and
// neither advanced nor stopped, and a reset by timestamp never applied. It must answer
// at once: the first unindexed offset for a time after every indexed record (its
// records' times are unknown, so none at or after t is skipped), the indexed offset
// for a time before it.
func TestOffsetForTimeWithUnindexedNewestCommit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l := newLog(t, s)
		mustTopic(t, l, "ts", 1)
		p := int32(0)
		before := time.Now().Add(-time.Hour)
		for _, v := range []string{"a", "b", "c"} { // three commits: [0,1) [1,2) [2,3)
			if _, err := l.Append(ctx, "ts", []log.Record{{Value: []byte(v), Partition: &p}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// The newest commit loses its index entry; the high watermark (in the counter)
		// stays 3.
		id, err := l.TopicID(ctx, "ts")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Meta.DeleteIndexEntry(ctx, id, 0, 2); err != nil {
			t.Fatal(err)
		}
		if _, hw, err := l.Bounds(ctx, "ts", 0); err != nil || hw != 3 {
			t.Fatalf("bounds: hw %d, %v; want 3", hw, err)
		}
		cases := []struct {
			name string
			at   time.Time
			want int64
		}{
			{"before every record", before, 0},
			{"after every indexed record", time.Now().Add(time.Hour), 2},
		}
		for _, c := range cases {
			type answer struct {
				off int64
				err error
			}
			got := make(chan answer, 1)
			go func() {
				o, err := l.OffsetForTime(ctx, "ts", 0, c.at)
				got <- answer{o, err}
			}()
			select {
			case a := <-got:
				if a.err != nil || a.off != c.want {
					t.Fatalf("%s: OffsetForTime = %d, %v; want %d", c.name, a.off, a.err, c.want)
				}
			case <-ctx.Done():
				t.Fatalf("%s: OffsetForTime did not answer (spinning on the unindexed commit)", c.name)
			}
		}
	})
}

// TestOffsetForTimeStopsAtMiddleGap: a commit in the middle of the log without an
// index entry (not materialised yet, or its entry lost) has an unknown time that may
// be at or after t, so OffsetForTime never answers past it — it answers the gap's first
// offset (after waiting as a poll does for the entry) — unless the entry after the gap
// proves it older than t (that entry's time plus log.GapTimeMargin before t), and a
// time before the gap is answered as before.
func TestOffsetForTimeStopsAtMiddleGap(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		l := newLog(t, s)
		mustTopic(t, l, "ts", 1)
		p := int32(0)
		for _, v := range []string{"a", "b", "c"} { // three commits: [0,1) [1,2) [2,3)
			if _, err := l.Append(ctx, "ts", []log.Record{{Value: []byte(v), Partition: &p}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Millisecond) // distinct append times (milliseconds)
		}
		id, err := l.TopicID(ctx, "ts")
		if err != nil {
			t.Fatal(err)
		}
		es, err := s.Meta.IndexEntries(ctx, id, 0, 0, 3)
		if err != nil || len(es) != 3 {
			t.Fatalf("entries %v, %v", es, err)
		}
		if err := s.Meta.DeleteIndexEntry(ctx, id, 0, 1); err != nil { // the middle commit loses its entry
			t.Fatal(err)
		}
		cases := []struct {
			name string
			at   time.Time
			want int64
		}{
			{"the first record's time", es[0].AppendedAt, 0},
			{"just after the first record", es[0].AppendedAt.Add(time.Millisecond), 1},
			{"the record after the gap's time", es[2].AppendedAt, 1},
			{"past the record after the gap by more than the gap margin", es[2].AppendedAt.Add(log.GapTimeMargin + time.Millisecond), 3},
		}
		for _, c := range cases {
			if got, err := l.OffsetForTime(ctx, "ts", 0, c.at); err != nil || got != c.want {
				t.Errorf("%s: OffsetForTime = %d, %v; want %d", c.name, got, err, c.want)
			}
		}
	})
}
