package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// makePurger makes the harness's MetaStore and requires it to be an IncarnationPurger,
// a KeyIndexStore, a DirtyCounterStore and a ParkStore: every backend implements them.
func makePurger(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	for _, ok := range []bool{is[store.IncarnationPurger](m), is[store.KeyIndexStore](m), is[store.DirtyCounterStore](m), is[store.ParkStore](m)} {
		if !ok {
			return nil, fmt.Errorf("%T does not implement store.IncarnationPurger and the stores it purges", m)
		}
	}
	return m, nil
}

func is[T any](v any) bool { _, ok := v.(T); return ok }

func purgeSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Purge", []testCase[store.MetaStore]{
			{"KeysOfOneIncarnation", testPurgeKeys},
			{"ParkedOfOneGroupAndIncarnation", testPurgeParked},
		}},
	}
}

func purger(m store.MetaStore) store.IncarnationPurger { return m.(store.IncarnationPurger) }

// testPurgeKeys: PurgeKeys deletes every key entry of the incarnation on every partition
// and its partitions' dirty counters, and nothing of another incarnation of the name
// (one whose ID extends this one's included) or of another topic; again, it deletes
// nothing.
func testPurgeKeys(ctx context.Context, t *testing.T, m store.MetaStore) {
	ks, dc := m.(store.KeyIndexStore), m.(store.DirtyCounterStore)
	name := UniqueName(t, "t")
	gone := store.TopicID(name, "inc1")
	kept := []string{store.TopicID(name, "inc10"), store.TopicID(name, "inc2"), store.TopicID(UniqueName(t, "u"), "inc1")}
	put := func(topic string, p int32, key string) store.KeyEntry {
		e := store.KeyEntry{Topic: topic, Partition: p, Key: []byte(key), Offset: 3, AppendedAt: at(3)}
		_, _, err := ks.PutKey(ctx, e)
		must(t, "PutKey", err)
		return e
	}
	var want []store.KeyEntry
	for p := range int32(2) {
		for i := range 3 {
			put(gone, p, fmt.Sprintf("k%d", i))
		}
		_, err := dc.AddOverwrites(ctx, gone, p, 5)
		must(t, "AddOverwrites", err)
	}
	for _, topic := range kept {
		want = append(want, put(topic, 0, "k0"), put(topic, 1, "k1"))
		_, err := dc.AddOverwrites(ctx, topic, 0, 7)
		must(t, "AddOverwrites", err)
	}
	n, err := purger(m).PurgeKeys(ctx, gone, 2)
	must(t, "PurgeKeys", err)
	if n != 6 {
		t.Fatalf("PurgeKeys deleted %d key entries, want 6", n)
	}
	for p := range int32(2) {
		for i := range 3 {
			wantNoKey(ctx, t, ks, gone, p, []byte(fmt.Sprintf("k%d", i)))
		}
		c, err := dc.AddOverwrites(ctx, gone, p, 0)
		must(t, "AddOverwrites(0)", err)
		if c.Overwrites != 0 {
			t.Fatalf("dirty counter of %s/%d after PurgeKeys: %+v, want a new one", gone, p, c)
		}
	}
	for _, e := range want {
		wantKey(ctx, t, ks, e)
	}
	for _, topic := range kept {
		c, err := dc.AddOverwrites(ctx, topic, 0, 0)
		must(t, "AddOverwrites(0)", err)
		if c.Overwrites != 7 {
			t.Fatalf("dirty counter of %s/0 after purging %s: %+v, want its 7 overwrites", topic, gone, c)
		}
	}
	if n, err := purger(m).PurgeKeys(ctx, gone, 2); err != nil || n != 0 {
		t.Fatalf("PurgeKeys again = %d, %v; want 0, nil", n, err)
	}
}

// testPurgeParked: PurgeParked deletes the group's rows of the incarnation on every
// partition, unfenced, and no other group's or incarnation's rows.
func testPurgeParked(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	k.topic = store.TopicID(k.topic, "inc1")
	k1 := gtp{k.group, k.topic, 1}
	otherTopic := gtp{k.group, k.topic + "0", 0}
	otherGroup := gtp{UniqueName(t, "g2"), k.topic, 0}
	for _, g := range []string{k.group, otherGroup.group} {
		_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: g, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(0)})
		must(t, "EnsureGroup", err)
	}
	for _, p := range []gtp{k, k1, otherTopic, otherGroup} {
		a := acquire(ctx, t, m, p, "m", 0, 1000)
		must(t, "PutParked", parks(m).PutParked(ctx, parkedRow(p, "order-1", 4), "m", a.Generation))
	}
	must(t, "PutParked", parks(m).PutParked(ctx, parkedRow(k, "order-2", 5), "m", acquire(ctx, t, m, k, "m", 0, 1000).Generation))
	n, err := purger(m).PurgeParked(ctx, k.group, k.topic)
	must(t, "PurgeParked", err)
	if n != 3 {
		t.Fatalf("PurgeParked deleted %d rows, want 3", n)
	}
	rows, err := parks(m).ListParked(ctx, k.group)
	must(t, "ListParked", err)
	wantParked(t, "ListParked after PurgeParked", rows, parkedRow(otherTopic, "order-1", 4))
	rows, err = parks(m).ListParked(ctx, otherGroup.group)
	must(t, "ListParked of another group", err)
	wantParked(t, "ListParked of another group", rows, parkedRow(otherGroup, "order-1", 4))
	if n, err := purger(m).PurgeParked(ctx, k.group, k.topic); err != nil || n != 0 {
		t.Fatalf("PurgeParked again = %d, %v; want 0, nil", n, err)
	}
}
