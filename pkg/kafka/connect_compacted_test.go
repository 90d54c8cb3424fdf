package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TestConnectConfigTopicCompacted is Kafka Connect's config topic: connector configs,
// task configs, target states and commit markers written under their keys round after
// round with franz-go, one connector deleted with a tombstone, the topic compacted, and
// then read from the start by a new franz-go consumer, as a Connect worker does when it
// joins: it gets every key's latest value (the tombstone still within
// delete.retention), fewer records than were written, at increasing offsets, on both
// backends.
func TestConnectConfigTopicCompacted(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		ctx := context.Background()
		tp, err := g.log.CreateTopicWith(ctx, "connect-configs", log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}})
		if err != nil {
			t.Fatal(err)
		}
		cl := g.client(t, kgo.DefaultProduceTopic("connect-configs"))
		want := map[string]*string{}
		written := 0
		put := func(k string, v *string) {
			r := &kgo.Record{Key: []byte(k)}
			if v != nil {
				r.Value = []byte(*v)
			}
			if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			want[k] = v
			written++
		}
		str := func(f string, a ...any) *string { s := fmt.Sprintf(f, a...); return &s }
		for round := range 4 {
			for _, c := range []string{"a", "b"} {
				put("connector-"+c, str(`{"name":%q,"tasks.max":%d}`, c, round+1))
				for task := range round + 1 {
					put(fmt.Sprintf("task-%s-%d", c, task), str(`{"round":%d}`, round))
				}
				put("commit-"+c, str(`{"tasks":%d}`, round+1))
				put("target-state-"+c, str(`{"state":"STARTED","round":%d}`, round))
			}
		}
		put("connector-b", nil)
		put("target-state-b", nil)

		job := &compact.Job{Meta: s.Meta.(compact.Meta), Objects: s.Objects, MinDirtyRatio: -1,
			Clock: func() time.Time { return time.Now().Add(compact.HeadGuard + time.Minute) }}
		var st compact.Stats
		if err := job.Topic(ctx, tp, &st); err != nil {
			t.Fatal(err)
		}
		if st.RecordsRemoved == 0 {
			t.Fatalf("the pass removed nothing: %+v", st)
		}
		got := consume(t, g, "connect-configs", written-int(st.RecordsRemoved))
		seen := map[string]*string{}
		for i, r := range got {
			if i > 0 && r.Offset <= got[i-1].Offset {
				t.Fatalf("offset %d after %d", r.Offset, got[i-1].Offset)
			}
			var v *string
			if r.Value != nil {
				s := string(r.Value)
				v = &s
			}
			seen[string(r.Key)] = v
		}
		if len(got) != len(want) || len(seen) != len(want) {
			t.Fatalf("read %d records of %d keys, want one per key of %d (written %d)", len(got), len(seen), len(want), written)
		}
		for k, w := range want {
			g, ok := seen[k]
			if !ok || (g == nil) != (w == nil) || (g != nil && *g != *w) {
				t.Fatalf("key %s: %v, want %v", k, g, w)
			}
		}
	})
}
