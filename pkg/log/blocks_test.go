package log_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// encode is a block of values stamped from ts on.
func encode(t testing.TB, ts int64, values ...string) []byte {
	t.Helper()
	recs := make([]segment.Record, len(values))
	for i, v := range values {
		recs[i] = segment.Record{Timestamp: ts + int64(i), Key: []byte("k"), Value: []byte(v),
			Headers: []segment.Header{{Key: "h", Value: []byte(v)}}}
	}
	b, err := segment.EncodeBlock(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func blocksLog(t *testing.T, s backendtest.Stores, window time.Duration) (*log.Log, *countingObjects, *countingMeta) {
	t.Helper()
	l, objs, meta := groupLog(t, s, window, 1<<20, nil)
	if _, err := l.CreateTopic(context.Background(), "bl", 3, time.Hour); err != nil {
		t.Fatal(err)
	}
	return l, objs, meta
}

// storedObjects returns the objects the test's appends wrote under v1/bl/.
func storedObjects(t *testing.T, s backendtest.Stores) [][]byte {
	t.Helper()
	ctx := context.Background()
	var out [][]byte
	err := s.Objects.List(ctx, "v1/bl/", func(o store.ObjectInfo) error {
		b, err := s.Objects.GetRange(ctx, o.Key, 0, o.Size)
		out = append(out, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAppendBlocksStoredAsGiven: a request of blocks gets offsets per block, the object
// holds the blocks byte for byte (nothing decoded and re-encoded), and a poll returns the
// records with the producer's timestamps, keys and headers.
func TestAppendBlocksStoredAsGiven(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, _, _ := blocksLog(t, s, 0)
		b0, b2 := encode(t, 1000, "a", "b", "c"), encode(t, 5, "x")
		res, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 2, Data: b2}, {Partition: 0, Data: b0}}, log.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []log.BlockResult{{Partition: 2, BaseOffset: 0, Count: 1}, {Partition: 0, BaseOffset: 0, Count: 3}}
		if fmt.Sprint(res) != fmt.Sprint(want) {
			t.Fatalf("results %+v, want %+v", res, want)
		}
		objs := storedObjects(t, s)
		if len(objs) != 1 || !bytes.Contains(objs[0], b0) || !bytes.Contains(objs[0], b2) || len(objs[0]) != len(b0)+len(b2) {
			t.Fatalf("stored objects %d, want one holding exactly the two blocks", len(objs))
		}
		p, err := l.Poll(ctx, "bl", 0, 1, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 2 || string(p.Records[0].Value) != "b" || p.Records[0].Timestamp != 1001 ||
			p.Records[0].Offset != 1 || string(p.Records[1].Headers[0].Value) != "c" || p.NextOffset != 3 {
			t.Fatalf("poll: %+v", p)
		}
		r, err := l.PollRanges(ctx, "bl", 0, 1, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Ranges) != 1 || r.Ranges[0].BaseOffset != 0 || r.Ranges[0].Count != 3 || !bytes.Equal(r.Ranges[0].Data, b0) ||
			r.NextOffset != 3 || r.HighWatermark != 3 {
			t.Fatalf("ranges: %+v", r)
		}
	})
}

// TestAppendBlocksBadInputChangesNothing: each malformed or over-limit request is
// refused with ErrInvalid or ErrTooLarge and leaves no object and no offset behind.
func TestAppendBlocksBadInputChangesNothing(t *testing.T) {
	good := encode(t, 1, "a")
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1
	big := make([]byte, log.MaxRecordBytes+1)
	bigBlock, _ := segment.EncodeBlock([]segment.Record{{Value: big}})
	var many []segment.Record
	for range log.MaxRecordsPerBatch + 1 {
		many = append(many, segment.Record{Value: []byte{1}})
	}
	manyBlock, _ := segment.EncodeBlock(many)
	badHeader, _ := segment.EncodeBlock([]segment.Record{{Value: []byte("v"), Headers: []segment.Header{{Key: ""}}}})
	negTS, _ := segment.EncodeBlock([]segment.Record{{Timestamp: -1, Value: []byte("v")}})
	farTS, _ := segment.EncodeBlock([]segment.Record{{Timestamp: 253402300800000, Value: []byte("v")}})
	cases := []struct {
		name   string
		blocks []log.Block
		want   error
	}{
		{"none", nil, log.ErrInvalid},
		{"partition out of range", []log.Block{{Partition: 3, Data: good}}, log.ErrInvalid},
		{"negative partition", []log.Block{{Partition: -1, Data: good}}, log.ErrInvalid},
		{"partition twice", []log.Block{{Partition: 1, Data: good}, {Partition: 1, Data: good}}, log.ErrInvalid},
		{"bad CRC", []log.Block{{Partition: 0, Data: flipped}}, log.ErrInvalid},
		{"truncated", []log.Block{{Partition: 0, Data: good[:len(good)-1]}}, log.ErrInvalid},
		{"empty header name", []log.Block{{Partition: 0, Data: badHeader}}, log.ErrInvalid},
		{"negative timestamp", []log.Block{{Partition: 0, Data: negTS}}, log.ErrInvalid},
		{"timestamp past 9999", []log.Block{{Partition: 0, Data: farTS}}, log.ErrInvalid},
		{"record over 1 MiB", []log.Block{{Partition: 0, Data: bigBlock}}, log.ErrTooLarge},
		{"too many records", []log.Block{{Partition: 0, Data: manyBlock}}, log.ErrTooLarge},
		{"good then bad", []log.Block{{Partition: 0, Data: good}, {Partition: 1, Data: flipped}}, log.ErrInvalid},
	}
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, objs, meta := blocksLog(t, s, 0)
		for _, c := range cases {
			_, err := l.AppendBlocks(ctx, "bl", c.blocks, log.AppendOptions{IdempotencyKey: "k-" + c.name})
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if objs.puts.Load() != 0 || meta.commits.Load() != 0 {
			t.Fatalf("refused requests wrote %d objects and %d commits", objs.puts.Load(), meta.commits.Load())
		}
		for p := range int32(3) {
			if _, hw, err := l.Bounds(ctx, "bl", p); err != nil || hw != 0 {
				t.Fatalf("partition %d high watermark %d, %v", p, hw, err)
			}
		}
		// A key first refused for its bad body is free for a good one.
		if _, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 0, Data: good}}, log.AppendOptions{IdempotencyKey: "k-bad CRC"}); err != nil {
			t.Fatalf("the key of a refused request: %v", err)
		}
	})
}

// TestAppendBlocksIdempotent: a retry with the same key and bytes returns the first
// offsets and appends nothing; other bytes under the key are refused.
func TestAppendBlocksIdempotent(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, objs, _ := blocksLog(t, s, 0)
		req := []log.Block{{Partition: 1, Data: encode(t, 1, "a", "b")}}
		opt := log.AppendOptions{IdempotencyKey: "once"}
		first, err := l.AppendBlocks(ctx, "bl", req, opt)
		if err != nil {
			t.Fatal(err)
		}
		again, err := l.AppendBlocks(ctx, "bl", req, opt)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("retry: %+v, %v; first %+v", again, err, first)
		}
		if objs.puts.Load() != 1 {
			t.Fatalf("%d objects written, want 1", objs.puts.Load())
		}
		other := []log.Block{{Partition: 1, Data: encode(t, 1, "a", "c")}}
		if _, err := l.AppendBlocks(ctx, "bl", other, opt); !errors.Is(err, log.ErrIdempotencyKeyReused) {
			t.Fatalf("other bytes under the key: %v", err)
		}
	})
}

// TestGroupCommitMixesRecordsAndBlocks: a record request and block requests in one
// batch share one object and one commit per partition; every request reads back its own
// records at its own offsets, and the shared commit's range holds their blocks back to
// back.
func TestGroupCommitMixesRecordsAndBlocks(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, objs, meta := blocksLog(t, s, 200*time.Millisecond)
		warm(t, l, "bl")
		type answer struct {
			offsets []int64
			err     error
		}
		out := make(chan answer, 3)
		go func() {
			r, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 0, Data: encode(t, 1, "b1", "b2")}}, log.AppendOptions{})
			var o []int64
			for _, x := range r {
				o = append(o, x.BaseOffset, x.BaseOffset+int64(x.Count)-1)
			}
			out <- answer{o, err}
		}()
		go func() {
			p := int32(0)
			r, err := l.Append(ctx, "bl", []log.Record{{Value: []byte("r1"), Partition: &p}}, log.AppendOptions{})
			var o []int64
			for _, x := range r {
				o = append(o, x.Offset, x.Offset)
			}
			out <- answer{o, err}
		}()
		go func() {
			r, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 0, Data: encode(t, 1, "c1")}}, log.AppendOptions{})
			var o []int64
			for _, x := range r {
				o = append(o, x.BaseOffset, x.BaseOffset)
			}
			out <- answer{o, err}
		}()
		for range 3 {
			if a := <-out; a.err != nil {
				t.Fatal(a.err)
			}
		}
		if objs.puts.Load() != 1 || meta.commits.Load() != 1 {
			t.Fatalf("%d objects and %d commits, want 1 and 1", objs.puts.Load(), meta.commits.Load())
		}
		p, err := l.Poll(ctx, "bl", 0, 0, log.PollOptions{})
		if err != nil || len(p.Records) != 4 {
			t.Fatalf("poll: %d records, %v", len(p.Records), err)
		}
		// A binary poll answers the shared range from the block holding the offset on
		// (blocks wholly below it are left out, issue 17 item 5).
		r, err := l.PollRanges(ctx, "bl", 0, 2, log.PollOptions{})
		if err != nil || len(r.Ranges) != 1 || r.Ranges[0].BaseOffset > 2 || r.Ranges[0].BaseOffset+r.Ranges[0].Count != 4 || r.NextOffset != 4 {
			t.Fatalf("ranges: %+v, %v", r, err)
		}
		if n, err := segment.CountBlocks(r.Ranges[0].Data); err != nil || int64(n) != r.Ranges[0].Count {
			t.Fatalf("the shared range holds %d records in blocks, %v; want %d", n, err, r.Ranges[0].Count)
		}
	})
}

// TestPollRangesSkipsDuplicates: two concurrent attempts of one idempotent block
// request in one batch commit twice; both answer the same offsets, PollRanges shows the
// block once and its NextOffset steps over the duplicate commit's offsets.
func TestPollRangesSkipsDuplicates(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, _, meta := blocksLog(t, s, 200*time.Millisecond)
		warm(t, l, "bl")
		req := []log.Block{{Partition: 2, Data: encode(t, 1, "d")}}
		out := make(chan []log.BlockResult, 2)
		for range 2 {
			go func() {
				r, err := l.AppendBlocks(ctx, "bl", req, log.AppendOptions{IdempotencyKey: "twice"})
				if err != nil {
					t.Error(err)
				}
				out <- r
			}()
		}
		a, b := <-out, <-out
		if len(a) != 1 || len(b) != 1 || a[0].BaseOffset != b[0].BaseOffset {
			t.Fatalf("two attempts answered %+v and %+v", a, b)
		}
		if meta.commits.Load() != 2 {
			t.Skipf("the attempts landed in %d commits, not 2: nothing to skip", meta.commits.Load())
		}
		if _, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 2, Data: encode(t, 1, "e")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		r, err := l.PollRanges(ctx, "bl", 2, 0, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Ranges) != 2 || r.Ranges[0].BaseOffset != a[0].BaseOffset || r.Ranges[1].BaseOffset != 2 || r.NextOffset != 3 {
			t.Fatalf("ranges: %+v", r)
		}
	})
}

// TestIdempotentAppendReadsOneClaim: with folded claims an idempotent request reads its
// key's one claim (DynamoDB GetItem, counted by an SDK middleware on the emulator) whatever
// its partitions: a fresh request finds none and appends; a retry finds the claim, which
// carries every partition's offsets, and appends nothing (no PUT).
func TestIdempotentAppendReadsOneClaim(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "bl", 3, time.Hour); err != nil {
		t.Fatal(err)
	}
	warm(t, l, "bl")
	req := []log.Block{{Partition: 0, Data: encode(t, 1, "a")}, {Partition: 2, Data: encode(t, 1, "b")}}
	opt := log.AppendOptions{IdempotencyKey: "fresh"}
	counter.Reset()
	if _, err := l.AppendBlocks(ctx, "bl", req, opt); err != nil {
		t.Fatal(err)
	}
	if n := counter.Answered("DynamoDB.GetItem"); n != 1 {
		t.Errorf("a fresh idempotent append made %d GetItem requests, want 1 (its claim)", n)
	}
	counter.Reset()
	if _, err := l.AppendBlocks(ctx, "bl", req, opt); err != nil {
		t.Fatal(err)
	}
	if n, puts := counter.Answered("DynamoDB.GetItem"), counter.Answered("S3.PutObject"); n != 1 || puts != 0 {
		t.Errorf("a retry made %d GetItem and %d PutObject requests, want 1 and 0", n, puts)
	}
}

// TestTailPollQueriesTheIndexOnce: a consumer reading on from where its last poll ended
// asks at an entry's base, and its poll makes one index Query on DynamoDB (it made two:
// the entry holding the offset, then those after it); from inside an entry it makes two
// and returns the records from that offset on.
func TestTailPollQueriesTheIndexOnce(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "tail", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, vs := range [][]string{{"a", "b"}, {"c", "d"}, {"e", "f"}} {
		if _, err := l.AppendBlocks(ctx, "tail", []log.Block{{Partition: 0, Data: encode(t, 1, vs...)}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		from    int64
		queries int64
		first   string
	}{{0, 1, "a"}, {2, 1, "c"}, {4, 1, "e"}, {3, 2, "d"}, {5, 2, "f"}} {
		counter.Reset()
		res, err := l.Poll(ctx, "tail", 0, tc.from, log.PollOptions{MaxRecords: 10})
		if err != nil {
			t.Fatal(err)
		}
		// Answered: an attempt the SDK retried (a loaded emulator) is not the poll's.
		if n := counter.Answered("DynamoDB.Query"); n != tc.queries {
			t.Errorf("poll from %d: %d Query requests answered (%d sent), want %d", tc.from, n, counter.Requests("DynamoDB.Query"), tc.queries)
		}
		if len(res.Records) != int(6-tc.from) || string(res.Records[0].Value) != tc.first || res.NextOffset != 6 {
			t.Errorf("poll from %d: %d records from %q, next %d; want %d from %q, next 6", tc.from, len(res.Records), firstValue(res), res.NextOffset, 6-tc.from, tc.first)
		}
	}
}

func firstValue(r log.PollResult) string {
	if len(r.Records) == 0 {
		return ""
	}
	return string(r.Records[0].Value)
}
