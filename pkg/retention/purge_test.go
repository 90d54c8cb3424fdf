package retention_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// TestPurgeDeletedTopic: a deleted topic refuses appends at once; past the margin the
// pass deletes its objects, index entries, counters and groups' positions, then its
// record; the name, free since the delete, created again starts from offset 0.
func TestPurgeDeletedTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 3)
		old, err := f.l.Topic(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		l, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 2); err != nil {
			t.Fatal(err)
		}
		if err := coord.Release(ctx, "billing", "r", 0, "m", l.Generation); err != nil {
			t.Fatal(err)
		}
		if err := f.l.DeleteTopic(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Append(ctx, "r", []log.Record{{Value: []byte("late")}}, log.AppendOptions{}); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("append to a deleted topic: %v, want ErrTopicNotFound", err)
		}
		if names, err := f.l.ListTopics(ctx); err != nil || len(names) != 0 {
			t.Fatalf("ListTopics after delete = %v, %v", names, err)
		}
		if err := f.l.DeleteTopic(ctx, "r"); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("second delete: %v", err)
		}

		// Within the margin nothing is purged.
		if st := f.run(t, retention.Job{}); st.TopicsPurged != 0 || f.objects(t) == 0 {
			t.Fatalf("purged within the margin: %+v", st)
		}
		f.now = f.now.Add(6 * time.Minute)
		st := f.run(t, retention.Job{})
		if st.TopicsPurged != 1 || f.objects(t) != 0 {
			t.Fatalf("after the margin: %+v, %d objects left", st, f.objects(t))
		}
		if es, err := s.Meta.IndexEntries(ctx, old.ID(), 0, 0, 10); err != nil || len(es) != 0 {
			t.Fatalf("index entries left: %+v, %v", es, err)
		}
		if seq, err := s.Meta.Sequencer(ctx, old.ID(), 0); err != nil || seq.NextOffset != 0 || seq.NextSeq != 0 {
			t.Fatalf("the counter survived the purge: %+v, %v", seq, err)
		}
		if _, err := s.Meta.GetCommit(ctx, "billing", old.ID(), 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the group's position survived: %v", err)
		}
		if ds, err := s.Meta.(store.TopicAdminStore).DeletedTopics(ctx); err != nil || len(ds) != 0 {
			t.Fatalf("deleted incarnations left after the purge: %+v, %v", ds, err)
		}

		// Re-created, the name is a new incarnation from offset 0.
		if _, err := f.l.CreateTopic(ctx, "r", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		res, err := f.l.Append(ctx, "r", []log.Record{{Value: []byte("again")}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 0 {
			t.Fatalf("append to the re-created topic: %+v, %v; want offset 0", res, err)
		}
		if start, hw := f.bounds(t); start != 0 || hw != 1 {
			t.Fatalf("bounds of the re-created topic [%d, %d), want [0, 1)", start, hw)
		}
	})
}

// TestRetentionDeletesOnlyItsOwnObjects (issue 18, item 13): topics whose names differ
// only in case, and two incarnations of one name, never share objects: a pass, or the
// purge of one, deletes only objects under its own incarnation's prefix, on both
// backends.
func TestRetentionDeletesOnlyItsOwnObjects(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		for _, name := range []string{"Orders", "orders"} {
			if _, err := f.l.CreateTopic(ctx, name, 1, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		put := func(topic, v string) {
			t.Helper()
			if _, err := f.l.Append(ctx, topic, []log.Record{{Value: []byte(v)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		put("Orders", "upper-old")
		put("orders", "lower-old")
		if err := f.l.DeleteTopic(ctx, "Orders"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.CreateTopic(ctx, "Orders", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		put("Orders", "upper-new")
		f.now = f.now.Add(6 * time.Minute)
		if st := f.run(t, retention.Job{}); st.TopicsPurged != 1 || st.ObjectsDeleted != 1 {
			t.Fatalf("pass after the margin: %+v, want one topic purged and its one object deleted", st)
		}
		for topic, want := range map[string]string{"orders": "lower-old", "Orders": "upper-new"} {
			res, err := f.l.Poll(ctx, topic, 0, 0, log.PollOptions{MaxRecords: 10})
			if err != nil || len(res.Records) != 1 || string(res.Records[0].Value) != want {
				t.Fatalf("%s after the purge of the old Orders: %+v, %v; want [%s]", topic, res, err, want)
			}
		}
		// Past the retention of both, each pass deletes its own object and nothing else.
		f.now = f.now.Add(2 * time.Hour)
		if st := f.run(t, retention.Job{}); st.ObjectsDeleted != 2 {
			t.Fatalf("pass past the retention: %+v, want the objects of orders and Orders", st)
		}
	})
}

// TestGroupPositionsDoNotCarryOver (issue 18, item 14): a group's commit and lease on a
// deleted topic must not apply to the topic created again under its name. The old
// lease is fenced, the new incarnation starts with no position (the reset policy
// decides), and the purge of the old incarnation leaves the new positions alone.
func TestGroupPositionsDoNotCarryOver(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 3)
		old, err := f.l.Topic(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		stale, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", stale.Generation, 3); err != nil {
			t.Fatal(err)
		}
		if err := f.l.DeleteTopic(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.CreateTopic(ctx, "r", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		f.append(t, 3)
		if err := coord.Commit(ctx, "billing", "r", 0, "m", stale.Generation, 3); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("commit of the old incarnation's lease on the new one: %v, want ErrFenced", err)
		}
		if c, err := coord.Committed(ctx, "billing", "r", 0); err != nil || c != nil {
			t.Fatalf("position on the re-created topic = %v, %v; want none", c, err)
		}
		fresh, err := coord.Acquire(ctx, "billing", "r", 0, "m2", time.Minute)
		if err != nil {
			t.Fatalf("acquire on the re-created topic (the old lease is another incarnation's): %v", err)
		}
		if fresh.Committed != nil {
			t.Fatalf("a new lease carries the old position %d", *fresh.Committed)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m2", fresh.Generation, 1); err != nil {
			t.Fatalf("commit 1 on the new incarnation (below the old position 3): %v", err)
		}
		info, err := coord.Describe(ctx, "billing")
		if err != nil || len(info.Partitions) != 1 || info.Partitions[0].Committed == nil || *info.Partitions[0].Committed != 1 {
			t.Fatalf("describe = %+v, %v; want only the new incarnation's position 1", info.Partitions, err)
		}
		if err := coord.Release(ctx, "billing", "r", 0, "m2", fresh.Generation); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(6 * time.Minute)
		if st := f.run(t, retention.Job{}); st.TopicsPurged != 1 {
			t.Fatalf("pass after the margin: %+v", st)
		}
		if _, err := s.Meta.GetCommit(ctx, "billing", old.ID(), 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the old incarnation's position survived its purge: %v", err)
		}
		if c, err := coord.Committed(ctx, "billing", "r", 0); err != nil || c == nil || *c != 1 {
			t.Fatalf("the new incarnation's position after the purge = %v, %v; want 1", c, err)
		}
	})
}

// TestPurgeDeletedCompactedTopic: the purge of a deleted compacted topic also deletes
// its key index entries, its partitions' dirty counters and the groups' parked keys on
// it, and nothing of the topic created again under the name.
func TestPurgeDeletedCompactedTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		spec := log.TopicSpec{Partitions: 2, Retention: time.Hour, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}
		keys := []string{"o-1", "o-2", "o-3"}
		// incarnation creates topic "c", appends one record of each key (the key index
		// gets an entry each), counts an overwrite on partition 0 and parks a key of
		// group "billing" there, and returns the incarnation's ID.
		incarnation := func() string {
			t.Helper()
			tp, err := f.l.CreateTopicWith(ctx, "c", spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if _, err := f.l.Append(ctx, "c", []log.Record{{Key: []byte(k), Value: []byte("v")}}, log.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Meta.(store.DirtyCounterStore).AddOverwrites(ctx, tp.ID(), 0, 4); err != nil {
				t.Fatal(err)
			}
			a, err := s.Meta.AcquireLease(ctx, "billing", tp.ID(), 0, "m", f.now, f.now.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			p := store.ParkedKey{Group: "billing", Topic: tp.ID(), Partition: 0, Key: []byte("o-1"), Records: 1, ParkedAt: f.now, ParkOffset: -1}
			if err := s.Meta.(store.ParkStore).PutParked(ctx, p, "m", a.Generation); err != nil {
				t.Fatal(err)
			}
			return tp.ID()
		}
		if _, err := s.Meta.EnsureGroup(ctx, store.GroupConfig{Name: "billing", ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: f.now}); err != nil {
			t.Fatal(err)
		}
		old := incarnation()
		if err := f.l.DeleteTopic(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(2 * time.Second) // the old lease lapses
		cur := incarnation()

		f.now = f.now.Add(6 * time.Minute)
		st := f.run(t, retention.Job{})
		if st.TopicsPurged != 1 || st.KeysDeleted != len(keys) || st.ParkedDeleted != 1 {
			t.Fatalf("purge: %+v; want 1 topic, %d key entries and 1 parked key deleted", st, len(keys))
		}
		ks := s.Meta.(store.KeyIndexStore)
		for _, k := range keys {
			var found int
			for p := range spec.Partitions {
				if _, err := ks.GetKey(ctx, old, p, []byte(k)); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("key %s of the purged incarnation on partition %d: %v, want ErrNotFound", k, p, err)
				}
				if _, err := ks.GetKey(ctx, cur, p, []byte(k)); err == nil {
					found++
				}
			}
			if found != 1 {
				t.Fatalf("key %s of the topic created again: found on %d partitions, want 1", k, found)
			}
		}
		dc := s.Meta.(store.DirtyCounterStore)
		for id, want := range map[string]int64{old: 0, cur: 4} {
			if c, err := dc.AddOverwrites(ctx, id, 0, 0); err != nil || c.Overwrites != want {
				t.Fatalf("dirty counter of %s/0 after the purge: %+v, %v; want %d overwrites", id, c, err, want)
			}
		}
		rows, err := s.Meta.(store.ParkStore).ListParked(ctx, "billing")
		if err != nil || len(rows) != 1 || rows[0].Topic != cur {
			t.Fatalf("parked keys after the purge: %+v, %v; want only the one on %s", rows, err, cur)
		}
	})
}

// TestPurgeScansTheIndexOnlyForCompactedTopics: on DynamoDB the key rows of a compacted
// topic can be found only by a scan of the index table, so the purge of a topic that
// deletes by time, which has none, makes no Scan at all.
func TestPurgeScansTheIndexOnlyForCompactedTopics(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	f := newFixture(t, s)
	for cleanup, scans := range map[store.CleanupPolicy]bool{store.CleanupDelete: false, store.CleanupCompact: true} {
		name := "p-" + string(cleanup)
		spec := log.TopicSpec{Partitions: 1, Retention: time.Hour, Cleanup: store.TopicCleanup{Cleanup: cleanup}}
		if _, err := f.l.CreateTopicWith(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Append(ctx, name, []log.Record{{Key: []byte("k"), Value: []byte("v")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := f.l.DeleteTopic(ctx, name); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(6 * time.Minute)
		counter.Reset()
		if st := f.run(t, retention.Job{}); st.TopicsPurged != 1 {
			t.Fatalf("%s: %+v, want the topic purged", cleanup, st)
		}
		var indexScans int64
		for table, op := range counter.TablesOf("DynamoDB.Scan") {
			if strings.HasSuffix(table, dynamo.IndexTable) {
				indexScans += op.Requests
			}
		}
		if (indexScans > 0) != scans {
			t.Errorf("purge of a %s topic: %d Scan requests on the index table, want any: %v", cleanup, indexScans, scans)
		}
	}
}

// TestPurgeGoesOnPastTheKeyBudget: a purge whose search for key rows runs out of its
// budget still purges the topic (its record goes, so no later pass searches again) and
// counts the cut; the rows it did not reach are left.
func TestPurgeGoesOnPastTheKeyBudget(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		spec := log.TopicSpec{Partitions: 1, Retention: time.Hour, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}
		tp, err := f.l.CreateTopicWith(ctx, "c", spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Append(ctx, "c", []log.Record{{Key: []byte("k"), Value: []byte("v")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := f.l.DeleteTopic(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(6 * time.Minute)
		st := f.run(t, retention.Job{KeyPurgeBudget: time.Nanosecond})
		if st.TopicsPurged != 1 || st.KeyPurgesCut != 1 || st.KeysDeleted != 0 {
			t.Fatalf("purge with no time for the key rows: %+v; want the topic purged and the key search cut", st)
		}
		if ds, err := s.Meta.(store.TopicAdminStore).DeletedTopics(ctx); err != nil || len(ds) != 0 {
			t.Fatalf("deleted incarnations left: %+v, %v", ds, err)
		}
		if _, err := s.Meta.(store.KeyIndexStore).GetKey(ctx, tp.ID(), 0, []byte("k")); err != nil {
			t.Fatalf("the row the cut search did not reach: %v, want it left", err)
		}
		if st := f.run(t, retention.Job{}); st.KeysDeleted != 0 || st.TopicsPurged != 0 {
			t.Fatalf("the next pass: %+v, want nothing more to purge", st)
		}
	})
}
