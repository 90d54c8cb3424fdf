package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// makeRetention makes the harness's MetaStore and requires it to be a RetentionStore
// and a TopicAdminStore too: every backend implements them.
func makeRetention(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := makeTopicAdmin(h, ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.RetentionStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.RetentionStore", m)
	}
	return m, nil
}

func retentionSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Retention", []testCase[store.MetaStore]{
			{"SetKeepsTheRest", testSetRetention},
		}},
	}
}

// testSetRetention: SetRetention replaces a topic's retention without touching the rest
// of it (its pin cap, partitions, incarnation), and an unknown or deleted name is
// ErrNotFound without bringing it back.
func testSetRetention(ctx context.Context, t *testing.T, m store.MetaStore) {
	r := m.(store.RetentionStore)
	tp := store.Topic{Name: UniqueName(t, "t"), Incarnation: "inc1", Partitions: 3, Retention: time.Hour, RetentionPin: 6 * time.Hour, CreatedAt: at(0)}
	must(t, "CreateTopic", m.CreateTopic(ctx, tp))
	for _, ret := range []time.Duration{48 * time.Hour, 90 * time.Second} {
		want := tp
		want.Retention = ret
		got, err := r.SetRetention(ctx, tp.Name, ret)
		must(t, "SetRetention", err)
		if normTopic(got) != normTopic(want) {
			t.Fatalf("SetRetention(%s) = %+v, want %+v", ret, got, want)
		}
		read, err := m.GetTopic(ctx, tp.Name)
		must(t, "GetTopic", err)
		if normTopic(read) != normTopic(want) {
			t.Fatalf("GetTopic after SetRetention(%s) = %+v, want %+v", ret, read, want)
		}
	}
	_, err := r.SetRetention(ctx, UniqueName(t, "missing"), time.Hour)
	wantErrIs(t, "SetRetention of an unknown topic", err, store.ErrNotFound)
	must(t, "DeleteTopic", m.(store.TopicAdminStore).DeleteTopic(ctx, tp.Name, at(1)))
	_, err = r.SetRetention(ctx, tp.Name, time.Hour)
	wantErrIs(t, "SetRetention of a deleted topic", err, store.ErrNotFound)
	if _, err := m.GetTopic(ctx, tp.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetRetention of a deleted topic brought it back: GetTopic = %v", err)
	}
}
