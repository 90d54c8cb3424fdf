package local

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// TestOpenUpgradesLegacyTombstones: a file written before incarnations — a live topic
// and a deleted one whose row stayed beside its tombstone — opens with the live topic
// working as before (its partitions keyed by its name) and the deleted one moved to
// the deleted incarnations: its name is free, and the purge removes it.
func TestOpenUpgradesLegacyTombstones(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	m, err := OpenMetaStore(path)
	if err != nil {
		t.Fatal(err)
	}
	deletedAt := time.UnixMilli(1_700_000_000_000).UTC()
	for _, name := range []string{"live", "gone"} {
		if err := m.CreateTopic(ctx, store.Topic{Name: name, Partitions: 1, Retention: time.Hour, CreatedAt: deletedAt}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Sequence(ctx, store.SeqCommit{Entry: store.IndexEntry{Topic: name, Count: 2, ObjectKey: "v1/" + name + "/x", ByteLength: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The legacy delete: a tombstone beside the row, which stays.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucketTombstones))
		if err != nil {
			return err
		}
		v, _ := json.Marshal(tombstoneRec{DeletedAt: deletedAt})
		return b.Put([]byte("gone"), v)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	m, err = OpenMetaStore(path)
	if err != nil {
		t.Fatalf("open the legacy file: %v", err)
	}
	defer m.Close()
	if names, err := m.ListTopics(ctx); err != nil || !slices.Equal(names, []string{"live"}) {
		t.Fatalf("ListTopics = %v, %v; want [live]", names, err)
	}
	if _, err := m.GetTopic(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetTopic of the legacy-deleted topic: %v, want ErrNotFound", err)
	}
	ds, err := m.DeletedTopics(ctx)
	if err != nil || len(ds) != 1 || ds[0].Name != "gone" || ds[0].Incarnation != "" || !ds[0].DeletedAt.Equal(deletedAt) {
		t.Fatalf("DeletedTopics = %+v, %v; want gone (legacy) deleted at %v", ds, err, deletedAt)
	}
	live, err := m.GetTopic(ctx, "live")
	if err != nil || live.Incarnation != "" {
		t.Fatalf("GetTopic(live) = %+v, %v; want the legacy incarnation", live, err)
	}
	if st, err := m.Sequencer(ctx, live.ID(), 0); err != nil || st.NextOffset != 2 {
		t.Fatalf("the legacy topic's counter = %+v, %v; want 2", st, err)
	}
	if err := m.CreateTopic(ctx, store.Topic{Name: "gone", Incarnation: "n1", Partitions: 1, Retention: time.Hour}); err != nil {
		t.Fatalf("create the legacy-deleted name: %v", err)
	}
	if err := m.PurgeTopic(ctx, "gone", ""); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Sequencer(ctx, "gone#n1", 0); err != nil || st.NextOffset != 0 {
		t.Fatalf("the new incarnation's counter = %+v, %v; want 0", st, err)
	}
	if ds, err := m.DeletedTopics(ctx); err != nil || len(ds) != 0 {
		t.Fatalf("DeletedTopics after the purge = %+v, %v", ds, err)
	}
}
