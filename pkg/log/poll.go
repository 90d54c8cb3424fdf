package log

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Poll defaults and bounds (docs/API.md).
const (
	DefaultPollRecords = 500
	DefaultPollBytes   = 1 << 20
	MaxPollWait        = wire.MaxPollWait
	// entriesPerPage is how many index entries one index read asks for.
	entriesPerPage = 32
)

// PollOptions bound a poll. Zero values take the defaults.
type PollOptions struct {
	MaxRecords int
	MaxBytes   int
	// Wait, when the offset is the high watermark, is how long to wait for a record.
	Wait time.Duration
}

// PollResult is a run of consecutive records and the partition's bounds.
type PollResult struct {
	Records        []segment.Record
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// Poll returns records from offset on, at most MaxRecords and about MaxBytes (the first
// record is returned even when it alone is larger, so a reader always progresses). An
// offset outside [log start, high watermark] is an *OffsetOutOfRangeError. Its cost is
// proportional to the records returned, not to the length of the log.
func (l *Log) Poll(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (PollResult, error) {
	if opt.MaxRecords == 0 {
		opt.MaxRecords = DefaultPollRecords
	}
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultPollBytes
	}
	switch {
	case offset < 0:
		return PollResult{}, invalidf("offset must not be negative, got %d", offset)
	case opt.MaxRecords < 1 || opt.MaxRecords > MaxPollRecords:
		return PollResult{}, invalidf("max_records must be 1–%d, got %d", MaxPollRecords, opt.MaxRecords)
	case opt.MaxBytes < 1:
		return PollResult{}, invalidf("max_bytes must be positive, got %d", opt.MaxBytes)
	case opt.Wait < 0 || opt.Wait > MaxPollWait:
		return PollResult{}, invalidf("wait must be 0–%s, got %s", MaxPollWait, opt.Wait)
	}
	if err := l.checkPartition(ctx, topic, partition); err != nil {
		return PollResult{}, err
	}
	var deadline <-chan time.Time
	if opt.Wait > 0 {
		t := time.NewTimer(opt.Wait)
		defer t.Stop()
		deadline = t.C
	}
	var gapSince time.Time
	for {
		// Subscribe before reading, so an append between the read and the wait wakes us.
		woken := l.notifier.wait(tpKey{topic, partition})
		res, err := l.pollOnce(ctx, topic, partition, offset, opt)
		if errors.Is(err, errNotMaterialized) {
			// Committed but not yet in the index: the appender's entry write or the
			// materialiser is moments away. Wait for it, never skip it.
			if gapSince.IsZero() {
				gapSince = time.Now()
			}
			if time.Since(gapSince) >= l.gapWait {
				return res, nil
			}
			if err := ctxtime.Sleep(ctx, 20*time.Millisecond); err != nil {
				return PollResult{}, err
			}
			continue
		}
		if err != nil || len(res.Records) > 0 || res.NextOffset > offset || deadline == nil {
			return res, err
		}
		recheck := time.NewTimer(l.recheck)
		select {
		case <-ctx.Done():
			recheck.Stop()
			return PollResult{}, ctx.Err()
		case <-deadline:
			recheck.Stop()
			return res, nil
		case <-woken:
		case <-recheck.C:
		}
		recheck.Stop()
	}
}

// errNotMaterialized: the offset asked for lies below the high watermark but its index
// entry is not written yet. pollOnce returns it with the partition's bounds in the result.
var errNotMaterialized = errors.New("log: commit not yet materialised")

func (l *Log) pollOnce(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (PollResult, error) {
	start, hw, err := l.bounds(ctx, topic, partition)
	if err != nil {
		return PollResult{}, err
	}
	res := PollResult{NextOffset: offset, HighWatermark: hw, LogStartOffset: start}
	if offset < start || offset > hw {
		return PollResult{}, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: start, HighWatermark: hw}
	}
	if offset == hw {
		return res, nil
	}
	entries, err := l.entriesFor(ctx, topic, partition, offset, hw, opt)
	if err != nil {
		return PollResult{}, err
	}
	if len(entries) == 0 {
		// No entry holds offset. Retention may have moved the log start past it since
		// we read the bounds (then the answer is out of range); otherwise its commit is
		// not materialised yet.
		if s, h, berr := l.bounds(ctx, topic, partition); berr == nil && offset < s {
			return PollResult{}, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: s, HighWatermark: h}
		}
		return res, errNotMaterialized
	}
	blocks, err := l.readBlocks(ctx, entries)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Retention may have deleted the objects since we read the log start.
			if s, h, berr := l.bounds(ctx, topic, partition); berr == nil && offset < s {
				return PollResult{}, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: s, HighWatermark: h}
			}
			return PollResult{}, fmt.Errorf("%w: segment object of %s/%d missing below the log start: %w", ErrCorrupt, topic, partition, err)
		}
		return PollResult{}, err
	}
	bytes := 0
	for i, recs := range blocks {
		if entries[i].Duplicate {
			// An idempotent append's second commit: its offsets exist, its records are
			// another attempt's, which readers get at the canonical offsets.
			if len(res.Records) == opt.MaxRecords {
				return res, nil
			}
			res.NextOffset = entries[i].End()
			continue
		}
		for _, r := range recs {
			if r.Offset < offset {
				continue
			}
			size := segment.RecordSize(r)
			if len(res.Records) == opt.MaxRecords || (len(res.Records) > 0 && bytes+size > opt.MaxBytes) {
				return res, nil
			}
			res.Records = append(res.Records, r)
			res.NextOffset = r.Offset + 1
			bytes += size
		}
	}
	return res, nil
}

// entriesFor reads the index entries covering offset onwards, enough for the budget. It
// stops at the first gap: offsets whose commit is not yet materialised are never skipped.
func (l *Log) entriesFor(ctx context.Context, topic string, partition int32, offset, hw int64, opt PollOptions) ([]store.IndexEntry, error) {
	var out []store.IndexEntry
	next := offset
	var records, bytes int64
	for next < hw && records < int64(opt.MaxRecords) && bytes < int64(opt.MaxBytes) {
		page, err := l.meta.IndexEntries(ctx, topic, partition, next, entriesPerPage)
		if err != nil {
			return nil, storeErr(err)
		}
		for _, e := range page {
			if e.BaseOffset >= hw || records >= int64(opt.MaxRecords) || bytes >= int64(opt.MaxBytes) {
				return out, nil
			}
			if e.End() <= next {
				continue // below offset: an entry the page starts with that ends before it
			}
			if e.BaseOffset > next || e.Count <= 0 {
				return out, nil // a gap: the commit at next is not materialised yet
			}
			out = append(out, e)
			if !e.Duplicate {
				records += e.End() - next
				bytes += e.ByteLength
			}
			next = e.End()
		}
		if len(page) < entriesPerPage {
			break
		}
	}
	return out, nil
}

// readBlocks fetches and decodes the entries' blocks with ranged reads in parallel,
// checking each block's record count against its entry.
func (l *Log) readBlocks(ctx context.Context, entries []store.IndexEntry) ([][]segment.Record, error) {
	out := make([][]segment.Record, len(entries))
	errs := make([]error, len(entries))
	sem := make(chan struct{}, l.pollPar)
	var wg sync.WaitGroup
	for i, e := range entries {
		if e.Duplicate {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := l.objects.GetRange(ctx, e.ObjectKey, e.ByteOffset, e.ByteLength)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					errs[i] = err
				} else {
					errs[i] = storeErr(err)
				}
				return
			}
			recs, err := segment.DecodeBlock(b, e.BaseOffset)
			if err != nil {
				errs[i] = fmt.Errorf("%w: %s/%d@%d in %s: %w", ErrCorrupt, e.Topic, e.Partition, e.BaseOffset, e.ObjectKey, err)
				return
			}
			if int64(len(recs)) != e.Count {
				errs[i] = fmt.Errorf("%w: %s/%d@%d: block holds %d records, index says %d", ErrCorrupt, e.Topic, e.Partition, e.BaseOffset, len(recs), e.Count)
				return
			}
			out[i] = recs
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// AppendedAt returns the append time of the record at offset (from its index entry). An
// offset whose commit is not materialised yet takes the time of the next entry (a
// slightly later append). An offset with no entry at or after it is out of range.
func (l *Log) AppendedAt(ctx context.Context, topic string, partition int32, offset int64) (time.Time, error) {
	es, err := l.meta.IndexEntries(ctx, topic, partition, offset, 2)
	if err != nil {
		return time.Time{}, storeErr(err)
	}
	for _, e := range es {
		if e.End() > offset {
			return e.AppendedAt, nil
		}
	}
	return time.Time{}, &OffsetOutOfRangeError{Offset: offset}
}

// OffsetForTime returns the first offset appended at or after t, or the high watermark
// when there is none. It reads the partition's index entries from the log start.
func (l *Log) OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (int64, error) {
	start, hw, err := l.Bounds(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	next := start
	for next < hw {
		page, err := l.meta.IndexEntries(ctx, topic, partition, next, entriesPerPage)
		if err != nil {
			return 0, storeErr(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Duplicate {
				next = e.End()
				continue
			}
			if !e.AppendedAt.Before(t) {
				return max(e.BaseOffset, start), nil
			}
			next = e.End()
		}
	}
	return hw, nil
}
