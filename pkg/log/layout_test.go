package log_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/store"
)

// legacyTopic creates a topic of the per-partition counter layout (an incarnation as
// topics created before the topic commit have) directly in the store.
func legacyTopic(t testing.TB, s backendtest.Stores, name string, partitions int32) {
	t.Helper()
	if err := s.Meta.CreateTopic(context.Background(), store.Topic{Name: name, Incarnation: "01legacy",
		Partitions: partitions, Retention: 24 * time.Hour, CreatedAt: time.Now().Truncate(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
}

// TestOpensDataDirOfPartitionCounters opens a data directory written by the code
// before the topic commit (testdata/datadir-partition-counters: topic "orders", 3
// partitions, 4 appends of one record per partition, the last idempotent; made by
// running that commit's pkg/log on the embedded backend). Its topic keeps its layout:
// it reads back as written and takes appends after its offsets, beside a new topic of
// the topic commit layout in the same directory.
func TestOpensDataDirOfPartitionCounters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "datadir-partition-counters"))); err != nil {
		t.Fatal(err)
	}
	n, err := node.Open(ctx, node.Config{Backend: node.BackendLocal, DataDir: dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l, err := log.New(log.Config{Objects: n.Objects(), Meta: n.Meta()})
	if err != nil {
		t.Fatal(err)
	}
	old, err := l.Topic(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if store.TopicCommits(old.ID()) {
		t.Fatalf("the old topic %s reads as a topic commit topic", old.ID())
	}
	for p := range int32(3) {
		recs := readAll(t, l, "orders", p)
		if len(recs) != 4 {
			t.Fatalf("partition %d holds %d records, want the 4 written", p, len(recs))
		}
		for i, r := range recs {
			if want := fmt.Sprintf("old-%d-%d", i, p); r.Offset != int64(i) || string(r.Value) != want {
				t.Fatalf("partition %d record %d = %q at %d, want %q at %d", p, i, r.Value, r.Offset, want, i)
			}
		}
	}
	res, err := l.Append(ctx, "orders", []log.Record{{Partition: i32(0), Value: []byte("new-0")}, {Partition: i32(2), Value: []byte("new-2")}}, log.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Offset != 4 || res[1].Offset != 4 {
		t.Fatalf("appends to the old topic at %+v, want offset 4 on partitions 0 and 2", res)
	}
	if recs := readAll(t, l, "orders", 2); len(recs) != 5 || string(recs[4].Value) != "new-2" {
		t.Fatalf("partition 2 after the append: %d records", len(recs))
	}
	mustTopic(t, l, "fresh", 2)
	fresh, err := l.Topic(ctx, "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if !store.TopicCommits(fresh.ID()) {
		t.Fatalf("a new topic %s is not of the topic commit layout", fresh.ID())
	}
	if _, err := l.Append(ctx, "fresh", []log.Record{{Partition: i32(1), Value: []byte("x")}}, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, l, "fresh", 1); len(recs) != 1 || recs[0].Offset != 0 {
		t.Fatalf("new topic beside the old: %+v", recs)
	}
}
