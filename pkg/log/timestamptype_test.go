package log_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
)

// TestLogAppendTimeTopic: a topic created with LogAppendTime stamps every record with
// its append time, records and blocks alike, whatever timestamp the producer gave, and
// answers that time; a topic of the default (CreateTime) keeps the producer's, on both
// backends.
func TestLogAppendTimeTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		if _, err := l.CreateTopicWith(ctx, "lat", log.TopicSpec{Partitions: 1, LogAppendTime: true}); err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "ct", 1)
		if tp, err := l.Topic(ctx, "lat"); err != nil || !tp.LogAppendTime {
			t.Fatalf("topic: %+v, %v; want LogAppendTime", tp, err)
		}
		produced := int64(1000)
		p := int32(0)
		before := time.Now().UnixMilli()
		for _, topic := range []string{"lat", "ct"} {
			res, err := l.Append(ctx, topic, []log.Record{{Value: []byte("r"), Partition: &p, Timestamp: &produced}}, log.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := segment.EncodeBlock([]segment.Record{{Timestamp: produced, Value: []byte("b")}, {Timestamp: produced + 1, Value: []byte("c")}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendBlocks(ctx, topic, []log.Block{{Partition: 0, Data: b}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			recs := readAll(t, l, topic, 0)
			if len(recs) != 3 {
				t.Fatalf("%s: %d records, want 3", topic, len(recs))
			}
			if topic == "ct" {
				if recs[0].Timestamp != produced || recs[1].Timestamp != produced || recs[2].Timestamp != produced+1 {
					t.Fatalf("ct: timestamps %d %d %d, want the producer's", recs[0].Timestamp, recs[1].Timestamp, recs[2].Timestamp)
				}
				if res[0].AppendTime != 0 {
					t.Fatalf("ct: AppendTime %d, want 0", res[0].AppendTime)
				}
				continue
			}
			for i, r := range recs {
				if r.Timestamp < before {
					t.Fatalf("lat: record %d has timestamp %d, before the append (%d)", i, r.Timestamp, before)
				}
			}
			if res[0].AppendTime != recs[0].Timestamp {
				t.Fatalf("lat: AppendTime %d, stored %d", res[0].AppendTime, recs[0].Timestamp)
			}
			if recs[1].Timestamp != recs[2].Timestamp {
				t.Fatalf("lat: one block's records stamped %d and %d", recs[1].Timestamp, recs[2].Timestamp)
			}
		}
	})
}
