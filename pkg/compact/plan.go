// Package compact is the compaction of compacted topics (cleanup.policy=compact; DESIGN.md
// §4 "Compaction"): for every key the latest record survives, older ones go, offsets never
// change. Decide, then act: Decide and Layout are pure functions of a partition's index
// entries and records; Job applies them — it writes the surviving records as new segment
// objects, swaps the index entries of the rewritten range in one conditional write
// (store.IndexSwapper), and deletes the replaced objects only once no reader can hold
// them. The local runtime runs a Job on a timer; the serverless runtime wraps the same
// Job in a scheduled function.
package compact

import (
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// HeadGuard is the youngest an entry may be and be compacted, whatever the topic's
// min.compaction.lag: a producer retry searches the entries of the last minutes for an
// earlier attempt (store.FenceHorizon bounds it), and the materialiser may still be
// indexing commits there.
const HeadGuard = store.FenceHorizon

// DefaultMinDirtyRatio is the share of superseded records below the clean point at which
// a partition is compacted (Kafka's min.cleanable.dirty.ratio default).
const DefaultMinDirtyRatio = 0.5

// Policy is a topic's compaction settings at one pass.
type Policy struct {
	Now time.Time
	// MinLag, MaxLag and TombstoneRetention are the topic's min.compaction.lag,
	// max.compaction.lag (0: none) and tombstone retention.
	MinLag, MaxLag, TombstoneRetention time.Duration
	// MinDirtyRatio is the share of superseded records that makes a pass due.
	MinDirtyRatio float64
}

// PolicyOf is t's policy at now.
func PolicyOf(t store.Topic, now time.Time, minDirty float64) Policy {
	return Policy{Now: now, MinLag: t.MinCompactionLag, MaxLag: t.MaxCompactionLag,
		TombstoneRetention: t.TombstoneRetention(), MinDirtyRatio: minDirty}
}

// Visible returns the records of entry e that readers see: none of a duplicate entry,
// and none in its skip runs.
func Visible(e store.IndexEntry, recs []segment.Record) ([]segment.Record, error) {
	if e.Duplicate {
		return nil, nil
	}
	skip, err := e.SkipRanges()
	if err != nil || len(skip) == 0 {
		return recs, err
	}
	out := make([]segment.Record, 0, len(recs))
	for _, r := range recs {
		rel, keep := r.Offset-e.BaseOffset, true
		for _, s := range skip {
			if rel >= s.Offset && rel < s.Offset+s.Count {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, r)
		}
	}
	return out, nil
}

// Decision is what one pass decides for a partition.
type Decision struct {
	// Clean is the clean point: the entries wholly below it (a prefix from the log start,
	// each appended at least max(MinLag, HeadGuard) ago, with no unindexed offset) may
	// be rewritten; the head from Clean on is never touched.
	Clean int64
	// Removed holds the offsets below Clean whose records go; Tombstones those of them
	// that are their key's latest record (a tombstone past its retention), by key.
	Removed    map[int64]bool
	Tombstones map[int64][]byte
	// Live counts the visible records below Clean; Dirty the superseded ones among them.
	Live, Dirty int
	// Due says the partition should be compacted now: the dirty ratio reached
	// MinDirtyRatio, a record was overwritten more than MaxLag ago, or a tombstone's
	// retention is over.
	Due bool
}

// Decide applies the compaction rules to a partition's entries (tiling from the log
// start, read in order) and each entry's visible records (recs[i] are entries[i]'s):
// a keyed record below the clean point goes when a later visible record has its key; the
// latest record of a key goes only when it is a tombstone appended more than
// TombstoneRetention ago and no other record of its key is left, so removing it never
// uncovers an older value. A record without a key is kept.
func Decide(entries []store.IndexEntry, recs [][]segment.Record, p Policy) Decision {
	d := Decision{Removed: map[int64]bool{}, Tombstones: map[int64][]byte{}}
	lag := max(p.MinLag, HeadGuard)
	latest := map[string]int64{}
	latestAt := map[string]time.Time{}
	count := map[string]int{}
	next := int64(-1)
	cleanOpen := true
	for i, e := range entries {
		if next >= 0 && e.BaseOffset != next {
			break // unindexed offsets: nothing at or after them is known
		}
		next = e.End()
		if cleanOpen && e.AppendedAt.Add(lag).After(p.Now) {
			cleanOpen = false
		}
		if cleanOpen {
			d.Clean = e.End()
		}
		for _, r := range recs[i] {
			if r.Key == nil {
				continue
			}
			k := string(r.Key)
			latest[k], latestAt[k] = r.Offset, e.AppendedAt
			count[k]++
		}
	}
	if len(entries) > 0 && d.Clean == 0 {
		d.Clean = entries[0].BaseOffset
	}
	for i, e := range entries {
		if e.End() > d.Clean {
			break
		}
		for _, r := range recs[i] {
			d.Live++
			if r.Key == nil {
				continue
			}
			k := string(r.Key)
			switch {
			case latest[k] != r.Offset:
				d.Removed[r.Offset] = true
				d.Dirty++
				if p.MaxLag > 0 && !latestAt[k].Add(p.MaxLag).After(p.Now) {
					d.Due = true
				}
			case r.Value == nil && count[k] == 1 && !e.AppendedAt.Add(p.TombstoneRetention).After(p.Now):
				d.Removed[r.Offset] = true
				d.Tombstones[r.Offset] = r.Key
				d.Due = true
			}
		}
	}
	if d.Live > 0 && d.Dirty > 0 && float64(d.Dirty)/float64(d.Live) >= p.MinDirtyRatio {
		d.Due = true
	}
	return d
}

// Piece is one entry of a rewritten range: a run of surviving records (one block) or a
// hole, offsets whose records are gone (Records nil).
type Piece struct {
	Base, Count int64
	Records     []segment.Record
	// AppendedAt, Batch and ExpiresAt are the latest of the entries the piece covers, so
	// retention, the time to data loss and a producer retry's search count the rewritten
	// offsets no earlier than they did.
	AppendedAt, ExpiresAt, MaxTimestamp time.Time
	Batch                               int64
}

// Layout is the new tiling of the consecutive entries (recs[i] are entries[i]'s visible
// records) once the removed records are gone: runs of surviving records and holes, in
// offset order, covering exactly the entries' offsets. Once the pieces would exceed
// maxPieces it stops removing, keeping the rest of the records for a later pass; ok is
// false when even that does not fit, or when nothing would be removed.
func Layout(entries []store.IndexEntry, recs [][]segment.Record, removed map[int64]bool, maxPieces int) (out []Piece, ok bool) {
	dropped := false
	for i, e := range entries {
		at := map[int64]segment.Record{}
		for _, r := range recs[i] {
			at[r.Offset] = r
		}
		for o := e.BaseOffset; o < e.End(); o++ {
			r, present := at[o]
			if present && removed[o] && len(out) < maxPieces-1 {
				present, dropped = false, true
			}
			hole := !present
			if n := len(out); n == 0 || (out[n-1].Records == nil) != hole || out[n-1].Base+out[n-1].Count != o {
				out = append(out, Piece{Base: o})
			}
			p := &out[len(out)-1]
			p.Count++
			if !hole {
				p.Records = append(p.Records, r)
				if ts := time.UnixMilli(r.Timestamp); ts.After(p.MaxTimestamp) {
					p.MaxTimestamp = ts
				}
			} else if e.MaxTimestamp.After(p.MaxTimestamp) {
				p.MaxTimestamp = e.MaxTimestamp
			}
			if e.AppendedAt.After(p.AppendedAt) {
				p.AppendedAt = e.AppendedAt
			}
			if e.ExpiresAt.After(p.ExpiresAt) {
				p.ExpiresAt = e.ExpiresAt
			}
			p.Batch = max(p.Batch, e.Batch)
		}
	}
	if !dropped || len(out) > maxPieces {
		return nil, false
	}
	return out, true
}
