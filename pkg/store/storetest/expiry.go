package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// testObjectExpiry: Put stores the bytes whatever the mark; Keep leaves them, is
// idempotent and refuses a missing object with ErrNotFound; a refused Put leaves the
// stored object's mark. A backend that reads marks back (store.ExpiryReader, S3's
// tags) must hold Expiring exactly on the object put so and not kept since.
func testObjectExpiry(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t)
	exp, kept := p+"expiring", p+"kept"
	must(t, "Put expiring", b.Put(ctx, exp, []byte("expiring bytes"), store.Expiring))
	must(t, "Put kept", b.Put(ctx, kept, []byte("kept bytes"), store.Kept))
	wantObject(ctx, t, b, exp, []byte("expiring bytes"))
	wantObject(ctx, t, b, kept, []byte("kept bytes"))
	wantErrIs(t, "an expiring Put over a kept object", b.Put(ctx, kept, []byte("other"), store.Expiring), store.ErrExists)
	r, reads := b.(store.ExpiryReader)
	mark := func(key string, want store.Expiry) {
		t.Helper()
		if !reads {
			return
		}
		got, err := r.ObjectExpiry(ctx, key)
		must(t, "ObjectExpiry "+key, err)
		if got != want {
			t.Fatalf("ObjectExpiry(%q) = %v, want %v", key, got, want)
		}
	}
	mark(exp, store.Expiring)
	mark(kept, store.Kept)
	must(t, "Keep expiring", b.Keep(ctx, exp))
	mark(exp, store.Kept)
	wantObject(ctx, t, b, exp, []byte("expiring bytes"))
	must(t, "Keep again", b.Keep(ctx, exp))
	must(t, "Keep a kept object", b.Keep(ctx, kept))
	mark(kept, store.Kept)
	wantErrIs(t, "Keep of a missing object", b.Keep(ctx, p+"missing"), store.ErrNotFound)
	if reads {
		_, err := r.ObjectExpiry(ctx, p+"missing")
		wantErrIs(t, "ObjectExpiry of a missing object", err, store.ErrNotFound)
	}
}

// makeExpiryClearer makes the harness's MetaStore and requires it to be an
// IndexExpiryClearer: every backend implements it.
func makeExpiryClearer(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.IndexExpiryClearer); !ok {
		return nil, fmt.Errorf("%T does not implement store.IndexExpiryClearer", m)
	}
	return m, nil
}

func expiryClearerSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"ClearExpiry", []testCase[store.MetaStore]{
			{"ClearsOnlyTheEntry", testClearExpiry},
			{"ChangedOrMissingRefused", testClearExpiryRefused},
		}},
	}
}

// farExpiry is an expiry no backend's TTL reaches during a test.
var farExpiry = at(0).Add(100 * 365 * 24 * time.Hour)

// expiringFixture writes entries [0,3) [3,5) of partition 0 and [0,2) of partition 1,
// each with an expiry.
func expiringFixture(ctx context.Context, t *testing.T, m store.MetaStore) (string, []store.IndexEntry) {
	t.Helper()
	topic := UniqueName(t, "clear")
	es := []store.IndexEntry{
		{Topic: topic, Partition: 0, BaseOffset: 0, Count: 3, ObjectKey: "obj0", ByteLength: 10, AppendedAt: at(1), MaxTimestamp: at(1), ExpiresAt: farExpiry, Batch: 1},
		{Topic: topic, Partition: 0, BaseOffset: 3, Count: 2, ObjectKey: "obj1", ByteOffset: 10, ByteLength: 7, AppendedAt: at(2), MaxTimestamp: at(2), ExpiresAt: farExpiry.Add(time.Second), Batch: 2},
		{Topic: topic, Partition: 1, BaseOffset: 0, Count: 2, ObjectKey: "obj0", ByteOffset: 10, ByteLength: 5, AppendedAt: at(1), MaxTimestamp: at(1), ExpiresAt: farExpiry},
	}
	for _, e := range es {
		must(t, "PutIndexEntry", m.PutIndexEntry(ctx, e))
	}
	return topic, es
}

// testClearExpiry: the cleared entry reads back with no expiry and every other field
// as written; the partition's other entry and the other partition's keep theirs;
// clearing again, or an entry that has none, changes nothing.
func testClearExpiry(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, es := expiringFixture(ctx, t, m)
	c := m.(store.IndexExpiryClearer)
	must(t, "ClearIndexExpiry", c.ClearIndexExpiry(ctx, es[0]))
	cleared := es[0]
	cleared.ExpiresAt = time.Time{}
	want := func(p int32, want ...store.IndexEntry) {
		t.Helper()
		got := readAll(ctx, t, m, topic, p)
		if len(got) != len(want) {
			t.Fatalf("partition %d: %d entries %+v, want %+v", p, len(got), got, want)
		}
		for i := range want {
			if normEntry(got[i]) != normEntry(want[i]) {
				t.Fatalf("partition %d entry %d = %+v, want %+v", p, i, got[i], want[i])
			}
		}
	}
	want(0, cleared, es[1])
	want(1, es[2])
	must(t, "ClearIndexExpiry again", c.ClearIndexExpiry(ctx, es[0]))
	must(t, "ClearIndexExpiry of the entry as cleared", c.ClearIndexExpiry(ctx, cleared))
	want(0, cleared, es[1])
}

// testClearExpiryRefused: an entry not stored as given (another object or range at its
// base) and a base holding no entry are ErrConflict, and nothing changes: no entry is
// written where none was.
func testClearExpiryRefused(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, es := expiringFixture(ctx, t, m)
	c := m.(store.IndexExpiryClearer)
	other := es[1]
	other.ObjectKey = "rewritten"
	wantErrIs(t, "ClearIndexExpiry of another object's entry", c.ClearIndexExpiry(ctx, other), store.ErrConflict)
	shorter := es[1]
	shorter.ByteLength--
	wantErrIs(t, "ClearIndexExpiry of another range", c.ClearIndexExpiry(ctx, shorter), store.ErrConflict)
	gone := store.IndexEntry{Topic: topic, Partition: 0, BaseOffset: 5, Count: 4, ObjectKey: "obj2", ByteLength: 9, AppendedAt: at(3), ExpiresAt: farExpiry}
	wantErrIs(t, "ClearIndexExpiry where no entry is", c.ClearIndexExpiry(ctx, gone), store.ErrConflict)
	got := readAll(ctx, t, m, topic, 0)
	if len(got) != 2 || normEntry(got[0]) != normEntry(es[0]) || normEntry(got[1]) != normEntry(es[1]) {
		t.Fatalf("after refused clears: %+v, want %+v", got, es[:2])
	}
	if last, ok, err := m.LastIndexEntry(ctx, topic, 0); err != nil || !ok || last.BaseOffset != 3 {
		t.Fatalf("LastIndexEntry after refused clears = %+v, %v, %v, want the entry at 3", last, ok, err)
	}
}
