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
	// WholeCommits ends the answer at a commit's end: MaxRecords and MaxBytes decide
	// whether another commit is taken, never cut one, so a reader that polls again from
	// NextOffset does not read the same block from its object twice (a commit larger
	// than MaxRecords would otherwise be fetched once per poll it is cut into).
	WholeCommits bool
	// EventualReads reads the partition's bounds and its index entries eventually
	// consistently (half the read's price on DynamoDB): the answer's high watermark may
	// lag the newest commits for a moment, so a poll at the tail may find nothing new
	// yet. Nothing a replica lacks is skipped or answered out of range: an offset past
	// the bounds read is checked with a strongly consistent read first, entries that stop
	// short of the high watermark read are read again strongly, and an object a stale
	// entry names that is gone sends the poll to strongly consistent reads. For readers
	// that poll again anyway (the consumer's run loop).
	EventualReads bool
}

// PollResult is a run of consecutive records and the partition's bounds.
type PollResult struct {
	Records        []segment.Record
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// Poll returns records from offset on, at most MaxRecords and about MaxBytes (the first
// record is returned even when it alone is larger, so a reader always progresses; with
// WholeCommits the last commit taken is returned whole, past both). An
// offset outside [log start, high watermark] is an *OffsetOutOfRangeError. Its cost is
// proportional to the records returned, not to the length of the log.
func (l *Log) Poll(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (PollResult, error) {
	var res PollResult
	err := l.poll(ctx, topic, partition, offset, &opt, func(id string) (bool, error) {
		var err error
		res, err = l.pollOnce(ctx, id, partition, offset, opt)
		return len(res.Records) > 0 || res.NextOffset > offset, err
	})
	if err != nil {
		return PollResult{}, err
	}
	return res, nil
}

// Range is one commit's records as stored: one block or several back to back, the
// first record at BaseOffset.
type Range struct {
	BaseOffset int64
	Count      int64
	Data       []byte
}

// RangesResult is a run of stored commits and the partition's bounds.
type RangesResult struct {
	Ranges         []Range
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// PollRanges is Poll answering the stored bytes of commits instead of decoded records
// (the binary wire format), cut at block boundaries to MaxBytes (at least the one block
// holding offset; see cutRanges): the first range may start below offset, inside its
// block (the reader skips those records), and the ranges may hold more than MaxRecords
// records, since blocks are not cut. Offsets between ranges may be missing: an idempotent append's
// duplicate commit, which readers skip. Blocks are checked only for their record counts;
// the reader verifies their CRCs as it decodes them.
func (l *Log) PollRanges(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (RangesResult, error) {
	var res RangesResult
	err := l.poll(ctx, topic, partition, offset, &opt, func(id string) (bool, error) {
		var err error
		res, err = l.rangesOnce(ctx, id, partition, offset, opt)
		return len(res.Ranges) > 0 || res.NextOffset > offset, err
	})
	if err != nil {
		return RangesResult{}, err
	}
	return res, nil
}

// poll validates a poll and runs once until it finds something (it returns true), the
// wait is over or a commit stays unmaterialised past the gap wait (then the last result
// of once stands, with no error). once reads the topic's current incarnation, whose
// TopicID it is given.
func (l *Log) poll(ctx context.Context, topic string, partition int32, offset int64, opt *PollOptions, once func(id string) (bool, error)) error {
	if opt.MaxRecords == 0 {
		opt.MaxRecords = DefaultPollRecords
	}
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultPollBytes
	}
	switch {
	case offset < 0:
		return invalidf("offset must not be negative, got %d", offset)
	case opt.MaxRecords < 1 || opt.MaxRecords > MaxPollRecords:
		return invalidf("max_records must be 1–%d, got %d", MaxPollRecords, opt.MaxRecords)
	case opt.MaxBytes < 1:
		return invalidf("max_bytes must be positive, got %d", opt.MaxBytes)
	case opt.Wait < 0 || opt.Wait > MaxPollWait:
		return invalidf("wait must be 0–%s, got %s", MaxPollWait, opt.Wait)
	}
	t, err := l.checkPartition(ctx, topic, partition)
	if err != nil {
		return err
	}
	id := t.ID()
	var deadline <-chan time.Time
	if opt.Wait > 0 {
		t := time.NewTimer(opt.Wait)
		defer t.Stop()
		deadline = t.C
	}
	var gapSince time.Time
	for {
		// Subscribe before reading, so an append between the read and the wait wakes us.
		woken := l.notifier.wait(tpKey{id, partition})
		found, err := once(id)
		if errors.Is(err, errNotMaterialized) {
			// Committed but not yet in the index: the appender's entry write or the
			// materialiser is moments away. Wait for it, never skip it.
			if gapSince.IsZero() {
				gapSince = time.Now()
			}
			if time.Since(gapSince) >= l.gapWait {
				return nil
			}
			if err := ctxtime.Sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err != nil || found || deadline == nil {
			return err
		}
		recheck := time.NewTimer(l.recheck)
		select {
		case <-ctx.Done():
			recheck.Stop()
			return ctx.Err()
		case <-deadline:
			recheck.Stop()
			return nil
		case <-woken:
		case <-recheck.C:
		}
		recheck.Stop()
	}
}

// errNotMaterialized: the offset asked for lies below the high watermark but its index
// entry is not written yet. pollOnce returns it with the partition's bounds in the result.
var errNotMaterialized = errors.New("log: commit not yet materialised")

// span is what a poll found: the entries from offset on (none at the high watermark)
// and the partition's bounds.
type span struct {
	entries   []store.IndexEntry
	start, hw int64
}

// locate reads the bounds and the index entries a poll at offset answers from. With no
// entry below the high watermark it returns errNotMaterialized, with the span's bounds.
func (l *Log) locate(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (span, error) {
	start, hw, err := l.pollBounds(ctx, topic, partition, offset, opt.EventualReads)
	if err != nil {
		return span{}, err
	}
	sp := span{start: start, hw: hw}
	if offset < start || offset > hw {
		return span{}, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: start, HighWatermark: hw}
	}
	if offset == hw {
		return sp, nil
	}
	if sp.entries, err = l.entriesFor(ctx, topic, partition, offset, hw, opt); err != nil {
		return span{}, err
	}
	if len(sp.entries) == 0 {
		// No entry holds offset. Retention may have moved the log start past it since
		// we read the bounds (then the answer is out of range); otherwise its commit is
		// not materialised yet.
		if err := l.outOfRangeNow(ctx, topic, partition, offset); err != nil {
			return span{}, err
		}
		return sp, errNotMaterialized
	}
	return sp, nil
}

// pollBounds reads the bounds a poll at offset answers from: eventually consistently
// when eventual is set, then again strongly consistently if offset lies past the high
// watermark read (a lagging replica's), so a poll is never out of range on a stale read.
func (l *Log) pollBounds(ctx context.Context, topic string, partition int32, offset int64, eventual bool) (int64, int64, error) {
	if eventual {
		st, err := l.meta.SequencerEventual(ctx, topic, partition)
		if err != nil {
			return 0, 0, storeErr(err)
		}
		if offset <= st.NextOffset {
			return st.LogStart, st.NextOffset, nil
		}
	}
	return l.bounds(ctx, topic, partition)
}

// outOfRangeNow is an *OffsetOutOfRangeError if offset is below the log start now.
func (l *Log) outOfRangeNow(ctx context.Context, topic string, partition int32, offset int64) error {
	if s, h, err := l.bounds(ctx, topic, partition); err == nil && offset < s {
		return &OffsetOutOfRangeError{Offset: offset, LogStartOffset: s, HighWatermark: h}
	}
	return nil
}

// readErr maps a failed read of a span's objects: an object retention deleted since the
// bounds were read makes the offset out of range; a missing object above the log start
// is corruption.
func (l *Log) readErr(ctx context.Context, topic string, partition int32, offset int64, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	start, h, berr := l.bounds(ctx, topic, partition)
	if berr != nil {
		return fmt.Errorf("log: a segment object of %s/%d is missing and the partition's bounds could not be read: %w", topic, partition, berr)
	}
	if offset < start {
		return &OffsetOutOfRangeError{Offset: offset, LogStartOffset: start, HighWatermark: h}
	}
	return fmt.Errorf("%w: the segment object holding %s/%d offset %d is missing, above the log start %d "+
		"(deleted outside the retention pass, e.g. by a bucket lifecycle rule shorter than the topic's retention): %w",
		ErrCorrupt, topic, partition, offset, start, err)
}

func (l *Log) pollOnce(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (PollResult, error) {
	sp, err := l.locate(ctx, topic, partition, offset, opt)
	res := PollResult{NextOffset: offset, HighWatermark: sp.hw, LogStartOffset: sp.start}
	if err != nil || len(sp.entries) == 0 {
		return res, err
	}
	blocks, err := l.readBlocks(ctx, sp.entries)
	for try := 0; err != nil && try < relocateTries; try++ {
		var moved bool
		if sp, moved = l.relocated(ctx, topic, partition, offset, opt, sp, err); !moved {
			break
		}
		blocks, err = l.readBlocks(ctx, sp.entries)
	}
	if err != nil {
		return PollResult{}, l.readErr(ctx, topic, partition, offset, err)
	}
	entries := sp.entries
	bytes := 0
	full := func() bool {
		return len(res.Records) >= opt.MaxRecords || (len(res.Records) > 0 && bytes >= opt.MaxBytes)
	}
	for i, recs := range blocks {
		if opt.WholeCommits && full() {
			return res, nil
		}
		if entries[i].Duplicate {
			// An idempotent append's second commit: its offsets exist, its records are
			// another attempt's, which readers get at the canonical offsets.
			if len(res.Records) == opt.MaxRecords {
				return res, nil
			}
			res.NextOffset = entries[i].End()
			continue
		}
		skip, err := entries[i].SkipRanges()
		if err != nil {
			return PollResult{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		for _, r := range recs {
			if r.Offset < offset {
				continue
			}
			if skipped(skip, r.Offset-entries[i].BaseOffset) {
				// Another attempt of an idempotent request owns these offsets' records.
				if !opt.WholeCommits && len(res.Records) == opt.MaxRecords {
					return res, nil
				}
				res.NextOffset = r.Offset + 1
				continue
			}
			size := segment.RecordSize(r)
			if !opt.WholeCommits && (len(res.Records) == opt.MaxRecords || (len(res.Records) > 0 && bytes+size > opt.MaxBytes)) {
				return res, nil
			}
			res.Records = append(res.Records, r)
			res.NextOffset = r.Offset + 1
			bytes += size
		}
	}
	return res, nil
}

func (l *Log) rangesOnce(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (RangesResult, error) {
	sp, err := l.locate(ctx, topic, partition, offset, opt)
	res := RangesResult{NextOffset: offset, HighWatermark: sp.hw, LogStartOffset: sp.start}
	if err != nil || len(sp.entries) == 0 {
		return res, err
	}
	count := func(e store.IndexEntry, b []byte) (any, error) {
		n, err := segment.CountBlocks(b)
		if err == nil && int64(n) != e.Count {
			err = fmt.Errorf("blocks hold %d records, index says %d", n, e.Count)
		}
		return b, err
	}
	data, err := l.fetchRanges(ctx, sp.entries, count)
	for try := 0; err != nil && try < relocateTries; try++ {
		var moved bool
		if sp, moved = l.relocated(ctx, topic, partition, offset, opt, sp, err); !moved {
			break
		}
		data, err = l.fetchRanges(ctx, sp.entries, count)
	}
	if err != nil {
		return RangesResult{}, l.readErr(ctx, topic, partition, offset, err)
	}
	stored := make([][]byte, len(data))
	for i, d := range data {
		stored[i], _ = d.([]byte) // nil for a duplicate entry, which is not read
	}
	if res.Ranges, res.NextOffset, err = cutRanges(sp.entries, stored, offset, int64(opt.MaxBytes)); err != nil {
		return RangesResult{}, fmt.Errorf("%w: %s/%d: %v", ErrCorrupt, topic, partition, err)
	}
	return res, nil
}

// relocateTries bounds how often one poll reads the index again after finding an object
// gone: each time, a compaction must have swapped the entries it read in between.
const relocateTries = 3

// relocated reads the entries of a poll again after its read of sp's objects failed
// with err: a missing object whose entries a compaction has since swapped for others
// (and whose replaced objects it deleted once its reader margin passed) is read from the
// new layout. moved is false — the caller reports err — unless err is a missing object
// and the entries now differ.
func (l *Log) relocated(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions, sp span, err error) (span, bool) {
	if !errors.Is(err, store.ErrNotFound) {
		return sp, false
	}
	opt.EventualReads = false // a replica may still hold the entries that named it
	again, lerr := l.locate(ctx, topic, partition, offset, opt)
	if lerr != nil || len(again.entries) == 0 {
		return sp, false
	}
	if len(again.entries) == len(sp.entries) {
		same := true
		for i := range again.entries {
			same = same && store.SameBlock(again.entries[i], sp.entries[i])
		}
		if same {
			return sp, false
		}
	}
	return again, true
}

// cutRanges answers the stored bytes of entries (data[i] is entry i's range) from
// offset on, cut at block boundaries so that the answer holds at most maxBytes of
// blocks — or the one block holding offset, when that alone is larger. A group commit's
// entry holds many requests' blocks back to back, up to the group commit budget, so
// answering entries whole could exceed what one poll answer carries (behind API Gateway
// and Lambda, about 4 MiB before base64); a block is never larger than one append. Blocks
// wholly below offset are left out, duplicate entries are skipped (readers skip their
// offsets), and next is the offset after the last block answered or skipped.
func cutRanges(entries []store.IndexEntry, data [][]byte, offset, maxBytes int64) (out []Range, next int64, err error) {
	next = offset
	var total int64
	for i, e := range entries {
		if e.Duplicate {
			next = max(next, e.End())
			continue
		}
		skip, err := e.SkipRanges()
		if err != nil {
			return nil, 0, err
		}
		b, base := data[i], e.BaseOffset
		var r *Range
		for off := 0; off < len(b); {
			info, err := segment.PeekInfo(b[off:])
			if err != nil {
				return nil, 0, fmt.Errorf("entry @%d: %w", e.BaseOffset, err)
			}
			size, end := int64(info.Size), base+int64(info.Count)
			switch {
			case end <= offset:
				// Below offset: the reader would skip it.
			case skipped(skip, base-e.BaseOffset):
				// Another attempt's block (a skip run is whole blocks): the range breaks.
				r = nil
				next = max(next, end)
			case total > 0 && total+size > maxBytes:
				return out, next, nil
			default:
				if r == nil {
					out = append(out, Range{BaseOffset: base, Data: b[off : off+info.Size : off+info.Size]})
					r = &out[len(out)-1]
				} else {
					r.Data = b[off-len(r.Data) : off+info.Size : off+info.Size]
				}
				r.Count += int64(info.Count)
				total += size
				next = end
			}
			base, off = end, off+info.Size
		}
		next = max(next, e.End())
	}
	return out, next, nil
}

// skipped reports whether the entry-relative offset rel lies in one of the runs.
func skipped(runs []store.SkipRange, rel int64) bool {
	for _, s := range runs {
		if rel >= s.Offset && rel < s.Offset+s.Count {
			return true
		}
	}
	return false
}

// entriesFor reads the index entries covering offset onwards, enough for the budget. It
// stops at the first gap: offsets whose commit is not yet materialised are never skipped.
// With EventualReads it reads a replica first and reads again strongly when the answer
// stops short of the high watermark and the budget: the replica may lack an entry the
// table has.
func (l *Log) entriesFor(ctx context.Context, topic string, partition int32, offset, hw int64, opt PollOptions) ([]store.IndexEntry, error) {
	if opt.EventualReads {
		out, complete, err := l.collectEntries(ctx, topic, partition, offset, hw, opt, l.meta.IndexEntriesEventual)
		if err != nil || complete {
			return out, err
		}
	}
	out, _, err := l.collectEntries(ctx, topic, partition, offset, hw, opt, l.meta.IndexEntries)
	return out, err
}

// collectEntries pages through read from offset until the high watermark, the budget or
// a gap; complete is false when it stopped at a gap or the index's end below both.
func (l *Log) collectEntries(ctx context.Context, topic string, partition int32, offset, hw int64, opt PollOptions,
	read func(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error)) (out []store.IndexEntry, complete bool, err error) {
	next := offset
	var records, bytes int64
	done := func() bool { return next >= hw || records >= int64(opt.MaxRecords) || bytes >= int64(opt.MaxBytes) }
	for !done() {
		page, err := read(ctx, topic, partition, next, entriesPerPage)
		if err != nil {
			return nil, false, storeErr(err)
		}
		for _, e := range page {
			if e.BaseOffset >= hw || done() {
				return out, true, nil
			}
			if e.End() <= next {
				continue // below offset: an entry the page starts with that ends before it
			}
			if e.BaseOffset > next || e.Count <= 0 {
				return out, false, nil // a gap: the commit at next is not materialised yet
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
	return out, done(), nil
}

// readBlocks fetches and decodes the entries' blocks with ranged reads in parallel,
// checking each entry's record count. An entry's range holds one block or several back
// to back (a group commit of blocks from several requests).
func (l *Log) readBlocks(ctx context.Context, entries []store.IndexEntry) ([][]segment.Record, error) {
	got, err := l.fetchRanges(ctx, entries, func(e store.IndexEntry, b []byte) (any, error) {
		recs, err := segment.AppendBlocksRecords(nil, b, e.BaseOffset)
		if err == nil && int64(len(recs)) != e.Count {
			err = fmt.Errorf("blocks hold %d records, index says %d", len(recs), e.Count)
		}
		return recs, err
	})
	if err != nil {
		return nil, err
	}
	out := make([][]segment.Record, len(entries))
	for i := range got {
		if got[i] != nil {
			out[i] = got[i].([]segment.Record)
		}
	}
	return out, nil
}

// Range merging: a poll's entries that lie in one segment object close together (the
// index entries of one object's commits, like those an idempotent member kept of its own
// before folded claims) are read with one ranged GET, not one each. Two ranges merge when
// the gap between them is at most mergeGap bytes and the merged read stays within
// mergeMax: reading the gap costs less than a GET (at S3's prices, 64 KiB of transfer is
// far below one request) and a read never grows past what one poll answers anyway.
const (
	mergeGap = 64 << 10
	mergeMax = 8 << 20
)

// planSpans groups the entries' byte ranges into the GETs that read them
// (store.PlanReads with the merge bounds above).
func planSpans(entries []store.IndexEntry) []store.ReadSpan {
	return store.PlanReads(entries, mergeGap, mergeMax)
}

// fetchRanges reads the byte ranges of the entries that are not duplicates with ranged
// reads in parallel, one per span of planSpans, passing each entry's bytes to check; a
// check failure is corruption. A missing object is store.ErrNotFound (retention may have
// deleted it: the caller decides).
func (l *Log) fetchRanges(ctx context.Context, entries []store.IndexEntry, check func(store.IndexEntry, []byte) (any, error)) ([]any, error) {
	out := make([]any, len(entries))
	spans := planSpans(entries)
	errs := make([]error, len(spans))
	sem := make(chan struct{}, l.pollPar)
	var wg sync.WaitGroup
	for si, sp := range spans {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := l.objects.GetRange(ctx, sp.Key, sp.Offset, sp.Length)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					errs[si] = err
				} else {
					errs[si] = storeErr(err)
				}
				return
			}
			for _, i := range sp.Entries {
				e := entries[i]
				from := e.ByteOffset - sp.Offset
				if out[i], err = check(e, b[from:from+e.ByteLength:from+e.ByteLength]); err != nil {
					errs[si] = fmt.Errorf("%w: %s/%d@%d in %s: %w", ErrCorrupt, e.Topic, e.Partition, e.BaseOffset, e.ObjectKey, err)
					return
				}
			}
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
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return time.Time{}, err
	}
	es, err := l.meta.IndexEntries(ctx, t.ID(), partition, offset, 2)
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

// GapTimeMargin bounds how much later than the entry after it an unindexed commit may
// have been appended: that commit was made before the entry's, which landed within the
// commit window of its time; the margin adds clock skew between hosts (the retention
// pass's object margin, the same bound).
const GapTimeMargin = 5 * time.Minute

// OffsetForTime returns the first offset appended at or after t, or the high watermark
// when there is none. It reads the partition's index entries from the log start. A
// commit without an index entry (an appender between its commit and its index write,
// or one that died before the materialiser ran) has an unknown time: it never answers
// past one that could be at or after t. Past the newest entry it answers the first
// unindexed offset at once, which every indexed record before it preceded; at a gap
// below an entry — unless that entry's time plus GapTimeMargin is before t, which
// proves the gap older — it waits for the entry as a poll does (Config.GapWait), then
// answers the gap's first offset. So no record appended at or after t is skipped.
func (l *Log) OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (int64, error) {
	tp, err := l.checkPartition(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	var gapSince time.Time
	for {
		off, gap, err := l.offsetForTimeOnce(ctx, tp.ID(), partition, t)
		if err != nil || !gap {
			return off, err
		}
		if gapSince.IsZero() {
			gapSince = time.Now()
		}
		if time.Since(gapSince) >= l.gapWait {
			return off, nil
		}
		if err := ctxtime.Sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// offsetForTimeOnce is one scan of OffsetForTime; gap reports that it stopped at an
// unindexed commit below an entry that could be at or after t.
func (l *Log) offsetForTimeOnce(ctx context.Context, topic string, partition int32, t time.Time) (int64, bool, error) {
	start, hw, err := l.bounds(ctx, topic, partition)
	if err != nil {
		return 0, false, err
	}
	next := start
	for next < hw {
		page, err := l.meta.IndexEntries(ctx, topic, partition, next, entriesPerPage)
		if err != nil {
			return 0, false, storeErr(err)
		}
		from := next
		for _, e := range page {
			if e.End() <= next {
				continue // the entry before next (the store answers the one containing it)
			}
			if e.BaseOffset > next && !e.AppendedAt.Add(GapTimeMargin).Before(t) {
				return next, true, nil // [next, e.BaseOffset) unindexed, perhaps at or after t
			}
			if !e.Duplicate && !e.AppendedAt.Before(t) {
				return max(e.BaseOffset, start), false, nil
			}
			next = e.End()
		}
		if next == from {
			return next, false, nil // no entry past next: the rest is unindexed
		}
	}
	return hw, false, nil
}
