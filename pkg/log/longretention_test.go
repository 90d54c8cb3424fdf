package log_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestRetentionAtTheMaximumKeepsItsIndex: a topic kept "for ever" — the largest
// retention the API takes (about 292 years, a signed 64-bit count of nanoseconds), with
// the largest pin on top — is created, and its index entries never expire (no maximum retention: no TTL) or
// expire far in the future.
// Before, retention + pin + the entries' day of grace overflowed: the create was refused
// (retention plus pin) and, with no pin, an entry's TTL wrapped into the past, so
// DynamoDB's TTL would delete the index of a topic meant to be kept.
func TestRetentionAtTheMaximumKeepsItsIndex(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		longest := time.Duration(math.MaxInt64).Truncate(time.Millisecond)
		for _, tc := range []struct {
			name string
			pin  time.Duration
		}{{"forever", 0}, {"forever-pinned", longest}} {
			if _, err := l.CreateTopicWith(ctx, tc.name, log.TopicSpec{Partitions: 1, Retention: longest, RetentionPin: tc.pin}); err != nil {
				t.Fatalf("%s: create with retention %s and pin %s: %v", tc.name, longest, tc.pin, err)
			}
			if _, err := l.AppendBlocks(ctx, tc.name, []log.Block{{Partition: 0, Data: encode(t, 1, "kept")}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			top, err := l.Topic(ctx, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			es, err := s.Meta.IndexEntries(ctx, top.ID(), 0, 0, 1)
			if err != nil || len(es) != 1 {
				t.Fatalf("%s: entries %v, %v", tc.name, es, err)
			}
			if min := time.Now().Add(100 * 365 * 24 * time.Hour); !es[0].ExpiresAt.IsZero() && es[0].ExpiresAt.Before(min) {
				t.Errorf("%s: the entry expires at %s, want never or after %s (the topic keeps records ~292 years)", tc.name, es[0].ExpiresAt, min)
			}
		}
	})
}
