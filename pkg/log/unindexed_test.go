package log_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TestUnindexedAge: a partition whose newest commit is indexed reports 0; a commit the
// sequencer took without an index entry (an appender that died before its index write,
// possible where the backend does not index atomically) reports its age by the clock.
func TestUnindexedAge(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := time.UnixMilli(1_780_000_000_000)
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "u", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		if age, err := l.UnindexedAge(ctx, "u", 0); err != nil || age != 0 {
			t.Fatalf("no commit: %v, %v; want 0", age, err)
		}
		if _, err := l.Append(ctx, "u", []log.Record{{Value: []byte("a")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if age, err := l.UnindexedAge(ctx, "u", 0); err != nil || age != 0 {
			t.Fatalf("indexed commit: %v, %v; want 0", age, err)
		}
		id, err := l.TopicID(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Meta.Sequence(ctx, store.SeqCommit{Entry: store.IndexEntry{Topic: id, Partition: 0, Count: 1,
			ObjectKey: "v1/u/none", ByteLength: 1, AppendedAt: now, ExpiresAt: now.Add(2 * time.Hour)}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: materialised with the commit: %v", s.Name, c.Materialized)
		now = now.Add(30 * time.Second)
		want := 30 * time.Second
		if c.Materialized {
			want = 0 // the backend indexed it with the commit
		} else if s.Name == "local" {
			t.Fatal("the embedded backend left a commit unindexed")
		}
		if age, err := l.UnindexedAge(ctx, "u", 0); err != nil || age != want {
			t.Fatalf("commit materialised=%v: age %v, %v; want %v", c.Materialized, age, err, want)
		}
		if _, err := l.UnindexedAge(ctx, "u", 1); err == nil {
			t.Fatal("a partition beyond the count answered")
		}
	})
}
