package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
		{"RetentionPin", []testCase[store.MetaStore]{
			{"StoredAtCreateAndSet", testRetentionPin},
		}},
		{"TimestampType", []testCase[store.MetaStore]{
			{"LogAppendTimeKept", testLogAppendTimeKept},
		}},
		{"Deletion", []testCase[store.MetaStore]{
			{"DeleteFreesNameAtOnce", testDeleteFreesName},
			{"PurgeIsPerIncarnation", testPurgeTopic},
			{"LegacyIncarnation", testLegacyIncarnation},
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

// testLogAppendTimeKept: a topic's timestamp type is kept from its creation (false by
// default), through a partition increase and a pin change, and a
// topic created again under the name has its own.
func testLogAppendTimeKept(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	lat := store.Topic{Name: UniqueName(t, "lat"), Incarnation: "inc-a", Partitions: 1, Retention: time.Hour, CreatedAt: at(0), LogAppendTime: true}
	ct := store.Topic{Name: UniqueName(t, "ct"), Partitions: 1, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, lat))
	must(t, "CreateTopic", m.CreateTopic(ctx, ct))
	check := func(step string, name string, want bool) {
		t.Helper()
		got, err := m.GetTopic(ctx, name)
		must(t, "GetTopic", err)
		if got.LogAppendTime != want {
			t.Fatalf("%s: GetTopic(%s).LogAppendTime = %v, want %v", step, name, got.LogAppendTime, want)
		}
	}
	check("created", lat.Name, true)
	check("created", ct.Name, false)
	_, err := a.IncreasePartitions(ctx, lat.Name, 2)
	must(t, "IncreasePartitions", err)
	check("after IncreasePartitions", lat.Name, true)
	_, err = a.SetRetentionPin(ctx, lat.Name, time.Hour)
	must(t, "SetRetentionPin", err)
	check("after SetRetentionPin", lat.Name, true)
	must(t, "DeleteTopic", a.DeleteTopic(ctx, lat.Name, at(1)))
	again := lat
	again.Incarnation, again.LogAppendTime, again.CreatedAt = "x2", false, at(2)
	must(t, "CreateTopic again", m.CreateTopic(ctx, again))
	check("created again", lat.Name, false)
}

// testRetentionPin: a topic's pin cap is kept from its creation, replaced by
// SetRetentionPin without touching the rest of the topic, removed by 0, and an unknown
// or deleted name is ErrNotFound.
func testRetentionPin(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	tp := store.Topic{Name: UniqueName(t, "t"), Partitions: 2, Retention: time.Hour, RetentionPin: 6 * time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	read, err := m.GetTopic(ctx, tp.Name)
	must(t, "GetTopic", err)
	if normTopic(read) != normTopic(tp) {
		t.Fatalf("GetTopic = %+v, want %+v", read, tp)
	}
	for _, pin := range []time.Duration{90 * time.Minute, 0, time.Second} {
		want := tp
		want.RetentionPin = pin
		got, err := a.SetRetentionPin(ctx, tp.Name, pin)
		must(t, "SetRetentionPin", err)
		if normTopic(got) != normTopic(want) {
			t.Fatalf("SetRetentionPin(%s) = %+v, want %+v", pin, got, want)
		}
		read, err := m.GetTopic(ctx, tp.Name)
		must(t, "GetTopic", err)
		if normTopic(read) != normTopic(want) {
			t.Fatalf("GetTopic after SetRetentionPin(%s) = %+v, want %+v", pin, read, want)
		}
	}
	_, err = a.SetRetentionPin(ctx, UniqueName(t, "missing"), time.Hour)
	wantErrIs(t, "SetRetentionPin of an unknown topic", err, store.ErrNotFound)
	must(t, "DeleteTopic", a.DeleteTopic(ctx, tp.Name, at(1)))
	_, err = a.SetRetentionPin(ctx, tp.Name, time.Hour)
	wantErrIs(t, "SetRetentionPin of a deleted topic", err, store.ErrNotFound)
	if _, err := m.GetTopic(ctx, tp.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetRetentionPin of a deleted topic brought it back: GetTopic = %v", err)
	}
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

// testDeleteFreesName: a delete frees the name at once and keeps the deleted
// incarnation for its purge; the name created again is a new incarnation whose counters
// start at zero beside the old one's (issue 18, item 14), and GetTopic answers a
// deleted name as unknown in its one read (item 6).
func testDeleteFreesName(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	old := store.Topic{Name: UniqueName(t, "t"), Incarnation: "inc-a", Partitions: 2, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, old))
	commit(ctx, t, m, entry(old.ID(), 1, 0, 3))
	wantErrIs(t, "DeleteTopic of an unknown topic", a.DeleteTopic(ctx, UniqueName(t, "missing"), at(1)), store.ErrNotFound)
	wantErrIs(t, "PurgeTopic of a live topic", a.PurgeTopic(ctx, old.Name, old.Incarnation), store.ErrNotDeleted)
	must(t, "DeleteTopic", a.DeleteTopic(ctx, old.Name, at(1000)))
	_, err := m.GetTopic(ctx, old.Name)
	wantErrIs(t, "GetTopic of a deleted topic", err, store.ErrNotFound)
	wantErrIs(t, "DeleteTopic again", a.DeleteTopic(ctx, old.Name, at(9000)), store.ErrNotFound)
	names, err := m.ListTopics(ctx)
	must(t, "ListTopics", err)
	if slices.Contains(names, old.Name) {
		t.Fatalf("ListTopics after the delete = %v, still holds %s", names, old.Name)
	}
	wantDeleted(ctx, t, a, old, at(1000))

	again := old
	again.Incarnation = "inc-b"
	again.Partitions = 1
	must(t, "CreateTopic of a deleted name", m.CreateTopic(ctx, again))
	got, err := m.GetTopic(ctx, again.Name)
	must(t, "GetTopic", err)
	if normTopic(got) != normTopic(again) {
		t.Fatalf("GetTopic of the re-created topic = %+v, want %+v", got, again)
	}
	wantNextOffset(ctx, t, m, again.ID(), 0, 0)
	commit(ctx, t, m, entry(again.ID(), 0, 0, 1))
	wantNextOffset(ctx, t, m, again.ID(), 0, 1)
	wantNextOffset(ctx, t, m, old.ID(), 1, 3)
	wantDeleted(ctx, t, a, old, at(1000))
	wantErrIs(t, "PurgeTopic of the live incarnation", a.PurgeTopic(ctx, again.Name, again.Incarnation), store.ErrNotDeleted)
}

func wantDeleted(ctx context.Context, t *testing.T, a store.TopicAdminStore, tp store.Topic, when time.Time) {
	t.Helper()
	ds, err := a.DeletedTopics(ctx)
	must(t, "DeletedTopics", err)
	for _, d := range ds {
		if d.Name == tp.Name && d.Incarnation == tp.Incarnation {
			if normTopic(d.Topic) != normTopic(tp) || !msTime(d.DeletedAt).Equal(msTime(when)) {
				t.Fatalf("DeletedTopics holds %+v, want %+v deleted at %v", d, tp, when)
			}
			return
		}
	}
	t.Fatalf("DeletedTopics = %+v, want %s incarnation %q", ds, tp.Name, tp.Incarnation)
}

// testPurgeTopic: a purge removes the deleted incarnation's record and counters and
// nothing of the name's live incarnation, whose claims stay too (issue 18, item 5).
func testPurgeTopic(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	old := store.Topic{Name: UniqueName(t, "t"), Incarnation: "inc-a", Partitions: 2, Retention: time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, old))
	e := commit(ctx, t, m, entry(old.ID(), 1, 0, 3))
	claim := func(tp store.Topic) store.IdempotencyRecord {
		return store.IdempotencyRecord{Key: tp.ID() + "#k", Partition: 0, BodyHash: "h", BaseOffset: 0, Count: 1, ExpiresAt: at(86_400_000)}
	}
	must(t, "ClaimIdempotency", m.ClaimIdempotency(ctx, claim(old)))
	must(t, "DeleteTopic", a.DeleteTopic(ctx, old.Name, at(1000)))
	live := old
	live.Incarnation = "inc-b"
	must(t, "CreateTopic again", m.CreateTopic(ctx, live))
	must(t, "ClaimIdempotency of the new incarnation", m.ClaimIdempotency(ctx, claim(live)))
	commit(ctx, t, m, entry(live.ID(), 1, 0, 2))

	// Retention deletes the index entries before the purge.
	must(t, "DeleteIndexEntry", m.DeleteIndexEntry(ctx, old.ID(), 1, e.BaseOffset))
	must(t, "PurgeTopic", a.PurgeTopic(ctx, old.Name, old.Incarnation))
	must(t, "PurgeTopic again", a.PurgeTopic(ctx, old.Name, old.Incarnation))
	ds, err := a.DeletedTopics(ctx)
	must(t, "DeletedTopics", err)
	for _, d := range ds {
		if d.Name == old.Name {
			t.Fatalf("DeletedTopics after the purge holds %+v", d)
		}
	}
	wantNextOffset(ctx, t, m, old.ID(), 1, 0) // the counter is gone: it reads as never written
	got, err := m.GetTopic(ctx, live.Name)
	must(t, "GetTopic of the live incarnation", err)
	if normTopic(got) != normTopic(live) {
		t.Fatalf("GetTopic after the purge of the old incarnation = %+v, want %+v", got, live)
	}
	wantNextOffset(ctx, t, m, live.ID(), 1, 2)
	if _, err := m.GetIdempotency(ctx, claim(live).Key, 0); err != nil {
		t.Fatalf("the live incarnation's claim after the purge: %v", err)
	}
}

// testLegacyIncarnation: a topic stored without an incarnation (before them) keys its
// partitions by its name; deleting it frees the name for a new incarnation whose
// counters are apart, and its purge leaves the new incarnation alone.
func testLegacyIncarnation(ctx context.Context, t *testing.T, m store.MetaStore) {
	a := m.(store.TopicAdminStore)
	legacy := store.Topic{Name: UniqueName(t, "t"), Partitions: 1, Retention: time.Hour, CreatedAt: at(0)}
	if legacy.ID() != legacy.Name {
		t.Fatalf("the legacy ID is %q, want the name", legacy.ID())
	}
	must(t, "CreateTopic", m.CreateTopic(ctx, legacy))
	commit(ctx, t, m, entry(legacy.Name, 0, 0, 4))
	must(t, "DeleteTopic", a.DeleteTopic(ctx, legacy.Name, at(1000)))
	wantDeleted(ctx, t, a, legacy, at(1000))
	next := legacy
	next.Incarnation = "inc-1"
	must(t, "CreateTopic of the legacy name", m.CreateTopic(ctx, next))
	wantNextOffset(ctx, t, m, next.ID(), 0, 0)
	commit(ctx, t, m, entry(next.ID(), 0, 0, 1))
	must(t, "PurgeTopic of the legacy incarnation", a.PurgeTopic(ctx, legacy.Name, ""))
	wantNextOffset(ctx, t, m, next.ID(), 0, 1)
	if _, err := m.GetTopic(ctx, next.Name); err != nil {
		t.Fatalf("GetTopic after the legacy purge: %v", err)
	}
}
