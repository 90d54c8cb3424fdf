package log_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
)

// TestBinaryPollCutsSharedCommit (issue 17 item 5): unkeyed appends under group commit
// share one commit, whose entry holds every member's block back to back (up to the
// group commit budget, 6 MiB). A binary poll used to answer whole entries whatever
// max_bytes said, so behind API Gateway and Lambda the base64 answer outgrew Lambda's
// 6 MB response and the partition became unreadable. Now a binary poll cuts the stored
// range at block boundaries: each answer holds at most max_bytes of blocks (or the one
// block holding the offset), and polls from next_offset read every record once.
func TestBinaryPollCutsSharedCommit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, GroupCommitWindow: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "big", 1)
		const n, size = 6, 64 << 10
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = l.Append(ctx, "big", []log.Record{{Value: bytes.Repeat([]byte{byte('a' + i)}, size)}}, log.AppendOptions{})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
		id, err := l.TopicID(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		es, err := s.Meta.IndexEntries(ctx, id, 0, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		shared := int64(0)
		for _, e := range es {
			shared = max(shared, e.Count)
		}
		if shared < 3 {
			t.Fatalf("entries %d, largest shared commit %d records: the appends did not share a commit", len(es), shared)
		}
		const maxBytes = 2*size + 1000 // two blocks fit, three do not
		seen := map[int64]bool{}
		for off := int64(0); off < n; {
			res, err := l.PollRanges(ctx, "big", 0, off, log.PollOptions{MaxBytes: maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, r := range res.Ranges {
				total += len(r.Data)
				recs, err := segment.AppendBlocksRecords(nil, r.Data, r.BaseOffset)
				if err != nil || int64(len(recs)) != r.Count {
					t.Fatalf("range @%d: %d records, %v; want %d", r.BaseOffset, len(recs), err, r.Count)
				}
				for _, rec := range recs {
					if rec.Offset >= off {
						seen[rec.Offset] = true
					}
				}
			}
			if total > maxBytes {
				t.Fatalf("binary poll @%d answered %d bytes of blocks, max_bytes %d", off, total, maxBytes)
			}
			if res.NextOffset <= off {
				t.Fatalf("binary poll @%d made no progress (next %d)", off, res.NextOffset)
			}
			off = res.NextOffset
		}
		if len(seen) != n {
			t.Fatalf("read %d distinct records, want %d", len(seen), n)
		}
	})
}

// TestBinaryPollOneLargeBlock: a block larger than max_bytes is answered alone (a block
// is never cut, and one block is at most one append).
func TestBinaryPollOneLargeBlock(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "one", 1)
		for i := range 2 {
			if _, err := l.Append(ctx, "one", []log.Record{{Value: bytes.Repeat([]byte("x"), 10_000)}, {Value: fmt.Appendf(nil, "%d", i)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := l.PollRanges(ctx, "one", 0, 1, log.PollOptions{MaxBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Ranges) != 1 || res.Ranges[0].BaseOffset != 0 || res.Ranges[0].Count != 2 || res.NextOffset != 2 {
			t.Fatalf("poll @1 with max_bytes 100: %d ranges, next %d; want the one block [0, 2)", len(res.Ranges), res.NextOffset)
		}
	})
}
