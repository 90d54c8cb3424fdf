package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// makeGroupAdmin makes the harness's MetaStore and requires it to be a GroupAdminStore
// too: every backend implements both.
func makeGroupAdmin(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.GroupAdminStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.GroupAdminStore", m)
	}
	return m, nil
}

func groupAdminSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Groups", []testCase[store.MetaStore]{
			{"PutConfigCreatesThenUpdates", testPutGroupConfig},
			{"ListSorted", testListGroups},
			{"DeleteCommitsRefusedWhileLive", testDeleteCommitsLive},
			{"DeleteCommitsFencesAndKeepsOtherTopics", testDeleteCommits},
			{"DeleteGroupRefusedWhileActive", testDeleteGroupActive},
			{"DeleteGroupRemovesAndFences", testDeleteGroup},
		}},
	}
}

func admin(m store.MetaStore) store.GroupAdminStore { return m.(store.GroupAdminStore) }

func testPutGroupConfig(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "g")
	cfg := store.GroupConfig{Name: name, ResetPolicy: "latest", MaxAttempts: 3, DeadLetterTopic: "dlq", OnFailure: "park", CreatedAt: at(1000)}
	got, err := admin(m).PutGroupConfig(ctx, cfg)
	must(t, "PutGroupConfig (new)", err)
	if got.ResetPolicy != "latest" || got.MaxAttempts != 3 || got.DeadLetterTopic != "dlq" || got.OnFailure != "park" || !msTime(got.CreatedAt).Equal(msTime(at(1000))) {
		t.Fatalf("PutGroupConfig (new) = %+v", got)
	}
	upd := store.GroupConfig{Name: name, ResetPolicy: "fail", MaxAttempts: 7, CreatedAt: at(5000)}
	got, err = admin(m).PutGroupConfig(ctx, upd)
	must(t, "PutGroupConfig (update)", err)
	if got.ResetPolicy != "fail" || got.MaxAttempts != 7 || got.DeadLetterTopic != "" || got.OnFailure != "" || !msTime(got.CreatedAt).Equal(msTime(at(1000))) {
		t.Fatalf("PutGroupConfig (update) = %+v, want the new settings, no dead-letter topic, the first CreatedAt", got)
	}
	read, err := m.GetGroup(ctx, name)
	must(t, "GetGroup", err)
	if read.ResetPolicy != "fail" || read.MaxAttempts != 7 || read.DeadLetterTopic != "" || !msTime(read.CreatedAt).Equal(msTime(at(1000))) {
		t.Fatalf("GetGroup after update = %+v", read)
	}
	// EnsureGroup keeps what PutGroupConfig stored.
	kept, err := m.EnsureGroup(ctx, store.GroupConfig{Name: name, ResetPolicy: "earliest", MaxAttempts: 1})
	must(t, "EnsureGroup", err)
	if kept.ResetPolicy != "fail" || kept.MaxAttempts != 7 {
		t.Fatalf("EnsureGroup of a configured group = %+v", kept)
	}
}

func testListGroups(ctx context.Context, t *testing.T, m store.MetaStore) {
	a, b := UniqueName(t, "ga"), UniqueName(t, "gb")
	_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: b, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(0)})
	must(t, "EnsureGroup", err)
	_, err = admin(m).PutGroupConfig(ctx, store.GroupConfig{Name: a, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(0)})
	must(t, "PutGroupConfig", err)
	names, err := admin(m).ListGroups(ctx)
	must(t, "ListGroups", err)
	if !slices.IsSorted(names) || !slices.Contains(names, a) || !slices.Contains(names, b) {
		t.Fatalf("ListGroups = %v, want sorted and holding %s and %s", names, a, b)
	}
}

func testDeleteCommitsLive(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m", 0, 10_000)
	must(t, "Commit", m.Commit(ctx, commitRow(k, 5, a.Generation, 1, ""), "m"))
	err := admin(m).DeleteCommits(ctx, k.group, k.topic, at(5000))
	if !errors.Is(err, store.ErrGroupActive) {
		t.Fatalf("DeleteCommits while a lease is live: %v, want ErrGroupActive", err)
	}
	wantCommitOffset(ctx, t, m, k, 5)
	wantAssignment(ctx, t, m, k, a)
}

func testDeleteCommits(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	other := gtp{k.group, UniqueName(t, "t2"), 0}
	k1 := gtp{k.group, k.topic, 1}
	a := acquire(ctx, t, m, k, "m", 0, 1000)
	must(t, "Commit", m.Commit(ctx, commitRow(k, 5, a.Generation, 1, ""), "m"))
	a1 := acquire(ctx, t, m, k1, "m", 0, 1000)
	must(t, "Commit p1", m.Commit(ctx, commitRow(k1, 2, a1.Generation, 1, ""), "m"))
	ao := acquire(ctx, t, m, other, "m", 0, 100_000)
	must(t, "Commit other topic", m.Commit(ctx, commitRow(other, 9, ao.Generation, 1, ""), "m"))

	// The other topic's live lease does not block the deletion on k.topic.
	must(t, "DeleteCommits", admin(m).DeleteCommits(ctx, k.group, k.topic, at(2000)))
	wantNoCommit(ctx, t, m, k)
	wantNoCommit(ctx, t, m, k1)
	wantCommitOffset(ctx, t, m, other, 9)
	wantAssignment(ctx, t, m, k, store.Assignment{Group: k.group, Topic: k.topic, Partition: 0, Generation: a.Generation + 1, ExpiresAt: a.ExpiresAt})
	// The fenced owner cannot renew or commit its old position back.
	if _, err := m.RenewLease(ctx, k.group, k.topic, 0, "m", a.Generation, at(3000)); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("RenewLease after DeleteCommits: %v, want ErrFenced", err)
	}
	if err := m.Commit(ctx, commitRow(k, 6, a.Generation, 3, ""), "m"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Commit after DeleteCommits: %v, want ErrFenced", err)
	}
	// Deleting again, or for a group with nothing, is not an error.
	must(t, "DeleteCommits again", admin(m).DeleteCommits(ctx, k.group, k.topic, at(2000)))
	must(t, "DeleteCommits of nothing", admin(m).DeleteCommits(ctx, UniqueName(t, "g"), k.topic, at(2000)))
}

func testDeleteGroupActive(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: k.group, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(0)})
	must(t, "EnsureGroup", err)
	a := acquire(ctx, t, m, k, "m", 0, 10_000)
	must(t, "Commit", m.Commit(ctx, commitRow(k, 5, a.Generation, 1, ""), "m"))
	if err := admin(m).DeleteGroup(ctx, k.group, at(5000)); !errors.Is(err, store.ErrGroupActive) {
		t.Fatalf("DeleteGroup while a lease is live: %v, want ErrGroupActive", err)
	}
	wantCommitOffset(ctx, t, m, k, 5)
	wantAssignment(ctx, t, m, k, a)
	// A live member without a lease (waiting for its share) keeps the group too.
	must(t, "Heartbeat", m.Heartbeat(ctx, store.Member{Group: k.group, ID: "waiting", ExpiresAt: at(30_000)}))
	if err := admin(m).DeleteGroup(ctx, k.group, at(20_000)); !errors.Is(err, store.ErrGroupActive) {
		t.Fatalf("DeleteGroup while a member is live: %v, want ErrGroupActive", err)
	}
	if _, err := m.GetGroup(ctx, k.group); err != nil {
		t.Fatalf("GetGroup after a refused DeleteGroup: %v", err)
	}
	wantCommitOffset(ctx, t, m, k, 5)
	if err := admin(m).DeleteGroup(ctx, UniqueName(t, "g"), at(0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteGroup of an unknown group: %v, want ErrNotFound", err)
	}
}

func testDeleteGroup(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	k2 := gtp{k.group, UniqueName(t, "t2"), 1}
	other := gtp{UniqueName(t, "g2"), k.topic, 0}
	for _, g := range []string{k.group, other.group} {
		_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: g, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(0)})
		must(t, "EnsureGroup", err)
	}
	a := acquire(ctx, t, m, k, "m", 0, 1000)
	must(t, "Commit", m.Commit(ctx, commitRow(k, 5, a.Generation, 1, ""), "m"))
	a2 := acquire(ctx, t, m, k2, "m", 0, 1000)
	must(t, "Commit on a second topic", m.Commit(ctx, commitRow(k2, 2, a2.Generation, 1, ""), "m"))
	must(t, "Heartbeat", m.Heartbeat(ctx, store.Member{Group: k.group, ID: "m", ExpiresAt: at(1000)}))
	ao := acquire(ctx, t, m, other, "m", 0, 100_000)
	must(t, "Commit other group", m.Commit(ctx, commitRow(other, 9, ao.Generation, 1, ""), "m"))

	// Another group's live lease does not keep this one.
	must(t, "DeleteGroup", admin(m).DeleteGroup(ctx, k.group, at(2000)))
	if g, err := m.GetGroup(ctx, k.group); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetGroup after DeleteGroup = %+v, %v; want ErrNotFound", g, err)
	}
	names, err := admin(m).ListGroups(ctx)
	must(t, "ListGroups", err)
	if slices.Contains(names, k.group) || !slices.Contains(names, other.group) {
		t.Fatalf("ListGroups after DeleteGroup = %v, want %s gone and %s kept", names, k.group, other.group)
	}
	wantNoCommit(ctx, t, m, k)
	wantNoCommit(ctx, t, m, k2)
	cs, err := m.ListCommits(ctx, k.group)
	must(t, "ListCommits", err)
	if len(cs) != 0 {
		t.Fatalf("ListCommits after DeleteGroup = %+v, want none", cs)
	}
	if ms, err := m.LiveMembers(ctx, k.group, at(0)); err != nil || len(ms) != 0 {
		t.Fatalf("LiveMembers after DeleteGroup = %+v, %v; want none", ms, err)
	}
	wantCommitOffset(ctx, t, m, other, 9)
	wantAssignment(ctx, t, m, other, ao)
	// The assignment rows stay, fenced: the lapsed owner cannot renew or commit, and a
	// group created again under the name continues the generations.
	// The fenced row is marked, so a host that remembers the group still learns it was
	// deleted at its next lease.
	wantAssignment(ctx, t, m, k, store.Assignment{Group: k.group, Topic: k.topic, Partition: 0, Generation: a.Generation + 1, ExpiresAt: a.ExpiresAt, GroupDeleted: true})
	if _, err := m.RenewLease(ctx, k.group, k.topic, 0, "m", a.Generation, at(3000)); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("RenewLease after DeleteGroup: %v, want ErrFenced", err)
	}
	if err := m.Commit(ctx, commitRow(k, 6, a.Generation, 3, ""), "m"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Commit after DeleteGroup: %v, want ErrFenced", err)
	}
	again := acquire(ctx, t, m, k, "m", 4000, 5000)
	if again.Generation != a.Generation+2 || !again.GroupDeleted {
		t.Fatalf("AcquireLease after DeleteGroup = %+v: want generation %d, GroupDeleted", again, a.Generation+2)
	}
	wantAssignment(ctx, t, m, k, store.Assignment{Group: k.group, Topic: k.topic, Partition: 0, Owner: "m", Generation: a.Generation + 2, ExpiresAt: at(5000)})
	if next := acquire(ctx, t, m, k, "m", 4500, 6000); next.GroupDeleted {
		t.Fatalf("the second AcquireLease after DeleteGroup = %+v: the mark must be cleared by the first", next)
	}
	if o := acquire(ctx, t, m, other, "m", 2500, 100_000); o.GroupDeleted {
		t.Fatalf("AcquireLease of another group's row = %+v: not deleted", o)
	}
}
