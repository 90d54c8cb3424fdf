package storetest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// makeKeyIndex makes the harness's MetaStore and requires it to be a KeyIndexStore:
// every backend implements it.
func makeKeyIndex(h Harness, ctx context.Context) (store.KeyIndexStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	k, ok := m.(store.KeyIndexStore)
	if !ok {
		return nil, fmt.Errorf("%T does not implement store.KeyIndexStore", m)
	}
	return k, nil
}

func keyIndexSections() []section[store.KeyIndexStore] {
	return []section[store.KeyIndexStore]{
		{"Keys", []testCase[store.KeyIndexStore]{
			{"NeverMovesBack", testKeyNeverMovesBack},
			{"KeysApart", testKeysApart},
			{"ConcurrentPutsKeepNewest", testKeyConcurrentPuts},
		}},
	}
}

func wantKey(ctx context.Context, t *testing.T, k store.KeyIndexStore, want store.KeyEntry) {
	t.Helper()
	got, err := k.GetKey(ctx, want.Topic, want.Partition, want.Key)
	must(t, "GetKey", err)
	if got.Topic != want.Topic || got.Partition != want.Partition || !bytes.Equal(got.Key, want.Key) ||
		got.Offset != want.Offset || got.Tombstone != want.Tombstone || !msTime(got.AppendedAt).Equal(msTime(want.AppendedAt)) {
		t.Fatalf("GetKey(%s/%d %q) = %+v, want %+v", want.Topic, want.Partition, want.Key, got, want)
	}
}

func wantNoKey(ctx context.Context, t *testing.T, k store.KeyIndexStore, topic string, partition int32, key []byte) {
	t.Helper()
	_, err := k.GetKey(ctx, topic, partition, key)
	wantErrIs(t, fmt.Sprintf("GetKey(%s/%d %q)", topic, partition, key), err, store.ErrNotFound)
}

// testKeyNeverMovesBack: a put stores only a higher offset than the entry's (an older or
// equal one reports false and changes nothing); a put reports whether it superseded a
// record (the first and a retry at the stored offset did not; an older one's own record
// is); a tombstone is a put like any other;
// DeleteKey removes the entry only at its offset.
func testKeyNeverMovesBack(ctx context.Context, t *testing.T, k store.KeyIndexStore) {
	e := store.KeyEntry{Topic: store.TopicID(UniqueName(t, "t"), "inc1"), Partition: 1, Key: []byte("o-42"), Offset: 5, AppendedAt: at(5)}
	wantNoKey(ctx, t, k, e.Topic, e.Partition, e.Key)
	for _, step := range []struct {
		put                store.KeyEntry
		stored, superseded bool
		want               store.KeyEntry
	}{
		{e, true, false, e},
		{store.KeyEntry{Topic: e.Topic, Partition: 1, Key: e.Key, Offset: 3, AppendedAt: at(9)}, false, true, e},
		{store.KeyEntry{Topic: e.Topic, Partition: 1, Key: e.Key, Offset: 5, Tombstone: true, AppendedAt: at(9)}, false, false, e},
		{store.KeyEntry{Topic: e.Topic, Partition: 1, Key: e.Key, Offset: 9, Tombstone: true, AppendedAt: at(10)}, true, true,
			store.KeyEntry{Topic: e.Topic, Partition: 1, Key: e.Key, Offset: 9, Tombstone: true, AppendedAt: at(10)}},
	} {
		stored, superseded, err := k.PutKey(ctx, step.put)
		must(t, "PutKey", err)
		if stored != step.stored || superseded != step.superseded {
			t.Fatalf("PutKey(offset %d) over offset %d = stored %v, superseded %v; want %v, %v", step.put.Offset, step.want.Offset, stored, superseded, step.stored, step.superseded)
		}
		wantKey(ctx, t, k, step.want)
	}
	if del, err := k.DeleteKey(ctx, e.Topic, 1, e.Key, 5); err != nil || del {
		t.Fatalf("DeleteKey at an overwritten offset = %v, %v; want false, nil", del, err)
	}
	wantKey(ctx, t, k, store.KeyEntry{Topic: e.Topic, Partition: 1, Key: e.Key, Offset: 9, Tombstone: true, AppendedAt: at(10)})
	if del, err := k.DeleteKey(ctx, e.Topic, 1, e.Key, 9); err != nil || !del {
		t.Fatalf("DeleteKey at the entry's offset = %v, %v; want true, nil", del, err)
	}
	wantNoKey(ctx, t, k, e.Topic, 1, e.Key)
	if del, err := k.DeleteKey(ctx, e.Topic, 1, e.Key, 9); err != nil || del {
		t.Fatalf("DeleteKey of no entry = %v, %v; want false, nil", del, err)
	}
}

// testKeysApart: entries of other keys (the empty key, a prefix, a long key), other
// partitions and other incarnations of the name are kept apart.
func testKeysApart(ctx context.Context, t *testing.T, k store.KeyIndexStore) {
	name := UniqueName(t, "t")
	a, b := store.TopicID(name, "inca"), store.TopicID(name, "incb")
	long := bytes.Repeat([]byte{0, 0xFF, 'k'}, 1000)
	entries := []store.KeyEntry{
		{Topic: a, Partition: 0, Key: []byte("k"), Offset: 1, AppendedAt: at(1)},
		{Topic: a, Partition: 0, Key: []byte("k2"), Offset: 2, AppendedAt: at(2)},
		{Topic: a, Partition: 0, Key: []byte{}, Offset: 3, AppendedAt: at(3)},
		{Topic: a, Partition: 0, Key: long, Offset: 4, AppendedAt: at(4)},
		{Topic: a, Partition: 2, Key: []byte("k"), Offset: 5, AppendedAt: at(5)},
		{Topic: b, Partition: 0, Key: []byte("k"), Offset: 6, Tombstone: true, AppendedAt: at(6)},
	}
	for _, e := range entries {
		if stored, superseded, err := k.PutKey(ctx, e); err != nil || !stored || superseded {
			t.Fatalf("PutKey(%s/%d %q) = %v, %v, %v; want stored, superseding nothing", e.Topic, e.Partition, e.Key, stored, superseded, err)
		}
	}
	for _, e := range entries {
		wantKey(ctx, t, k, e)
	}
	wantNoKey(ctx, t, k, a, 1, []byte("k"))
	wantNoKey(ctx, t, k, a, 0, long[:len(long)-1])
	if del, err := k.DeleteKey(ctx, a, 0, []byte("k"), 1); err != nil || !del {
		t.Fatalf("DeleteKey = %v, %v; want true, nil", del, err)
	}
	wantNoKey(ctx, t, k, a, 0, []byte("k"))
	wantKey(ctx, t, k, entries[1])
	wantKey(ctx, t, k, entries[4])
	wantKey(ctx, t, k, entries[5])
}

// testKeyConcurrentPuts: callers putting offsets of one key at once, in any order, leave
// the highest one, and exactly the puts that raised the entry report stored; every
// record but the newest is reported superseded exactly once, whatever order the puts
// land in.
func testKeyConcurrentPuts(ctx context.Context, t *testing.T, k store.KeyIndexStore) {
	topic := store.TopicID(UniqueName(t, "t"), "inc1")
	offsets := rand.Perm(8)
	var wg sync.WaitGroup
	var superseded atomic.Int64
	errs := make(chan error, len(offsets))
	for _, off := range offsets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, sup, err := k.PutKey(ctx, store.KeyEntry{Topic: topic, Key: []byte("hot"), Offset: int64(off), AppendedAt: at(int64(off))})
			if sup {
				superseded.Add(1)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "PutKey", err)
	}
	if n := superseded.Load(); n != int64(len(offsets)-1) {
		t.Errorf("%d puts of %d offsets at once reported superseding a record, want %d", n, len(offsets), len(offsets)-1)
	}
	wantKey(ctx, t, k, store.KeyEntry{Topic: topic, Key: []byte("hot"), Offset: 7, AppendedAt: at(7)})
}
