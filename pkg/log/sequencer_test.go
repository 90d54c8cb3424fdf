package log_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/local"
)

// TestContentionNeverLosesARace: 16 separate Log instances (16 API hosts) × 2 appenders
// append single records to one partition on the emulator. Every commit is an atomic add,
// so no append loses a race: the DynamoDB write requests per acknowledged append (every
// attempt, counted by an SDK middleware) are the commit and the index entry, 2. Offsets
// are dense and unique, and every acknowledged record reads back byte-identical.
func TestContentionNeverLosesARace(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	const hosts, perHost, each = 16, 2, 5
	logs := make([]*log.Log, hosts)
	for i := range logs {
		logs[i] = newLog(t, s)
	}
	mustTopic(t, logs[0], "hot", 1)
	counter.Reset()
	type ack struct {
		value  []byte
		offset int64
	}
	acks := make([][]ack, hosts*perHost)
	errs := make([]error, hosts*perHost)
	var wg sync.WaitGroup
	for a := range acks {
		wg.Go(func() {
			for i := range each {
				v := fmt.Appendf(nil, "appender-%d-record-%d", a, i)
				res, err := logs[a%hosts].Append(ctx, "hot", []log.Record{{Value: v, Partition: i32(0)}}, log.AppendOptions{})
				if err != nil {
					errs[a] = err
					return
				}
				acks[a] = append(acks[a], ack{v, res[0].Offset})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	appends := int64(hosts * perHost * each)
	writes := counter.Requests(awscount.DynamoDBWrites...)
	counts, ops := counter.Snapshot()
	for _, op := range ops {
		t.Logf("%s: %d requests", op, counts[op].Requests)
	}
	t.Logf("%d acknowledged appends, %d DynamoDB write requests (%.2f per append)", appends, writes, float64(writes)/float64(appends))
	if float64(writes)/float64(appends) > 2 {
		t.Fatalf("%d DynamoDB write requests for %d appends: more than 2 per append", writes, appends)
	}
	recs := readAll(t, logs[0], "hot", 0)
	checkDense(t, recs)
	if int64(len(recs)) != appends {
		t.Fatalf("read %d records, acknowledged %d", len(recs), appends)
	}
	for _, as := range acks {
		for _, k := range as {
			if !bytes.Equal(recs[k.offset].Value, k.value) {
				t.Fatalf("offset %d holds %q, acknowledged %q", k.offset, recs[k.offset].Value, k.value)
			}
		}
	}
}

// failIndex fails every index write: an appender that crashes between its commit and
// its index write.
type failIndex struct{ store.MetaStore }

func (failIndex) PutIndexEntry(context.Context, store.IndexEntry) error { return errCrash }

// TestCrashBetweenCommitAndIndexWrite: an appender commits and dies before writing the
// index entry. A poll at that offset waits instead of skipping or failing; the
// materialiser writes the entry from the commit stream and the record becomes readable
// (within the poll's gap wait, 2 s); the next append gets the next offset, never a used
// one. On the embedded backend the commit and its entry are one transaction, so the crash
// point does not exist there and the record is readable at once.
func TestCrashBetweenCommitAndIndexWrite(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "gap", 1)
		if _, err := l.Append(ctx, "gap", []log.Record{{Value: []byte("before")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		crashy, err := log.New(log.Config{Objects: s.Objects, Meta: failIndex{s.Meta}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = crashy.Append(ctx, "gap", []log.Record{{Value: []byte("orphan")}}, log.AppendOptions{})
		if s.Commits == nil {
			if err != nil {
				t.Fatalf("the embedded backend materialises with the commit; append failed: %v", err)
			}
		} else if err == nil {
			t.Fatal("the append must fail when its index write fails")
		}
		// A reader at the orphan's offset waits rather than skipping it.
		start := time.Now()
		res, err := l.Poll(ctx, "gap", 0, 1, log.PollOptions{})
		if err != nil {
			t.Fatalf("poll at an unmaterialised offset: %v", err)
		}
		if s.Commits != nil {
			if len(res.Records) != 0 || res.NextOffset != 1 || res.HighWatermark != 2 {
				t.Fatalf("poll before the materialiser ran = %d records, next %d, hw %d; want none, 1, 2",
					len(res.Records), res.NextOffset, res.HighWatermark)
			}
			t.Logf("poll waited %s at the gap and answered nothing", time.Since(start).Round(time.Millisecond))
			backendtest.Materialise(t, s, l)
			start = time.Now()
			res, err = l.Poll(ctx, "gap", 0, 1, log.PollOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("readable %s after the materialiser started", time.Since(start).Round(time.Millisecond))
		}
		if len(res.Records) != 1 || string(res.Records[0].Value) != "orphan" || res.Records[0].Offset != 1 {
			t.Fatalf("after materialising: %+v, want the orphan at offset 1", res.Records)
		}
		got, err := l.Append(ctx, "gap", []log.Record{{Value: []byte("after")}}, log.AppendOptions{})
		if err != nil || got[0].Offset != 2 {
			t.Fatalf("append after the crash = %+v, %v; want offset 2", got, err)
		}
		recs := readAll(t, l, "gap", 0)
		checkDense(t, recs)
		if len(recs) != 3 || string(recs[2].Value) != "after" {
			t.Fatalf("log = %d records, want before, orphan, after", len(recs))
		}
	})
}

// TestHighWatermarkNeverMovesBack: the high watermark lives in the sequencer, not in
// the newest index entry, so it survives every entry being deleted (DynamoDB TTL after a
// long outage), a retention pass over an append whose time was stamped long before its
// commit, and a restart (a new Log over the same stores).
func TestHighWatermarkNeverMovesBack(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := time.Now()
		clock := func() time.Time { return now }
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "hw", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := l.Append(ctx, "hw", []log.Record{{Value: fmt.Appendf(nil, "r%d", i)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		wantBounds := func(what string, l *log.Log, start, hw int64) {
			t.Helper()
			s, h, err := l.Bounds(ctx, "hw", 0)
			if err != nil || s != start || h != hw {
				t.Fatalf("%s: bounds [%d, %d), %v; want [%d, %d)", what, s, h, err, start, hw)
			}
		}
		wantBounds("after 3 appends", l, 0, 3)

		// Retention two hours later: every entry is expired; the log start moves to the
		// end and the high watermark stays.
		now = now.Add(2 * time.Hour)
		job := retention.Job{Meta: s.Meta, Objects: s.Objects, Clock: clock}
		if _, err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		wantBounds("after retention", l, 3, 3)

		// Every remaining entry deleted, as DynamoDB's TTL does after a long outage.
		tp, err := l.Topic(ctx, "hw")
		if err != nil {
			t.Fatal(err)
		}
		es, err := s.Meta.IndexEntries(ctx, tp.ID(), 0, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if err := s.Meta.DeleteIndexEntry(ctx, tp.ID(), 0, e.BaseOffset); err != nil {
				t.Fatal(err)
			}
		}
		restarted, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		wantBounds("after TTL and a restart", restarted, 3, 3)
		res, err := restarted.Append(ctx, "hw", []log.Record{{Value: []byte("next")}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 3 {
			t.Fatalf("append after the index emptied = %+v, %v; want offset 3", res, err)
		}

		// An append stamped long before its commit (a slow host) is expired by the next
		// pass at once; the high watermark still does not fall.
		stale, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return now.Add(-90 * time.Minute) }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = stale.Append(ctx, "hw", []log.Record{{Value: []byte("stale")}}, log.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		_, hw, err := restarted.Bounds(ctx, "hw", 0)
		if err != nil || hw != 5 {
			t.Fatalf("high watermark after retention of a stale append = %d, %v; want 5", hw, err)
		}
		res, err = restarted.Append(ctx, "hw", []log.Record{{Value: []byte("last")}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 5 {
			t.Fatalf("append after retention = %+v, %v; want offset 5", res, err)
		}
	})
}

// TestStalledAppendCommitsNothing: an append whose commit would come later than the
// commit window after its object was named fails with nothing committed, so retention,
// which deletes objects by that name's time plus a larger margin, never deletes an
// object an entry at or above the log start refers to.
func TestStalledAppendCommitsNothing(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := time.Now()
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		stall := &stallingObjects{ObjectStore: s.Objects, after: func() { mu.Lock(); now = now.Add(2 * time.Minute); mu.Unlock() }}
		l, err := log.New(log.Config{Objects: stall, Meta: s.Meta, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "stall", 1)
		_, err = l.Append(ctx, "stall", []log.Record{{Value: []byte("late")}}, log.AppendOptions{})
		if !errors.Is(err, log.ErrUnavailable) {
			t.Fatalf("stalled append = %v, want ErrUnavailable", err)
		}
		if _, hw, err := l.Bounds(ctx, "stall", 0); err != nil || hw != 0 {
			t.Fatalf("high watermark after a stalled append = %d, %v; want 0", hw, err)
		}
	})
}

// stallingObjects calls after once an object is stored (the host stalls after its PUT).
type stallingObjects struct {
	store.ObjectStore
	after func()
}

func (s *stallingObjects) Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error {
	if err := s.ObjectStore.Put(ctx, key, data, expiry); err != nil {
		return err
	}
	s.after()
	return nil
}

// TestMigrationFromIndexFormat opens a data directory written by the release whose
// index was the sequencer (testdata/legacy-v0: topic "orders", partition 0 holding 5
// records, partition 1 holding 10 with its log start at 4) and appends: every old
// record reads back, the bounds carry over, and new offsets continue after the old high
// watermark. Its objects, in the first layout of files, are moved into packs as the
// node opens them. Opening it twice changes nothing more.
func TestMigrationFromIndexFormat(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/legacy-v0", dir)
	for round := range 2 {
		objs, err := local.OpenPackStore(context.Background(), filepath.Join(dir, "objects"))
		if err != nil {
			t.Fatal(err)
		}
		meta, err := local.OpenMetaStore(filepath.Join(dir, "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := log.New(log.Config{Objects: objs, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for p, want := range [][2]int64{{0, 5 + int64(round)}, {4, 10 + int64(round)}} {
			start, hw, err := l.Bounds(ctx, "orders", int32(p))
			if err != nil || start != want[0] || hw != want[1] {
				t.Fatalf("round %d partition %d: bounds [%d, %d), %v; want [%d, %d)", round, p, start, hw, err, want[0], want[1])
			}
		}
		res, err := l.Poll(ctx, "orders", 0, 0, log.PollOptions{})
		if err != nil || len(res.Records) < 5 || string(res.Records[4].Value) != "e" {
			t.Fatalf("round %d: old records of partition 0 = %d, %v", round, len(res.Records), err)
		}
		got, err := l.Append(ctx, "orders", []log.Record{{Value: []byte("new"), Partition: i32(0)}, {Value: []byte("new"), Partition: i32(1)}}, log.AppendOptions{})
		if err != nil || got[0].Offset != 5+int64(round) || got[1].Offset != 10+int64(round) {
			t.Fatalf("round %d: append after migration = %+v, %v", round, got, err)
		}
		if err := meta.Close(); err != nil {
			t.Fatal(err)
		}
		if err := objs.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
