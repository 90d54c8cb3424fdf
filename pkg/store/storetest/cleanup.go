package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// makeCleanup makes the harness's MetaStore and requires it to be a CleanupStore and a
// TopicAdminStore too: every backend implements them.
func makeCleanup(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := makeTopicAdmin(h, ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.CleanupStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.CleanupStore", m)
	}
	return m, nil
}

func cleanupSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Cleanup", []testCase[store.MetaStore]{
			{"KeptFromCreate", testCleanupKeptFromCreate},
			{"SetKeepsTheRest", testSetCleanup},
		}},
	}
}

// testCleanupKeptFromCreate: a topic's cleanup policy and compaction settings are read
// back as created (each policy; unset is unset), through a partition increase and a pin
// change, and a topic created again under the name has its own.
func testCleanupKeptFromCreate(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	check := func(step string, want store.Topic) {
		t.Helper()
		got, err := m.GetTopic(ctx, want.Name)
		must(t, "GetTopic", err)
		if normTopic(got) != normTopic(want) {
			t.Fatalf("%s: GetTopic = %+v, want %+v", step, got, want)
		}
	}
	var tp store.Topic
	for i, c := range []store.TopicCleanup{
		{},
		{Cleanup: store.CleanupCompact},
		{Cleanup: store.CleanupCompactDelete, MinCompactionLag: time.Minute, MaxCompactionLag: 7 * time.Hour, DeleteRetention: 90 * time.Second},
	} {
		tp = store.Topic{Name: UniqueName(t, fmt.Sprintf("c%d", i)), Incarnation: "inc-a", Partitions: 1, Retention: time.Hour, CreatedAt: at(0), LogAppendTime: i%2 == 0}.WithCleanup(c)
		must(t, "CreateTopic", m.CreateTopic(ctx, tp))
		check("created", tp)
	}
	_, err := a.IncreasePartitions(ctx, tp.Name, 2)
	must(t, "IncreasePartitions", err)
	_, err = a.SetRetentionPin(ctx, tp.Name, 2*time.Hour)
	must(t, "SetRetentionPin", err)
	tp.Partitions, tp.RetentionPin = 2, 2*time.Hour
	check("after IncreasePartitions and SetRetentionPin", tp)
	must(t, "DeleteTopic", a.DeleteTopic(ctx, tp.Name, at(1)))
	again := store.Topic{Name: tp.Name, Incarnation: "inc-b", Partitions: 1, Retention: time.Hour, CreatedAt: at(2)}
	must(t, "CreateTopic again", m.CreateTopic(ctx, again))
	check("created again", again)
}

// testSetCleanup: SetCleanup replaces a topic's policy and all three settings (a zero
// setting removes it) without touching the rest of the topic, and an unknown or deleted
// name is ErrNotFound without bringing it back.
func testSetCleanup(ctx context.Context, t *testing.T, m store.MetaStore) {
	c := m.(store.CleanupStore)
	tp := store.Topic{Name: UniqueName(t, "t"), Incarnation: "inc1", Partitions: 3, Retention: time.Hour, RetentionPin: 6 * time.Hour, CreatedAt: at(0), LogAppendTime: true}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	for _, set := range []store.TopicCleanup{
		{Cleanup: store.CleanupCompact, MinCompactionLag: time.Second, MaxCompactionLag: time.Hour, DeleteRetention: 2 * time.Hour},
		{Cleanup: store.CleanupCompactDelete, DeleteRetention: time.Minute},
		{},
	} {
		want := tp.WithCleanup(set)
		got, err := c.SetCleanup(ctx, tp.Name, set)
		must(t, "SetCleanup", err)
		if normTopic(got) != normTopic(want) {
			t.Fatalf("SetCleanup(%+v) = %+v, want %+v", set, got, want)
		}
		read, err := m.GetTopic(ctx, tp.Name)
		must(t, "GetTopic", err)
		if normTopic(read) != normTopic(want) {
			t.Fatalf("GetTopic after SetCleanup(%+v) = %+v, want %+v", set, read, want)
		}
	}
	_, err := c.SetCleanup(ctx, UniqueName(t, "missing"), store.TopicCleanup{Cleanup: store.CleanupCompact})
	wantErrIs(t, "SetCleanup of an unknown topic", err, store.ErrNotFound)
	must(t, "DeleteTopic", m.(store.TopicAdminStore).DeleteTopic(ctx, tp.Name, at(1)))
	_, err = c.SetCleanup(ctx, tp.Name, store.TopicCleanup{Cleanup: store.CleanupCompact})
	wantErrIs(t, "SetCleanup of a deleted topic", err, store.ErrNotFound)
	if _, err := m.GetTopic(ctx, tp.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetCleanup of a deleted topic brought it back: GetTopic = %v", err)
	}
}
