package log_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/storetest"
)

func newLog(t testing.TB, s backendtest.Stores) *log.Log {
	t.Helper()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustTopic(t testing.TB, l *log.Log, name string, partitions int32) {
	t.Helper()
	if _, err := l.CreateTopic(context.Background(), name, partitions, 0); err != nil {
		t.Fatal(err)
	}
}

// readAll polls a partition from the log start to the high watermark.
func readAll(t testing.TB, l *log.Log, topic string, p int32) []segment.Record {
	t.Helper()
	ctx := context.Background()
	var out []segment.Record
	var off int64
	for {
		res, err := l.Poll(ctx, topic, p, off, log.PollOptions{MaxRecords: 1000})
		if err != nil {
			t.Fatalf("poll %s/%d@%d: %v", topic, p, off, err)
		}
		out = append(out, res.Records...)
		if res.NextOffset == res.HighWatermark {
			return out
		}
		if res.NextOffset == off {
			t.Fatalf("poll %s/%d@%d made no progress below the high watermark %d", topic, p, off, res.HighWatermark)
		}
		off = res.NextOffset
	}
}

func checkDense(t testing.TB, recs []segment.Record) {
	t.Helper()
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d: offsets must be dense from 0", i, r.Offset)
		}
	}
}

func i32(v int32) *int32 { return &v }

// TestConcurrentAppenders: 16 appenders × 50 batches (15 on the emulator, which
// serialises every request) onto 2 partitions, through 4
// independent Log instances (4 API hosts, 4 concurrent requests each). Offsets are dense and unique, every
// acknowledged record reads back byte-identical at its offset, and each appender's
// records of one key keep their send order.
func TestConcurrentAppenders(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "orders", 2)
		const appenders, perBatch = 16, 3
		batches := 50
		if s.Name != "local" {
			batches = 15
		}
		type ack struct {
			key, value []byte
			partition  int32
			offset     int64
		}
		const hosts = 4
		logs := make([]*log.Log, hosts)
		for i := range logs {
			logs[i] = newLog(t, s)
		}
		acks := make([][]ack, appenders)
		var wg sync.WaitGroup
		errs := make(chan error, appenders)
		for a := 0; a < appenders; a++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				al := logs[a%hosts]
				for b := 0; b < batches; b++ {
					recs := make([]log.Record, perBatch)
					for i := range recs {
						key := fmt.Appendf(nil, "order-%d-%d", a, i%2)
						recs[i] = log.Record{Key: key, Value: fmt.Appendf(nil, "a%d-b%d-r%d", a, b, i)}
					}
					res, err := al.Append(ctx, "orders", recs, log.AppendOptions{})
					if err != nil {
						errs <- err
						return
					}
					for i, r := range res {
						acks[a] = append(acks[a], ack{recs[i].Key, recs[i].Value, r.Partition, r.Offset})
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		parts := [][]segment.Record{readAll(t, l, "orders", 0), readAll(t, l, "orders", 1)}
		total := 0
		for p, recs := range parts {
			checkDense(t, recs)
			total += len(recs)
			_ = p
		}
		if total != appenders*batches*perBatch {
			t.Fatalf("read %d records, appended %d", total, appenders*batches*perBatch)
		}
		for a := range acks {
			last := map[string]int64{}
			for _, k := range acks[a] {
				got := parts[k.partition][k.offset]
				if !bytes.Equal(got.Value, k.value) || !bytes.Equal(got.Key, k.key) {
					t.Fatalf("offset %d/%d holds %q, acknowledged %q", k.partition, k.offset, got.Value, k.value)
				}
				if want := log.PartitionForKey(k.key, 2); k.partition != want {
					t.Fatalf("key %q went to partition %d, not %d", k.key, k.partition, want)
				}
				if prev, ok := last[string(k.key)]; ok && k.offset <= prev {
					t.Fatalf("appender %d key %q: offset %d after %d breaks send order", a, k.key, k.offset, prev)
				}
				last[string(k.key)] = k.offset
			}
		}
	})
}

func TestAppendPollRoundTrip(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 3)
		ts := int64(1732870000000)
		recs := []log.Record{
			{Key: []byte("k1"), Value: []byte("v1"), Headers: []segment.Header{{Key: "h", Value: []byte("x")}}, Timestamp: &ts, Partition: i32(0)},
			{Value: []byte("unkeyed"), Partition: i32(2)},
			{Key: []byte{}, Value: []byte{}, Partition: i32(2)},
		}
		res, err := l.Append(ctx, "t", recs, log.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res[1].Partition != 2 || res[2].Partition != 2 || res[2].Offset != res[1].Offset+1 {
			t.Fatalf("results %+v", res)
		}
		got, err := l.Poll(ctx, "t", res[0].Partition, res[0].Offset, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := got.Records[0]
		if r.Timestamp != ts || string(r.Key) != "k1" || string(r.Value) != "v1" || len(r.Headers) != 1 || string(r.Headers[0].Value) != "x" {
			t.Fatalf("record %+v", r)
		}
		got, err = l.Poll(ctx, "t", 2, 0, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Records) != 2 || got.Records[0].Key != nil || got.Records[1].Key == nil {
			t.Fatalf("nil and empty keys must stay distinct: %+v", got.Records)
		}
		if got.Records[0].Timestamp == 0 {
			t.Fatal("a record without a timestamp must get the append time")
		}
	})
}

func TestPollBounds(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 1)
		for b := 0; b < 5; b++ {
			recs := make([]log.Record, 4)
			for i := range recs {
				recs[i] = log.Record{Value: bytes.Repeat([]byte{byte('a' + b)}, 100), Partition: i32(0)}
			}
			if _, err := l.Append(ctx, "t", recs, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			name      string
			offset    int64
			opt       log.PollOptions
			wantFirst int64
			wantN     int
			wantErr   error
		}{
			{"from start", 0, log.PollOptions{}, 0, 20, nil},
			{"mid entry", 6, log.PollOptions{MaxRecords: 3}, 6, 3, nil},
			{"across entries", 3, log.PollOptions{MaxRecords: 6}, 3, 6, nil},
			{"byte budget", 2, log.PollOptions{MaxBytes: 250}, 2, 2, nil},
			{"first record over budget", 5, log.PollOptions{MaxBytes: 1}, 5, 1, nil},
			{"at high watermark", 20, log.PollOptions{}, 0, 0, nil},
			{"beyond high watermark", 21, log.PollOptions{}, 0, 0, log.ErrOffsetOutOfRange},
			{"negative offset", -1, log.PollOptions{}, 0, 0, log.ErrInvalid},
			{"too many records", 0, log.PollOptions{MaxRecords: 10001}, 0, 0, log.ErrInvalid},
			{"wait too long", 0, log.PollOptions{Wait: 21 * time.Second}, 0, 0, log.ErrInvalid},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res, err := l.Poll(ctx, "t", 0, c.offset, c.opt)
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				if err != nil {
					var oor *log.OffsetOutOfRangeError
					if errors.As(err, &oor) && (oor.HighWatermark != 20 || oor.LogStartOffset != 0) {
						t.Fatalf("out of range bounds %+v", oor)
					}
					return
				}
				if len(res.Records) != c.wantN || res.HighWatermark != 20 {
					t.Fatalf("got %d records hw %d, want %d", len(res.Records), res.HighWatermark, c.wantN)
				}
				if c.wantN > 0 && (res.Records[0].Offset != c.wantFirst || res.NextOffset != c.wantFirst+int64(c.wantN)) {
					t.Fatalf("first %d next %d", res.Records[0].Offset, res.NextOffset)
				}
			})
		}
		if _, err := l.Poll(ctx, "t", 1, 0, log.PollOptions{}); !errors.Is(err, log.ErrInvalid) {
			t.Fatalf("partition out of range: %v", err)
		}
		if _, err := l.Poll(ctx, "nope", 0, 0, log.PollOptions{}); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("unknown topic: %v", err)
		}
	})
}

// TestBadInputChangesNothing: each rejected append gets a typed error and leaves the
// high watermark where it was.
func TestBadInputChangesNothing(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 2)
		max := make([]byte, log.MaxRecordBytes)
		if _, err := l.Append(ctx, "t", []log.Record{{Value: max, Partition: i32(0)}}, log.AppendOptions{}); err != nil {
			t.Fatalf("a 1 MiB value must be accepted: %v", err)
		}
		over := make([]byte, log.MaxRecordBytes+1)
		many := make([]log.Record, log.MaxRecordsPerBatch+1)
		for i := range many {
			many[i] = log.Record{Value: []byte("x")}
		}
		cases := []struct {
			name  string
			topic string
			recs  []log.Record
			want  error
		}{
			{"one byte over 1 MiB", "t", []log.Record{{Value: over, Partition: i32(0)}}, log.ErrTooLarge},
			{"key and value over 1 MiB", "t", []log.Record{{Key: []byte("k"), Value: max}}, log.ErrTooLarge},
			{"too many records", "t", many, log.ErrTooLarge},
			{"batch over 6 MiB", "t", []log.Record{{Value: max[:1<<20-10]}, {Value: max[:1<<20-10]}, {Value: max[:1<<20-10]}, {Value: max[:1<<20-10]}, {Value: max[:1<<20-10]}, {Value: max[:1<<20-10]}, {Value: max[:100]}}, log.ErrTooLarge},
			{"unknown topic", "nope", []log.Record{{Value: []byte("x")}}, log.ErrTopicNotFound},
			{"partition out of range", "t", []log.Record{{Value: []byte("x"), Partition: i32(2)}}, log.ErrInvalid},
			{"negative partition", "t", []log.Record{{Value: []byte("x"), Partition: i32(-1)}}, log.ErrInvalid},
			{"empty batch", "t", nil, log.ErrInvalid},
			{"empty header name", "t", []log.Record{{Value: []byte("x"), Headers: []segment.Header{{Key: ""}}}}, log.ErrInvalid},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := hws(t, l, "t")
				if _, err := l.Append(ctx, c.topic, c.recs, log.AppendOptions{}); !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %v", err, c.want)
				}
				if after := hws(t, l, "t"); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("high watermarks moved from %v to %v", before, after)
				}
			})
		}
	})
}

func hws(t testing.TB, l *log.Log, topic string) []int64 {
	t.Helper()
	info, err := l.DescribeTopic(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, p := range info.Partitions {
		out = append(out, p.HighWatermark)
	}
	return out
}

// TestMalformedSegment: a corrupted block is reported as ErrCorrupt, never returned.
func TestMalformedSegment(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 1)
		// An index entry pointing at bytes that are not a valid block.
		if err := s.Objects.Put(ctx, "v1/t/garbage", []byte("this is not a segment block at all"), store.Kept); err != nil {
			t.Fatal(err)
		}
		tp, err := l.Topic(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		e := store.IndexEntry{Topic: tp.ID(), Partition: 0, BaseOffset: 0, Count: 1, ObjectKey: "v1/t/garbage", ByteLength: 10,
			AppendedAt: time.UnixMilli(1_700_000_000_000), MaxTimestamp: time.UnixMilli(1_700_000_000_000)}
		if _, err := storetest.AppendEntry(ctx, s.Meta, e); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Poll(ctx, "t", 0, 0, log.PollOptions{}); !errors.Is(err, log.ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
		if got := hws(t, l, "t"); got[0] != 1 {
			t.Fatalf("high watermark %v", got)
		}
	})
}

func TestIdempotentAppend(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 4)
		recs := []log.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}, {Key: []byte("c"), Value: []byte("3")}}
		opt := log.AppendOptions{IdempotencyKey: "req-1"}
		first, err := l.Append(ctx, "t", recs, opt)
		if err != nil {
			t.Fatal(err)
		}
		again, err := l.Append(ctx, "t", recs, opt)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(first) != fmt.Sprint(again) {
			t.Fatalf("retry returned %v, first call %v", again, first)
		}
		before := hws(t, l, "t")
		other := []log.Record{{Key: []byte("a"), Value: []byte("changed")}, recs[1], recs[2]}
		if _, err := l.Append(ctx, "t", other, opt); !errors.Is(err, log.ErrIdempotencyKeyReused) {
			t.Fatalf("err = %v, want ErrIdempotencyKeyReused", err)
		}
		if after := hws(t, l, "t"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("reuse moved high watermarks %v → %v", before, after)
		}
		// Unkeyed records of an idempotent request land where the first attempt put them.
		unkeyed := []log.Record{{Value: []byte("u1")}, {Value: []byte("u2")}, {Value: []byte("u3")}}
		uopt := log.AppendOptions{IdempotencyKey: "req-unkeyed"}
		u1, err := l.Append(ctx, "t", unkeyed, uopt)
		if err != nil {
			t.Fatal(err)
		}
		u2, err := l.Append(ctx, "t", unkeyed, uopt)
		if err != nil || fmt.Sprint(u1) != fmt.Sprint(u2) {
			t.Fatalf("retry of unkeyed records: %v %v, first %v", u2, err, u1)
		}
		// The same key on another topic is another request.
		mustTopic(t, l, "t2", 4)
		if _, err := l.Append(ctx, "t2", other, opt); err != nil {
			t.Fatalf("same key on another topic: %v", err)
		}
		total := 0
		for p := int32(0); p < 4; p++ {
			total += len(readAll(t, l, "t", p))
		}
		if total != 6 {
			t.Fatalf("%d records stored, want 6", total)
		}
	})
}

// TestLongPollWakesOnAppend: a waiting poll returns as soon as a record arrives.
func TestLongPollWakesOnAppend(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 1)
		done := make(chan log.PollResult, 1)
		go func() {
			res, err := l.Poll(ctx, "t", 0, 0, log.PollOptions{Wait: 20 * time.Second})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		time.Sleep(50 * time.Millisecond)
		if _, err := l.Append(ctx, "t", []log.Record{{Value: []byte("x")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-done:
			if len(res.Records) != 1 {
				t.Fatalf("woke with %d records", len(res.Records))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the poll did not return after the append (it would wait until its 20 s deadline)")
		}
	})
}

func TestTopics(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		cases := []struct {
			name       string
			partitions int32
			retention  time.Duration
			want       error
		}{
			{"orders", 8, 0, nil},
			{"orders", 8, 0, log.ErrTopicExists},
			{".", 1, 0, log.ErrInvalid},
			{"..", 1, 0, log.ErrInvalid},
			{"a/b", 1, 0, log.ErrInvalid},
			{"p-1", -1, 0, log.ErrInvalid}, // 0 takes the default (TestCreateTopicDefaultsAndMaxRetention)
			{"p1025", 1025, 0, log.ErrInvalid},
			{"short", 1, 999 * time.Millisecond, log.ErrInvalid},
			{"x.y_z-1", 1024, time.Second, nil},
		}
		for _, c := range cases {
			if _, err := l.CreateTopic(ctx, c.name, c.partitions, c.retention); !errors.Is(err, c.want) {
				t.Errorf("create %q/%d: err = %v, want %v", c.name, c.partitions, err, c.want)
			}
		}
		names, err := l.ListTopics(ctx)
		if err != nil || fmt.Sprint(names) != "[orders x.y_z-1]" {
			t.Fatalf("list = %v, %v", names, err)
		}
		info, err := l.DescribeTopic(ctx, "orders")
		if err != nil || len(info.Partitions) != 8 || info.Retention != log.DefaultRetention {
			t.Fatalf("describe = %+v, %v", info, err)
		}
	})
}
