package log_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestPollEventualBoundsOnALaggingReplica: a poll with EventualBounds answers from a
// replica's bounds when the offset lies within them — at its stale high watermark,
// nothing new yet, never an error — and reads them again strongly consistently when the
// offset lies past them, so a record the replica has not seen is neither skipped nor
// answered out of range; past the real high watermark it is out of range.
func TestPollEventualBoundsOnALaggingReplica(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		meta := &backendtest.LaggingReplica{Meta: s.Meta}
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
		opt := log.PollOptions{MaxRecords: 100, EventualBounds: true}

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
			t.Fatalf("a poll without EventualBounds read the replica")
		}
	})
}
