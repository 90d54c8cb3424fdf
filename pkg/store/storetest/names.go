package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// nameCases are the cases of Kafka's name rules: topic names of Kafka's alphabet that
// begin with '_' or '.' and run to 249 characters, and group ids holding any character
// but NUL ('#', '/', '%', spaces, non-ASCII letters), each keyed apart from every other.
func nameCases() []testCase[store.MetaStore] {
	return []testCase[store.MetaStore]{
		{"KafkaTopicNames", testKafkaTopicNames},
		{"HostileGroupIDs", testHostileGroupIDs},
		{"LongestNames", testLongestNames},
	}
}

// pad extends name with c to n characters.
func pad(name string, c byte, n int) string {
	return name + strings.Repeat(string(c), n-len(name))
}

func testKafkaTopicNames(ctx context.Context, t *testing.T, m store.MetaStore) {
	base := UniqueName(t, "t")
	names := []string{"_" + base, "__" + base, "." + base, base + "...", "-" + base, pad("_"+base, '.', 249)}
	for i, n := range names {
		tp := store.Topic{Name: n, Partitions: int32(i + 1), Retention: time.Hour, CreatedAt: at(int64(i)), Incarnation: fmt.Sprintf("tc%d", i)}
		must(t, "CreateTopic("+n+")", m.CreateTopic(ctx, tp))
	}
	for i, n := range names {
		got, err := m.GetTopic(ctx, n)
		must(t, "GetTopic("+n+")", err)
		if got.Name != n || got.Partitions != int32(i+1) {
			t.Fatalf("GetTopic(%q) = %+v, want the topic of %d partitions", n, got, i+1)
		}
	}
	listed, err := m.ListTopics(ctx)
	must(t, "ListTopics", err)
	for _, n := range names {
		if !slices.Contains(listed, n) {
			t.Fatalf("ListTopics lacks %q", n)
		}
	}
	// Each name's partitions and group rows are its own.
	g := UniqueName(t, "g")
	for i, n := range names {
		id := store.TopicID(n, fmt.Sprintf("tc%d", i))
		e, err := AppendEntry(ctx, m, entry(id, 0, 0, int64(i+1)))
		must(t, "append to "+n, err)
		k := gtp{g, id, 0}
		a := acquire(ctx, t, m, k, "m-1", 0, 30_000)
		must(t, "Commit on "+n, m.Commit(ctx, commitRow(k, e.End(), a.Generation, 10, n), "m-1"))
	}
	for i, n := range names {
		id := store.TopicID(n, fmt.Sprintf("tc%d", i))
		st, err := m.Sequencer(ctx, id, 0)
		must(t, "Sequencer of "+n, err)
		if st.NextOffset != int64(i+1) {
			t.Fatalf("Sequencer(%q) = %d, want %d", n, st.NextOffset, i+1)
		}
		wantCommit(ctx, t, m, gtp{g, id, 0}, commitRow(gtp{g, id, 0}, int64(i+1), 1, 10, n))
	}
}

func testHostileGroupIDs(ctx context.Context, t *testing.T, m store.MetaStore) {
	r := UniqueName(t, "g")
	topic := UniqueName(t, "t")
	// Pairs that a naive "group#topic" key would give one row: (r#a, x) and (r, a#x),
	// and the escapes a percent-encoding must keep apart from what they encode.
	a, inc := "a"+r, "tcx"
	keys := []gtp{
		{r + "#" + a, inc, 0},
		{r, store.TopicID(a, inc), 0},
		{r + "%23" + a, inc, 0},
		{r + "%" + a, inc, 0},
		{"a#b/c d " + r, topic, 0},
		{"gruppe ä 消费者 🙂 " + r, topic, 0},
		{"/" + r, topic, 0},
		{r + " ", topic, 0},
	}
	for i, k := range keys {
		must(t, fmt.Sprintf("EnsureGroup(%q)", k.group), ensure(ctx, m, k.group))
		acquire(ctx, t, m, k, fmt.Sprintf("m-%d", i), 0, 30_000)
		must(t, fmt.Sprintf("Commit of %q", k.group), m.Commit(ctx, commitRow(k, int64(i), 1, int64(i), k.group), fmt.Sprintf("m-%d", i)))
		must(t, fmt.Sprintf("Heartbeat of %q", k.group), m.Heartbeat(ctx, store.Member{Group: k.group, ID: fmt.Sprintf("m-%d", i), ExpiresAt: at(30_000)}))
	}
	for i, k := range keys {
		member := fmt.Sprintf("m-%d", i)
		wantAssignment(ctx, t, m, k, lease(k, member, 1, 30_000))
		wantCommit(ctx, t, m, k, commitRow(k, int64(i), 1, int64(i), k.group))
		cfg, err := m.GetGroup(ctx, k.group)
		must(t, fmt.Sprintf("GetGroup(%q)", k.group), err)
		if cfg.Name != k.group {
			t.Fatalf("GetGroup(%q) named %q", k.group, cfg.Name)
		}
		as, err := m.ListAssignments(ctx, k.group)
		must(t, "ListAssignments", err)
		if len(as) != 1 || as[0].Group != k.group || as[0].Topic != k.topic || as[0].Owner != member {
			t.Fatalf("ListAssignments(%q) = %+v, want only the lease on %q", k.group, as, k.topic)
		}
		cs, err := m.ListCommits(ctx, k.group)
		must(t, "ListCommits", err)
		if len(cs) != 1 || cs[0].Group != k.group || cs[0].Topic != k.topic || cs[0].NextOffset != int64(i) {
			t.Fatalf("ListCommits(%q) = %+v, want only the commit on %q at %d", k.group, cs, k.topic, i)
		}
		live, err := m.LiveMembers(ctx, k.group, at(1))
		must(t, "LiveMembers", err)
		if len(live) != 1 || live[0].ID != member || live[0].Group != k.group {
			t.Fatalf("LiveMembers(%q) = %+v, want only %s", k.group, live, member)
		}
	}
	// A reset of one hostile group's topic touches that group only.
	k := keys[0]
	must(t, "ReleaseLease", m.ReleaseLease(ctx, k.group, k.topic, 0, "m-0", 1))
	must(t, "ResetCommits", m.ResetCommits(ctx, k.group, k.topic, map[int32]int64{0: 42}, at(1)))
	wantCommitOffset(ctx, t, m, k, 42)
	wantCommit(ctx, t, m, keys[2], commitRow(keys[2], 2, 1, 2, keys[2].group))
	wantAssignment(ctx, t, m, keys[2], lease(keys[2], "m-2", 1, 30_000))
}

// testLongestNames: a group id of MaxGroupLength characters, each of which the keys
// escape, and one of MaxGroupLength four-byte characters, the longest in bytes, each on
// a topic of 249 characters with the longest incarnation, fit every key.
func testLongestNames(ctx context.Context, t *testing.T, m store.MetaStore) {
	r := UniqueName(t, "g")
	wide := r + strings.Repeat("\U0001F600", wire.MaxGroupLength-len(r))
	for _, group := range []string{pad(r, '#', wire.MaxGroupLength), wide} {
		testLongestGroup(ctx, t, m, group)
	}
}

func testLongestGroup(ctx context.Context, t *testing.T, m store.MetaStore, group string) {
	if !wire.ValidGroup(group) {
		t.Fatalf("the longest group id (%d bytes) is not valid", len(group))
	}
	topic := store.TopicID(pad(UniqueName(t, "t"), '_', 249), pad("tc", 'z', 64))
	k := gtp{group, topic, 7}
	must(t, "EnsureGroup", ensure(ctx, m, group))
	acquire(ctx, t, m, k, pad("m", 'x', 200), 0, 30_000)
	meta := strings.Repeat("ä", 2048)
	must(t, "Commit", m.Commit(ctx, commitRow(k, 3, 1, 5, meta), pad("m", 'x', 200)))
	wantCommit(ctx, t, m, k, commitRow(k, 3, 1, 5, meta))
	cs, err := m.ListCommits(ctx, group)
	must(t, "ListCommits", err)
	if len(cs) != 1 || cs[0].Topic != topic {
		t.Fatalf("ListCommits = %+v, want the one commit", cs)
	}
}

func ensure(ctx context.Context, m store.MetaStore, group string) error {
	_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: group, ResetPolicy: "earliest", MaxAttempts: 3, CreatedAt: at(0)})
	return err
}

// testCommitBackward: the owner at its generation may move its position back when it
// asks (CommitRow.Backward: a Kafka member's seek-and-commit), replacing the metadata
// and completed ranges; a fenced caller still may not, asking or not, and a commit
// that does not ask stays monotonic.
func testCommitBackward(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	high := commitRow(k, 100, 1, 10, "high")
	high.Completed = []store.OffsetRange{{From: 101, To: 103}}
	must(t, "Commit", m.Commit(ctx, high, "m-1"))
	wantErrIs(t, "Commit below without asking", m.Commit(ctx, commitRow(k, 50, 1, 20, ""), "m-1"), store.ErrStaleCommit)
	back := commitRow(k, 40, 1, 30, "seek")
	back.Backward = true
	must(t, "Commit backward by the owner", m.Commit(ctx, back, "m-1"))
	back.Backward = false
	wantCommit(ctx, t, m, k, back)
	cs, err := m.ListCommits(ctx, k.group)
	must(t, "ListCommits", err)
	if len(cs) != 1 || !sameCommit(cs[0], back) {
		t.Fatalf("ListCommits = %+v, want %+v", cs, back)
	}

	fenced := commitRow(k, 10, 1, 40, "fenced")
	fenced.Backward = true
	wantErrIs(t, "Commit backward by another member", m.Commit(ctx, fenced, "m-2"), store.ErrFenced)
	fenced.Generation = 2
	wantErrIs(t, "Commit backward at another generation", m.Commit(ctx, fenced, "m-1"), store.ErrFenced)
	acquire(ctx, t, m, k, "m-2", 31_000, 60_000)
	fenced.Generation = 1
	wantErrIs(t, "Commit backward by the previous owner", m.Commit(ctx, fenced, "m-1"), store.ErrFenced)
	wantCommit(ctx, t, m, k, back)

	// Backward on a partition never committed is a plain first commit.
	k2 := gtp{k.group, k.topic, 1}
	acquire(ctx, t, m, k2, "m-1", 0, 30_000)
	first := commitRow(k2, 5, 1, 50, "")
	first.Backward = true
	must(t, "Commit backward as the first commit", m.Commit(ctx, first, "m-1"))
	first.Backward = false
	wantCommit(ctx, t, m, k2, first)
}

// testCommitMetadata: a commit's metadata (Kafka's OffsetCommit metadata, up to 4096
// bytes of any UTF-8) is stored with it and read back by GetCommit and ListCommits; a
// commit without metadata replaces it with none.
func testCommitMetadata(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	meta := pad(`{"k":"ä 消 🙂 # / %"}`, 'x', 4096)
	c := commitRow(k, 7, 1, 10, meta)
	must(t, "Commit with metadata", m.Commit(ctx, c, "m-1"))
	wantCommit(ctx, t, m, k, c)
	cs, err := m.ListCommits(ctx, k.group)
	must(t, "ListCommits", err)
	if len(cs) != 1 || cs[0].Metadata != meta {
		t.Fatalf("ListCommits = %+v, want the metadata", cs)
	}
	none := commitRow(k, 8, 1, 20, "")
	must(t, "Commit without metadata", m.Commit(ctx, none, "m-1"))
	wantCommit(ctx, t, m, k, none)
}
