package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// makeTopicAdmin makes the harness's MetaStore and requires it to be a
// TopicAdminStore too: every backend implements both.
func makeTopicAdmin(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.TopicAdminStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.TopicAdminStore", m)
	}
	return m, nil
}

func topicAdminSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Partitions", []testCase[store.MetaStore]{
			{"IncreaseKeepsCounters", testIncreasePartitions},
			{"NeverDecreases", testIncreaseRefused},
		}},
		{"Deletion", []testCase[store.MetaStore]{
			{"TombstoneKeepsNameTaken", testDeleteTopicTombstone},
			{"PurgeKeepsCounters", testPurgeTopic},
		}},
	}
}

func testIncreasePartitions(ctx context.Context, t *testing.T, m store.MetaStore) {
	tp := store.Topic{Name: UniqueName(t, "t"), Partitions: 2, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	commit(ctx, t, m, entry(tp.Name, 1, 0, 4))
	got, err := m.(store.TopicAdminStore).IncreasePartitions(ctx, tp.Name, 5)
	must(t, "IncreasePartitions", err)
	want := tp
	want.Partitions = 5
	if normTopic(got) != normTopic(want) {
		t.Fatalf("IncreasePartitions = %+v, want %+v", got, want)
	}
	read, err := m.GetTopic(ctx, tp.Name)
	must(t, "GetTopic", err)
	if normTopic(read) != normTopic(want) {
		t.Fatalf("GetTopic after increase = %+v, want %+v", read, want)
	}
	// The old partitions keep their high watermarks; the new ones start at zero.
	wantNextOffset(ctx, t, m, tp.Name, 1, 4)
	wantNextOffset(ctx, t, m, tp.Name, 0, 0)
	wantNextOffset(ctx, t, m, tp.Name, 4, 0)
	commit(ctx, t, m, entry(tp.Name, 4, 0, 2))
	wantNextOffset(ctx, t, m, tp.Name, 4, 2)
	commit(ctx, t, m, entry(tp.Name, 1, 0, 1))
	wantNextOffset(ctx, t, m, tp.Name, 1, 5)
}

func testIncreaseRefused(ctx context.Context, t *testing.T, m store.MetaStore) {
	tp := store.Topic{Name: UniqueName(t, "t"), Partitions: 3, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	a := m.(store.TopicAdminStore)
	for _, n := range []int32{3, 2, 1} {
		_, err := a.IncreasePartitions(ctx, tp.Name, n)
		wantErrIs(t, fmt.Sprintf("IncreasePartitions to %d of 3", n), err, store.ErrPartitionsNotRaised)
	}
	_, err := a.IncreasePartitions(ctx, UniqueName(t, "missing"), 4)
	wantErrIs(t, "IncreasePartitions of an unknown topic", err, store.ErrNotFound)
	read, err := m.GetTopic(ctx, tp.Name)
	must(t, "GetTopic", err)
	if read.Partitions != 3 {
		t.Fatalf("a refused increase changed the count to %d", read.Partitions)
	}
}

func testDeleteTopicTombstone(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	tp := store.Topic{Name: UniqueName(t, "t"), Partitions: 2, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	if _, deleted, err := a.TopicTombstone(ctx, tp.Name); err != nil || deleted {
		t.Fatalf("TopicTombstone of a live topic = %v, %v", deleted, err)
	}
	wantErrIs(t, "DeleteTopic of an unknown topic", a.DeleteTopic(ctx, UniqueName(t, "missing"), at(1)), store.ErrNotFound)
	wantErrIs(t, "PurgeTopic of a live topic", a.PurgeTopic(ctx, tp.Name), store.ErrNotDeleted)
	must(t, "DeleteTopic", a.DeleteTopic(ctx, tp.Name, at(1000)))
	must(t, "DeleteTopic again", a.DeleteTopic(ctx, tp.Name, at(9000)))
	when, deleted, err := a.TopicTombstone(ctx, tp.Name)
	must(t, "TopicTombstone", err)
	if !deleted || !msTime(when).Equal(msTime(at(1000))) {
		t.Fatalf("TopicTombstone = %v, %v; want deleted at the first time", when, deleted)
	}
	wantErrIs(t, "CreateTopic of a deleted name", m.CreateTopic(ctx, tp), store.ErrExists)
	ds, err := a.DeletedTopics(ctx)
	must(t, "DeletedTopics", err)
	found := false
	for _, d := range ds {
		if d.Name == tp.Name {
			found = d.Partitions == 2 && msTime(d.DeletedAt).Equal(msTime(at(1000)))
		}
	}
	if !found {
		t.Fatalf("DeletedTopics = %+v, want %s with 2 partitions deleted at 1000", ds, tp.Name)
	}
}

func testPurgeTopic(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	tp := store.Topic{Name: UniqueName(t, "t"), Partitions: 2, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	commit(ctx, t, m, entry(tp.Name, 1, 0, 3))
	must(t, "DeleteTopic", a.DeleteTopic(ctx, tp.Name, at(1000)))
	must(t, "PurgeTopic", a.PurgeTopic(ctx, tp.Name))
	must(t, "PurgeTopic again", a.PurgeTopic(ctx, tp.Name))
	_, err := m.GetTopic(ctx, tp.Name)
	wantErrIs(t, "GetTopic after purge", err, store.ErrNotFound)
	if _, deleted, err := a.TopicTombstone(ctx, tp.Name); err != nil || deleted {
		t.Fatalf("TopicTombstone after purge = %v, %v", deleted, err)
	}
	// The name is free again, and the counters were kept: offsets continue, never reused.
	must(t, "CreateTopic again", m.CreateTopic(ctx, tp))
	wantNextOffset(ctx, t, m, tp.Name, 1, 3)
	commit(ctx, t, m, entry(tp.Name, 1, 0, 1))
	wantNextOffset(ctx, t, m, tp.Name, 1, 4)
}
