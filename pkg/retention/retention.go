// Package retention expires a topic's old records (DESIGN.md §4 Retention): it advances
// each partition's log start offset past index entries older than the topic's
// retention, deletes those entries and the expired segment objects, and keeps the newest
// entry of every partition alive, since it defines the high watermark. The local
// runtime runs it on a timer; the serverless runtime wraps the same Job in a scheduled
// function.
package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/store"
)

// Meta is what retention needs of the metadata tables.
type Meta interface {
	store.TopicStore
	store.PartitionStore
	LastIndexEntry(ctx context.Context, topic string, partition int32) (store.IndexEntry, bool, error)
	IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error)
	SetEntryExpiry(ctx context.Context, topic string, partition int32, baseOffset int64, expiresAt time.Time) error
	DeleteIndexEntry(ctx context.Context, topic string, partition int32, baseOffset int64) error
}

// Objects is what retention needs of the object store.
type Objects interface {
	List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error
	Delete(ctx context.Context, key string) error
}

// Job is one retention pass's configuration.
type Job struct {
	Meta    Meta
	Objects Objects
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// Grace is added to retention for index entries' TTL (default 24h); the newest
	// entry's TTL is extended when less than half of it is left.
	Grace time.Duration
	// ObjectMargin delays deleting a segment object past its entries' expiry (default
	// 5m), so an entry appended by a host whose clock lagged is never left without data.
	ObjectMargin time.Duration
}

// Stats counts what one pass did.
type Stats struct {
	RecordsExpired  int64
	EntriesDeleted  int
	ObjectsDeleted  int
	TTLsExtended    int
	PartitionsMoved int
}

const pageSize = 100

// Run makes one pass over every topic. It continues past a failing topic and returns
// the errors joined; a topic whose log starts could not all be advanced keeps its objects.
func (j *Job) Run(ctx context.Context) (Stats, error) {
	now := time.Now
	if j.Clock != nil {
		now = j.Clock
	}
	grace := j.Grace
	if grace <= 0 {
		grace = 24 * time.Hour
	}
	var st Stats
	names, err := j.Meta.ListTopics(ctx)
	if err != nil {
		return st, fmt.Errorf("retention: list topics: %w", err)
	}
	var errs []error
	for _, name := range names {
		t, err := j.Meta.GetTopic(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: topic %s: %w", name, err))
			continue
		}
		at := now()
		cutoff := at.Add(-t.Retention)
		ok := true
		for p := int32(0); p < t.Partitions; p++ {
			if err := j.partition(ctx, t, p, at, cutoff, grace, &st); err != nil {
				errs = append(errs, fmt.Errorf("retention: %s/%d: %w", name, p, err))
				ok = false
			}
		}
		if ok {
			margin := j.ObjectMargin
			if margin <= 0 {
				margin = 5 * time.Minute
			}
			if err := j.objects(ctx, t, cutoff.Add(-margin), &st); err != nil {
				errs = append(errs, fmt.Errorf("retention: objects of %s: %w", name, err))
			}
		}
	}
	return st, errors.Join(errs...)
}

// partition advances one partition's log start past its expired entries and deletes
// those entries, never the newest one.
func (j *Job) partition(ctx context.Context, t store.Topic, p int32, now, cutoff time.Time, grace time.Duration, st *Stats) error {
	last, ok, err := j.Meta.LastIndexEntry(ctx, t.Name, p)
	if err != nil || !ok {
		return err
	}
	start, err := j.Meta.LogStart(ctx, t.Name, p)
	if err != nil {
		return err
	}
	newStart := start
	var expired []store.IndexEntry
	for from := start; from < last.End(); {
		page, err := j.Meta.IndexEntries(ctx, t.Name, p, from, pageSize)
		if err != nil {
			return err
		}
		done := len(page) == 0
		for _, e := range page {
			if e.AppendedAt.After(cutoff) {
				done = true
				break
			}
			expired = append(expired, e)
			newStart = max(newStart, e.End())
			from = e.End()
		}
		if done || len(page) < pageSize {
			break
		}
	}
	if newStart > start {
		if err := j.Meta.AdvanceLogStart(ctx, t.Name, p, newStart); err != nil {
			return err
		}
		st.RecordsExpired += newStart - start
		st.PartitionsMoved++
	}
	for _, e := range expired {
		if e.BaseOffset == last.BaseOffset {
			continue // the newest entry is the high watermark: it stays.
		}
		if err := j.Meta.DeleteIndexEntry(ctx, t.Name, p, e.BaseOffset); err != nil {
			return err
		}
		st.EntriesDeleted++
	}
	if !last.ExpiresAt.IsZero() && last.ExpiresAt.Sub(now) < grace/2 {
		if err := j.Meta.SetEntryExpiry(ctx, t.Name, p, last.BaseOffset, now.Add(t.Retention+grace)); err != nil {
			return err
		}
		st.TTLsExtended++
	}
	return nil
}

// objects deletes the topic's segment objects written before cutoff: their entries were
// all appended at the object's ULID time, so they are below every log start by now.
func (j *Job) objects(ctx context.Context, t store.Topic, cutoff time.Time, st *Stats) error {
	prefix := "v1/" + t.Name + "/"
	var doomed []string
	err := j.Objects.List(ctx, prefix, func(o store.ObjectInfo) error {
		id, err := ulid.ParseStrict(strings.TrimPrefix(o.Key, prefix))
		if err != nil {
			return nil // not a segment object: leave it alone.
		}
		if ulid.Time(id.Time()).Before(cutoff) {
			doomed = append(doomed, o.Key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range doomed {
		if err := j.Objects.Delete(ctx, k); err != nil {
			return err
		}
		st.ObjectsDeleted++
	}
	return nil
}
