package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// makePark makes the harness's MetaStore and requires it to be a ParkStore too: every
// backend implements both.
func makePark(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.ParkStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.ParkStore", m)
	}
	return m, nil
}

func parkSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Parked", []testCase[store.MetaStore]{
			{"PutFencedByGeneration", testPutParkedFenced},
			{"PutKeepsReleaseRequest", testPutParkedKeepsRelease},
			{"ListOrderedAndPerPartition", testListParked},
			{"DeleteFencedAndIdempotent", testDeleteParked},
			{"ReleaseOfUnknownKeyNotFound", testReleaseUnknown},
			{"DeleteGroupRemovesParked", testDeleteGroupRemovesParked},
		}},
	}
}

func parks(m store.MetaStore) store.ParkStore { return m.(store.ParkStore) }

func parkedRow(k gtp, key string, first int64) store.ParkedKey {
	return store.ParkedKey{Group: k.group, Topic: k.topic, Partition: k.partition, Key: []byte(key),
		FirstOffset: first, LastOffset: first, Records: 1, Error: "boom", Attempts: 3, ParkedAt: at(1000), ParkPartition: 2, ParkOffset: 7}
}

func normParked(p store.ParkedKey) string {
	return fmt.Sprintf("%s/%s/%d key=%q first=%d last=%d n=%d err=%q/%d at=%v park=%d@%d release=%v", p.Group, p.Topic, p.Partition, p.Key,
		p.FirstOffset, p.LastOffset, p.Records, p.Error, p.Attempts, msTime(p.ParkedAt), p.ParkPartition, p.ParkOffset, msTime(p.ReleaseRequested))
}

func wantParked(t *testing.T, what string, got []store.ParkedKey, want ...store.ParkedKey) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows %v, want %d", what, len(got), got, len(want))
	}
	for i := range got {
		if normParked(got[i]) != normParked(want[i]) {
			t.Fatalf("%s[%d] = %s, want %s", what, i, normParked(got[i]), normParked(want[i]))
		}
	}
}

func testPutParkedFenced(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m1", 0, 60_000)
	row := parkedRow(k, "order-1", 10)
	if err := parks(m).PutParked(ctx, row, "m1", a.Generation+1); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("PutParked at a later generation = %v, want ErrFenced", err)
	}
	if err := parks(m).PutParked(ctx, row, "m2", a.Generation); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("PutParked by another member = %v, want ErrFenced", err)
	}
	rows, err := parks(m).ListParked(ctx, k.group)
	must(t, "ListParked", err)
	wantParked(t, "ListParked after fenced puts", rows)
	must(t, "PutParked", parks(m).PutParked(ctx, row, "m1", a.Generation))
	row.LastOffset, row.Records = 12, 2
	must(t, "PutParked (update)", parks(m).PutParked(ctx, row, "m1", a.Generation))
	rows, err = parks(m).ListParkedPartition(ctx, k.group, k.topic, k.partition)
	must(t, "ListParkedPartition", err)
	wantParked(t, "ListParkedPartition", rows, row)
	// A new owner fences the old one's writes.
	b := acquire(ctx, t, m, k, "m2", 120_000, 180_000)
	if err := parks(m).PutParked(ctx, parkedRow(k, "order-2", 20), "m1", a.Generation); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("PutParked by the previous owner = %v, want ErrFenced", err)
	}
	must(t, "PutParked (new owner)", parks(m).PutParked(ctx, parkedRow(k, "order-2", 20), "m2", b.Generation))
}

func testPutParkedKeepsRelease(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m1", 0, 60_000)
	row := parkedRow(k, "order-1", 10)
	must(t, "PutParked", parks(m).PutParked(ctx, row, "m1", a.Generation))
	got, err := parks(m).RequestRelease(ctx, k.group, k.topic, k.partition, []byte("order-1"), at(5000))
	must(t, "RequestRelease", err)
	want := row
	want.ReleaseRequested = at(5000)
	wantParked(t, "RequestRelease", []store.ParkedKey{got}, want)
	// The owner forwards one more record: the release request stays.
	row.LastOffset, row.Records = 11, 2
	must(t, "PutParked (after release request)", parks(m).PutParked(ctx, row, "m1", a.Generation))
	want.LastOffset, want.Records = 11, 2
	rows, err := parks(m).ListParkedPartition(ctx, k.group, k.topic, k.partition)
	must(t, "ListParkedPartition", err)
	wantParked(t, "after an owner's update", rows, want)
}

func testListParked(ctx context.Context, t *testing.T, m store.MetaStore) {
	k0 := newGTP(t)
	k1 := gtp{k0.group, k0.topic, 1}
	k2 := gtp{k0.group, k0.topic + "z", 0}
	other := gtp{k0.group + "x", k0.topic, 0}
	var want []store.ParkedKey
	for _, k := range []gtp{k0, k1, k2, other} {
		a := acquire(ctx, t, m, k, "m1", 0, 60_000)
		for _, key := range []string{"b", "a", "\x00\xffbin"} {
			row := parkedRow(k, key, 3)
			must(t, "PutParked", parks(m).PutParked(ctx, row, "m1", a.Generation))
		}
		if k != other {
			for _, key := range []string{"\x00\xffbin", "a", "b"} {
				want = append(want, parkedRow(k, key, 3))
			}
		}
	}
	rows, err := parks(m).ListParked(ctx, k0.group)
	must(t, "ListParked", err)
	wantParked(t, "ListParked", rows, want...)
	rows, err = parks(m).ListParkedPartition(ctx, k0.group, k0.topic, 1)
	must(t, "ListParkedPartition", err)
	wantParked(t, "ListParkedPartition", rows, want[3:6]...)
	rows, err = parks(m).ListParked(ctx, UniqueName(t, "none"))
	must(t, "ListParked (unknown group)", err)
	if rows == nil || len(rows) != 0 {
		t.Fatalf("ListParked (unknown group) = %#v, want an empty list", rows)
	}
}

func testDeleteParked(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m1", 0, 60_000)
	must(t, "PutParked", parks(m).PutParked(ctx, parkedRow(k, "a", 1), "m1", a.Generation))
	must(t, "PutParked", parks(m).PutParked(ctx, parkedRow(k, "b", 2), "m1", a.Generation))
	if err := parks(m).DeleteParked(ctx, k.group, k.topic, k.partition, []byte("a"), "m1", a.Generation-1); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("DeleteParked at an old generation = %v, want ErrFenced", err)
	}
	must(t, "DeleteParked", parks(m).DeleteParked(ctx, k.group, k.topic, k.partition, []byte("a"), "m1", a.Generation))
	must(t, "DeleteParked (again)", parks(m).DeleteParked(ctx, k.group, k.topic, k.partition, []byte("a"), "m1", a.Generation))
	rows, err := parks(m).ListParked(ctx, k.group)
	must(t, "ListParked", err)
	if len(rows) != 1 || !bytes.Equal(rows[0].Key, []byte("b")) {
		t.Fatalf("ListParked after delete = %v, want only key b", rows)
	}
}

func testReleaseUnknown(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	if _, err := parks(m).RequestRelease(ctx, k.group, k.topic, k.partition, []byte("nope"), at(1)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RequestRelease of a key not parked = %v, want ErrNotFound", err)
	}
	rows, err := parks(m).ListParked(ctx, k.group)
	must(t, "ListParked", err)
	wantParked(t, "ListParked after a refused release", rows)
}

// testDeleteGroupRemovesParked: deleting a group deletes its parked rows on every topic
// and partition, so a group created again under the name parks nothing it did not park
// itself; another group's rows stay.
func testDeleteGroupRemovesParked(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	k2 := gtp{k.group, UniqueName(t, "t2"), 3}
	other := gtp{UniqueName(t, "g2"), k.topic, 0}
	for _, g := range []string{k.group, other.group} {
		_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: g, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(0)})
		must(t, "EnsureGroup", err)
	}
	for _, p := range []gtp{k, k2, other} {
		a := acquire(ctx, t, m, p, "m", 0, 1000)
		must(t, "PutParked", parks(m).PutParked(ctx, parkedRow(p, "order-1", 4), "m", a.Generation))
	}
	must(t, "DeleteGroup", admin(m).DeleteGroup(ctx, k.group, at(2000)))
	rows, err := parks(m).ListParked(ctx, k.group)
	must(t, "ListParked", err)
	wantParked(t, "ListParked after DeleteGroup", rows)
	rows, err = parks(m).ListParkedPartition(ctx, k.group, k2.topic, k2.partition)
	must(t, "ListParkedPartition", err)
	wantParked(t, "ListParkedPartition after DeleteGroup", rows)
	rows, err = parks(m).ListParked(ctx, other.group)
	must(t, "ListParked of another group", err)
	wantParked(t, "ListParked of another group", rows, parkedRow(other, "order-1", 4))
}
