package log_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestPollWholeCommits: with WholeCommits a poll never cuts a commit — MaxRecords and
// MaxBytes decide only whether another commit is taken — and without it the poll cuts
// where they say. Three commits of 5 records at offsets 0, 5 and 10.
func TestPollWholeCommits(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Materialise(t, s, l)
		if _, err := l.CreateTopic(ctx, "whole", 1, 0); err != nil {
			t.Fatal(err)
		}
		p := int32(0)
		for c := range 3 {
			recs := make([]log.Record, 5)
			for i := range recs {
				recs[i] = log.Record{Value: fmt.Appendf(nil, "c%d-%d", c, i), Partition: &p}
			}
			if _, err := l.Append(ctx, "whole", recs, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			name     string
			from     int64
			opt      log.PollOptions
			wantNext int64
		}{
			{"cut by records", 0, log.PollOptions{MaxRecords: 3}, 3},
			{"whole: a commit past max records", 0, log.PollOptions{MaxRecords: 3, WholeCommits: true}, 5},
			{"whole: the rest of the commit holding the offset", 3, log.PollOptions{MaxRecords: 1, WholeCommits: true}, 5},
			{"whole: another commit while under max records", 0, log.PollOptions{MaxRecords: 6, WholeCommits: true}, 10},
			{"whole: stops at max records on a boundary", 0, log.PollOptions{MaxRecords: 5, WholeCommits: true}, 5},
			{"cut by bytes", 0, log.PollOptions{MaxBytes: 1}, 1},
			{"whole: bytes", 0, log.PollOptions{MaxBytes: 1, WholeCommits: true}, 5},
			{"whole: everything", 0, log.PollOptions{MaxRecords: 100, WholeCommits: true}, 15},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := l.Poll(ctx, "whole", 0, tc.from, tc.opt)
				if err != nil {
					t.Fatal(err)
				}
				if res.NextOffset != tc.wantNext || int64(len(res.Records)) != tc.wantNext-tc.from {
					t.Fatalf("next %d with %d records, want next %d", res.NextOffset, len(res.Records), tc.wantNext)
				}
				for i, r := range res.Records {
					if r.Offset != tc.from+int64(i) || string(r.Value) != fmt.Sprintf("c%d-%d", r.Offset/5, r.Offset%5) {
						t.Fatalf("record %d is offset %d %q", i, r.Offset, r.Value)
					}
				}
			})
		}
	})
}
