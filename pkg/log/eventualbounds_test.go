package log_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestPollEventualBoundsOnALaggingReplica: a poll with EventualReads answers from a
// replica's bounds when the offset lies within them — at its stale high watermark,
// nothing new yet, never an error — and reads them again strongly consistently when the
// offset lies past them, so a record the replica has not seen is neither skipped nor
// answered out of range; past the real high watermark it is out of range.
func TestPollEventualBoundsOnALaggingReplica(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		meta := &backendtest.LaggingReplica{MetaStore: s.Meta}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Materialise(t, s, l)
		topic, err := l.CreateTopic(ctx, "lag", 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		p := int32(0)
		appendN := func(n int) {
			recs := make([]log.Record, n)
			for i := range recs {
				recs[i] = log.Record{Value: fmt.Appendf(nil, "v%d", i), Partition: &p}
			}
			if _, err := l.Append(ctx, "lag", recs, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		appendN(3)
		meta.Freeze(t, topic.ID(), 0) // the replica has offsets 0–2
		appendN(2)                    // 3–4 reach the leader only
		opt := log.PollOptions{MaxRecords: 100, EventualReads: true}

		res, err := l.Poll(ctx, "lag", 0, 0, opt)
		if err != nil || len(res.Records) != 3 || res.HighWatermark != 3 {
			t.Fatalf("poll from 0 = %d records, high watermark %d, %v; want the replica's 3, high watermark 3", len(res.Records), res.HighWatermark, err)
		}
		res, err = l.Poll(ctx, "lag", 0, 3, opt)
		if err != nil || len(res.Records) != 0 || res.NextOffset != 3 {
			t.Fatalf("poll at the replica's high watermark = %d records, next %d, %v; want nothing yet", len(res.Records), res.NextOffset, err)
		}
		res, err = l.Poll(ctx, "lag", 0, 4, opt)
		if err != nil || len(res.Records) != 1 || res.Records[0].Offset != 4 || res.HighWatermark != 5 {
			t.Fatalf("poll at 4, past the replica's bounds = %+v, %v; want offset 4 from a strong read (high watermark 5)", res, err)
		}
		_, err = l.Poll(ctx, "lag", 0, 6, opt)
		var oor *log.OffsetOutOfRangeError
		if !errors.As(err, &oor) || oor.HighWatermark != 5 {
			t.Fatalf("poll at 6, past the real high watermark = %v; want out of range at high watermark 5", err)
		}
		if meta.Eventual.Load() != 4 {
			t.Fatalf("%d eventually consistent reads for 4 polls; want one a poll", meta.Eventual.Load())
		}
		before := meta.Eventual.Load()
		if _, err := l.Poll(ctx, "lag", 0, 0, log.PollOptions{MaxRecords: 100}); err != nil {
			t.Fatal(err)
		}
		if meta.Eventual.Load() != before {
			t.Fatalf("a poll without EventualReads read the replica")
		}
	})
}

// lagFixture is a log over a lagging replica of s's metadata with one partition holding
// commits of the given sizes, one object each.
func lagFixture(t *testing.T, s backendtest.Stores, meta *backendtest.LaggingReplica, name string, sizes ...int) (*log.Log, string) {
	t.Helper()
	ctx := context.Background()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Materialise(t, s, l)
	topic, err := l.CreateTopic(ctx, name, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	for c, n := range sizes {
		recs := make([]log.Record, n)
		for i := range recs {
			recs[i] = log.Record{Value: fmt.Appendf(nil, "c%d-%d", c, i), Partition: &p}
		}
		if _, err := l.Append(ctx, name, recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return l, topic.ID()
}

// TestPollEventualIndexOnALaggingReplica: index entries a replica lacks are read again
// strongly — a poll answers every record up to the high watermark it read, whatever the
// replica's index holds — and when the replica answers an entry whose object retention
// has since deleted, the poll is out of range at the new log start, never corruption.
func TestPollEventualIndexOnALaggingReplica(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		opt := log.PollOptions{MaxRecords: 100, EventualReads: true}
		t.Run("entries not on the replica", func(t *testing.T) {
			meta := &backendtest.LaggingReplica{MetaStore: s.Meta, IndexOnly: true}
			l, id := lagFixture(t, s, meta, "lag-index", 3)
			meta.Freeze(t, id, 0) // the replica's index has 0–2
			p := int32(0)
			if _, err := l.Append(ctx, "lag-index", []log.Record{{Value: []byte("late-0"), Partition: &p}, {Value: []byte("late-1"), Partition: &p}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, from := range []int64{0, 3, 4} {
				res, err := l.Poll(ctx, "lag-index", 0, from, opt)
				if err != nil || res.NextOffset != 5 || int64(len(res.Records)) != 5-from {
					t.Fatalf("poll from %d = %d records, next %d, %v; want every record to 5", from, len(res.Records), res.NextOffset, err)
				}
			}
			if meta.EventualIndex.Load() == 0 {
				t.Fatalf("the polls never read the replica's index")
			}
		})
		t.Run("an entry retention deleted", func(t *testing.T) {
			meta := &backendtest.LaggingReplica{MetaStore: s.Meta}
			l, id := lagFixture(t, s, meta, "lag-retention", 3, 2)
			es, err := s.Meta.IndexEntries(ctx, id, 0, 0, 10)
			if err != nil || len(es) != 2 {
				t.Fatalf("entries %v, %v", es, err)
			}
			meta.Freeze(t, id, 0) // the replica still has offsets 0–4 from 0
			if err := s.Meta.AdvanceLogStart(ctx, id, 0, 3); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Meta.DeleteIndexRange(ctx, id, 0, 3); err != nil {
				t.Fatal(err)
			}
			if err := s.Objects.Delete(ctx, es[0].ObjectKey); err != nil {
				t.Fatal(err)
			}
			_, err = l.Poll(ctx, "lag-retention", 0, 0, opt)
			var oor *log.OffsetOutOfRangeError
			if !errors.As(err, &oor) || oor.LogStartOffset != 3 {
				t.Fatalf("poll at 0 after retention, the replica behind = %v; want out of range at log start 3", err)
			}
			res, err := l.Poll(ctx, "lag-retention", 0, 3, opt)
			if err != nil || len(res.Records) != 2 || string(res.Records[0].Value) != "c1-0" {
				t.Fatalf("poll at 3 = %+v, %v; want the second commit", res, err)
			}
		})
	})
}
