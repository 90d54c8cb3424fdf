package log_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// clockLog is a Log over s with a settable clock, and a retention job on the same one.
type clockLog struct {
	*clocktest.Clock
	l *log.Log
	s backendtest.Stores
}

func newClockLog(t *testing.T, s backendtest.Stores) *clockLog {
	t.Helper()
	c := &clockLog{Clock: clocktest.New(time.Now().UTC().Truncate(time.Millisecond)), s: s}
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.l = l
	return c
}

// retain runs one retention pass at the log's clock.
func (c *clockLog) retain(t *testing.T) retention.Stats {
	t.Helper()
	j := retention.Job{Meta: c.s.Meta, Objects: c.s.Objects, Clock: c.Now}
	st, err := j.Run(context.Background())
	if err != nil {
		t.Fatalf("retention pass: %v", err)
	}
	return st
}

func values(t *testing.T, l *log.Log, topic string, p int32) []string {
	t.Helper()
	var out []string
	for _, r := range readAll(t, l, topic, p) {
		out = append(out, string(r.Value))
	}
	return out
}

// TestDeletedTopicRecreatedAtOnce (issue 18, item 14): a delete frees the name at once;
// the topic created again under it is a new incarnation whose offsets start at 0 and
// which reads none of the old records, while the old one is still waiting for its purge.
func TestDeletedTopicRecreatedAtOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		c := newClockLog(t, s)
		mustTopic(t, c.l, "orders", 2)
		for _, v := range []string{"old-0", "old-1", "old-2"} {
			if _, err := c.l.Append(ctx, "orders", []log.Record{{Value: []byte(v), Partition: i32(1)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.l.DeleteTopic(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.l.CreateTopic(ctx, "orders", 2, time.Hour); err != nil {
			t.Fatalf("create right after the delete: %v, want the name free at once", err)
		}
		res, err := c.l.Append(ctx, "orders", []log.Record{{Value: []byte("new-0"), Partition: i32(1)}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 0 {
			t.Fatalf("first append to the re-created topic = %+v, %v; want offset 0", res, err)
		}
		if got := values(t, c.l, "orders", 1); len(got) != 1 || got[0] != "new-0" {
			t.Fatalf("the re-created topic reads %q, want only [new-0]", got)
		}
		start, hw, err := c.l.Bounds(ctx, "orders", 1)
		if err != nil || start != 0 || hw != 1 {
			t.Fatalf("bounds of the re-created topic = [%d, %d), %v; want [0, 1)", start, hw, err)
		}
		// The purge of the old incarnation, past the margin, leaves the new one alone.
		c.Advance(6 * time.Minute)
		if st := c.retain(t); st.TopicsPurged != 1 {
			t.Fatalf("retention pass after the margin purged %d topics, want 1", st.TopicsPurged)
		}
		if got := values(t, c.l, "orders", 1); len(got) != 1 || got[0] != "new-0" {
			t.Fatalf("after the purge the re-created topic reads %q, want [new-0]", got)
		}
		res, err = c.l.Append(ctx, "orders", []log.Record{{Value: []byte("new-1"), Partition: i32(1)}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 1 {
			t.Fatalf("append after the purge = %+v, %v; want offset 1", res, err)
		}
	})
}

// TestClaimsDoNotOutliveTheirTopic (issue 18, item 5): after delete, purge and re-create,
// an append with a key the old topic saw was taken for a retry and answered with the old
// offsets while nothing was stored. Claims belong to the incarnation, so it is a new
// append.
func TestClaimsDoNotOutliveTheirTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		c := newClockLog(t, s)
		mustTopic(t, c.l, "pay", 1)
		body := []log.Record{{Value: []byte("charge-1")}}
		for range 3 {
			if _, err := c.l.Append(ctx, "pay", []log.Record{{Value: []byte("filler")}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.l.Append(ctx, "pay", body, log.AppendOptions{IdempotencyKey: "k1"}); err != nil {
			t.Fatal(err)
		}
		if err := c.l.DeleteTopic(ctx, "pay"); err != nil {
			t.Fatal(err)
		}
		c.Advance(6 * time.Minute)
		c.retain(t)
		if _, err := c.l.CreateTopic(ctx, "pay", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		res, err := c.l.Append(ctx, "pay", body, log.AppendOptions{IdempotencyKey: "k1"})
		if err != nil || res[0].Offset != 0 {
			t.Fatalf("append with the old topic's key = %+v, %v; want a new append at offset 0", res, err)
		}
		if got := values(t, c.l, "pay", 0); len(got) != 1 || got[0] != "charge-1" {
			t.Fatalf("the re-created topic reads %q, want [charge-1]", got)
		}
	})
}

// purgeAfterRead runs a delete and a purge of the topic right after the first topic-row
// read that follows arm: the race of issue 18 item 6, in which the tombstone was read
// separately from the row.
type purgeAfterRead struct {
	store.MetaStore
	mu    sync.Mutex
	armed bool
	purge func()
}

func (p *purgeAfterRead) GetTopic(ctx context.Context, name string) (store.Topic, error) {
	t, err := p.MetaStore.GetTopic(ctx, name)
	p.mu.Lock()
	fire := p.armed
	p.armed = false
	p.mu.Unlock()
	if fire {
		p.purge()
	}
	return t, err
}

// TestPurgeRacingTopicReload (issue 18, item 6): a node loading a deleted topic must
// answer it as unknown even when the purge runs between its reads. Before, it read the
// row, then the (by then purged) tombstone, cached the topic as live and acknowledged
// appends to it.
func TestPurgeRacingTopicReload(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		admin := newClockLog(t, s)
		mustTopic(t, admin.l, "gone", 1)
		if err := admin.l.DeleteTopic(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		hooked := &purgeAfterRead{MetaStore: s.Meta}
		hooked.purge = func() {
			admin.Advance(6 * time.Minute)
			admin.retain(t)
		}
		node, err := log.New(log.Config{Objects: s.Objects, Meta: topicAdminMeta{hooked}, Clock: admin.Now})
		if err != nil {
			t.Fatal(err)
		}
		hooked.mu.Lock()
		hooked.armed = true
		hooked.mu.Unlock()
		_, err = node.Append(ctx, "gone", []log.Record{{Value: []byte("lost")}}, log.AppendOptions{})
		if !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("append to a topic deleted and purged mid-reload = %v, want ErrTopicNotFound", err)
		}
	})
}

// topicAdminMeta exposes the wrapped store's topic administration beside the hooked
// MetaStore methods.
type topicAdminMeta struct{ *purgeAfterRead }

func (m topicAdminMeta) admin() store.TopicAdminStore {
	return m.purgeAfterRead.MetaStore.(store.TopicAdminStore)
}

func (m topicAdminMeta) IncreasePartitions(ctx context.Context, name string, n int32) (store.Topic, error) {
	return m.admin().IncreasePartitions(ctx, name, n)
}

func (m topicAdminMeta) DeleteTopic(ctx context.Context, name string, at time.Time) error {
	return m.admin().DeleteTopic(ctx, name, at)
}

func (m topicAdminMeta) DeletedTopics(ctx context.Context) ([]store.DeletedTopic, error) {
	return m.admin().DeletedTopics(ctx)
}

func (m topicAdminMeta) PurgeTopic(ctx context.Context, name, incarnation string) error {
	return m.admin().PurgeTopic(ctx, name, incarnation)
}
