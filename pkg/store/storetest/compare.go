package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// t0 is the suite's fixed reference time; every time the suite writes is t0 plus a
// whole number of milliseconds, the precision stores keep.
var t0 = time.UnixMilli(1_732_870_000_123)

// at returns t0 plus ms milliseconds.
func at(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// msTime normalises t to UTC milliseconds so values read back from any backend compare
// with ==; the zero time stays zero.
func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func normEntry(e store.IndexEntry) store.IndexEntry {
	e.MaxTimestamp, e.AppendedAt, e.ExpiresAt = msTime(e.MaxTimestamp), msTime(e.AppendedAt), msTime(e.ExpiresAt)
	return e
}

func normEntries(es []store.IndexEntry) []store.IndexEntry { return normAll(es, normEntry) }

// normAll returns xs with norm applied to each, in a new slice.
func normAll[T any](xs []T, norm func(T) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = norm(x)
	}
	return out
}

func normRecord(r store.IdempotencyRecord) store.IdempotencyRecord {
	r.ExpiresAt = msTime(r.ExpiresAt)
	return r
}

func normTopic(tp store.Topic) store.Topic {
	tp.CreatedAt = msTime(tp.CreatedAt)
	return tp
}

func normAssignment(a store.Assignment) store.Assignment {
	a.ExpiresAt = msTime(a.ExpiresAt)
	return a
}

func normAssignments(as []store.Assignment) []store.Assignment { return normAll(as, normAssignment) }

func normCommit(c store.CommitRow) store.CommitRow {
	c.CommittedAt = msTime(c.CommittedAt)
	if len(c.Completed) == 0 {
		c.Completed = nil
	}
	return c
}

// sameCommit compares commit rows as stored (times to the millisecond, no ranges and
// an empty list alike).
func sameCommit(a, b store.CommitRow) bool {
	return reflect.DeepEqual(normCommit(a), normCommit(b))
}

// sameCommits is sameCommit over lists, in order.
func sameCommits(a, b []store.CommitRow) bool {
	return slices.EqualFunc(a, b, sameCommit)
}

func normCommits(cs []store.CommitRow) []store.CommitRow { return normAll(cs, normCommit) }

func normGroup(g store.GroupConfig) store.GroupConfig {
	g.CreatedAt = msTime(g.CreatedAt)
	return g
}

func normMembers(ms []store.Member) []store.Member {
	return normAll(ms, func(m store.Member) store.Member {
		m.ExpiresAt = msTime(m.ExpiresAt)
		return m
	})
}

// wantEntries fails t unless got equals want, entry by entry.
func wantEntries(t *testing.T, what string, got, want []store.IndexEntry) {
	t.Helper()
	if g, w := normEntries(got), normEntries(want); !slices.Equal(g, w) {
		t.Fatalf("%s:\n got  %s\n want %s", what, fmtBases(g), fmtBases(w))
	}
}

// fmtBases prints entries compactly: every field when there are few, else the spans of
// the first and last ones.
func fmtBases(es []store.IndexEntry) string {
	if len(es) <= 3 {
		return fmt.Sprintf("%+v", es)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries", len(es))
	for i, e := range es {
		switch {
		case len(es) > 16 && i == 12:
			b.WriteString(" ...")
		case len(es) > 16 && i > 12 && i < len(es)-4:
		default:
			fmt.Fprintf(&b, " [%d,%d)", e.BaseOffset, e.End())
		}
	}
	return b.String()
}

// wantErrIs fails t unless errors.Is(err, target).
func wantErrIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// must fails t on a non-nil err.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// retryUnavailable runs op until it returns something other than store.ErrUnavailable,
// a bounded number of times: under contention a backend may ask callers to retry.
func retryUnavailable(op func() error) error {
	var err error
	for range 50 {
		if err = op(); !errors.Is(err, store.ErrUnavailable) {
			return err
		}
	}
	return err
}

// race runs f(0..n-1) in n goroutines released together and waits for all of them.
func race(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}
