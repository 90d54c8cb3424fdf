package log_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// TestPollGetsOncePerObjectRange (issue 20 item 4): a poll over index entries that lie
// back to back in one segment object (three commits of one partition from one object,
// as an idempotent member's own commits were before folded claims) reads them with one
// ranged GET instead of one per entry (3 before), on the emulator's S3 and locally, for
// both the record and the raw-range poll, and returns every record in order.
func TestPollGetsOncePerObjectRange(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		objs := &backendtest.CountingGets{ObjectStore: s.Objects}
		l, err := log.New(log.Config{Objects: objs, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		topic, err := l.CreateTopic(ctx, "merge", 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Millisecond)
		var obj []byte
		var blocks [][2]int64
		for b := range 3 {
			data, err := segment.EncodeBlock([]segment.Record{
				{Timestamp: now.UnixMilli(), Value: fmt.Appendf(nil, "b%d-0", b)},
				{Timestamp: now.UnixMilli(), Value: fmt.Appendf(nil, "b%d-1", b)}})
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, [2]int64{int64(len(obj)), int64(len(data))})
			obj = append(obj, data...)
		}
		key := segment.ObjectKey(topic.Name, topic.Incarnation, ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy()))
		if err := s.Objects.Put(ctx, key, obj, store.Kept); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			c, err := s.Meta.Sequence(ctx, store.SeqCommit{Entry: store.IndexEntry{Topic: topic.ID(), Count: 2, ObjectKey: key,
				ByteOffset: b[0], ByteLength: b[1], MaxTimestamp: now, AppendedAt: now, ExpiresAt: now.Add(48 * time.Hour)}})
			if err != nil {
				t.Fatal(err)
			}
			if !c.Materialized {
				if err := s.Meta.PutIndexEntry(ctx, c.Entry); err != nil {
					t.Fatal(err)
				}
			}
		}
		before := objs.Gets.Load()
		res, err := l.Poll(ctx, "merge", 0, 0, log.PollOptions{MaxRecords: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got := objs.Gets.Load() - before; got != 1 {
			t.Fatalf("a poll of 3 adjacent entries of one object made %d GETs, want 1", got)
		}
		if len(res.Records) != 6 || string(res.Records[5].Value) != "b2-1" || res.NextOffset != 6 {
			t.Fatalf("poll = %d records, next %d; want the 6, in order", len(res.Records), res.NextOffset)
		}
		before = objs.Gets.Load()
		rr, err := l.PollRanges(ctx, "merge", 0, 0, log.PollOptions{MaxRecords: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got := objs.Gets.Load() - before; got != 1 || rr.NextOffset != 6 {
			t.Fatalf("a ranges poll made %d GETs (want 1), next %d (want 6)", got, rr.NextOffset)
		}
	})
}
