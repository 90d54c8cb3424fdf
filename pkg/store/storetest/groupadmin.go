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
		}},
	}
}

func admin(m store.MetaStore) store.GroupAdminStore { return m.(store.GroupAdminStore) }

func testPutGroupConfig(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "g")
	cfg := store.GroupConfig{Name: name, ResetPolicy: "latest", MaxAttempts: 3, DeadLetterTopic: "dlq", CreatedAt: at(1000)}
	got, err := admin(m).PutGroupConfig(ctx, cfg)
	must(t, "PutGroupConfig (new)", err)
	if got.ResetPolicy != "latest" || got.MaxAttempts != 3 || got.DeadLetterTopic != "dlq" || !msTime(got.CreatedAt).Equal(msTime(at(1000))) {
		t.Fatalf("PutGroupConfig (new) = %+v", got)
	}
	upd := store.GroupConfig{Name: name, ResetPolicy: "fail", MaxAttempts: 7, CreatedAt: at(5000)}
	got, err = admin(m).PutGroupConfig(ctx, upd)
	must(t, "PutGroupConfig (update)", err)
	if got.ResetPolicy != "fail" || got.MaxAttempts != 7 || got.DeadLetterTopic != "" || !msTime(got.CreatedAt).Equal(msTime(at(1000))) {
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
