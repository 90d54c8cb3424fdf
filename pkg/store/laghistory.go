package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// LagSample is a group's lag on one partition as one sampling pass saw it.
type LagSample struct {
	At time.Time
	// Records is the lag in records (high watermark − committed).
	Records int64
	// Behind is how long ago the first unread record was appended (zero without lag).
	Behind time.Duration
}

// LagSeries is the lag history of one partition of a group, oldest sample first.
type LagSeries struct {
	Topic     string
	Partition int32
	Samples   []LagSample
}

// PartitionLag is one partition's lag in a sampling pass.
type PartitionLag struct {
	Topic     string
	Partition int32
	Records   int64
	Behind    time.Duration
}

// MaxLagHistoryBytes bounds a group's encoded lag history (EncodeLagHistory): one
// DynamoDB item holds it, and items are limited to 400 KB.
const MaxLagHistoryBytes = 256 << 10

// LagHistoryStore keeps a bounded history of every group's lag, written by a scheduled
// sampling pass (retention's, or `strata dev`'s loop) and read by the API, so the
// history outlives any one process. Backends implement it beside MetaStore.
type LagHistoryStore interface {
	// RecordLag must, atomically for the group, replace its history by
	// NextLagHistory(stored, at, lags, keep): a sample at at per entry of lags, at most
	// keep samples per partition, no series for a partition lags leaves out, and at
	// most MaxLagHistoryBytes encoded. A pass no newer than the newest stored sample
	// must change nothing (a repeated or late pass), and is not an error.
	RecordLag(ctx context.Context, group string, at time.Time, lags []PartitionLag, keep int) error
	// LagHistory must return the group's history ordered by topic then partition; a
	// group without one yields an empty list.
	LagHistory(ctx context.Context, group string) ([]LagSeries, error)
	// DeleteLagHistory must remove the group's history; removing none is not an error.
	DeleteLagHistory(ctx context.Context, group string) error
}

// NextLagHistory is the history after a pass at at (the pure step of RecordLag, which
// every backend uses): each partition of lags gets a sample appended to its series (a
// new series when it had none) and keeps its newest keep samples (keep < 1 counts as
// 1); series of partitions absent from lags go (the group no longer has them). When
// the encoding would exceed MaxLagHistoryBytes, every series keeps fewer samples, and
// as a last resort the last series go. changed is false, and old is returned, when at
// is not after the newest stored sample.
func NextLagHistory(old []LagSeries, at time.Time, lags []PartitionLag, keep int) (next []LagSeries, changed bool) {
	at = at.Truncate(time.Millisecond)
	for _, s := range old {
		if n := len(s.Samples); n > 0 && !s.Samples[n-1].At.Before(at) {
			return old, false
		}
	}
	keep = max(keep, 1)
	type key struct {
		topic     string
		partition int32
	}
	prev := make(map[key][]LagSample, len(old))
	for _, s := range old {
		prev[key{s.Topic, s.Partition}] = s.Samples
	}
	seen := make(map[key]bool, len(lags))
	for _, l := range lags {
		k := key{l.Topic, l.Partition}
		if seen[k] {
			continue
		}
		seen[k] = true
		samples := append(slices.Clone(prev[k]), LagSample{At: at, Records: max(l.Records, 0), Behind: max(l.Behind, 0).Truncate(time.Millisecond)})
		next = append(next, LagSeries{Topic: l.Topic, Partition: l.Partition, Samples: samples})
	}
	slices.SortFunc(next, func(a, b LagSeries) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for {
		for i := range next {
			if n := len(next[i].Samples); n > keep {
				next[i].Samples = next[i].Samples[n-keep:]
			}
		}
		if len(EncodeLagHistory(next)) <= MaxLagHistoryBytes {
			return next, true
		}
		if keep > 1 {
			keep = keep * 3 / 4
			continue
		}
		next = next[:len(next)*3/4]
	}
}

// lagHistoryVersion is the first byte of an encoded history.
const lagHistoryVersion = 1

// EncodeLagHistory is the stored form of a history: a version byte, the series count,
// then per series its topic (length-prefixed), partition and samples, each as its time
// (epoch ms; later ones as the difference to the previous), records and lag in ms, all
// as varints.
func EncodeLagHistory(h []LagSeries) []byte {
	b := []byte{lagHistoryVersion}
	b = binary.AppendUvarint(b, uint64(len(h)))
	for _, s := range h {
		b = binary.AppendUvarint(b, uint64(len(s.Topic)))
		b = append(b, s.Topic...)
		b = binary.AppendVarint(b, int64(s.Partition))
		b = binary.AppendUvarint(b, uint64(len(s.Samples)))
		var last int64
		for i, x := range s.Samples {
			ms := x.At.UnixMilli()
			if i == 0 {
				b = binary.AppendVarint(b, ms)
			} else {
				b = binary.AppendVarint(b, ms-last)
			}
			last = ms
			b = binary.AppendVarint(b, x.Records)
			b = binary.AppendVarint(b, x.Behind.Milliseconds())
		}
	}
	return b
}

// ErrBadLagHistory is DecodeLagHistory of bytes EncodeLagHistory did not make.
var ErrBadLagHistory = errors.New("store: malformed lag history")

// DecodeLagHistory inverts EncodeLagHistory. It never panics and allocates no more
// than the input's length justifies.
func DecodeLagHistory(b []byte) ([]LagSeries, error) {
	if len(b) == 0 || b[0] != lagHistoryVersion {
		return nil, fmt.Errorf("%w: unknown version", ErrBadLagHistory)
	}
	d := lagDecoder{b: b[1:]}
	n := d.count()
	out := make([]LagSeries, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var s LagSeries
		tl := d.count()
		if d.err == nil {
			s.Topic = string(d.b[:tl])
			d.b = d.b[tl:]
		}
		p := d.varint()
		if p < 0 || p > 1<<31-1 {
			d.fail("partition out of range")
		}
		s.Partition = int32(p)
		ns := d.count()
		s.Samples = make([]LagSample, 0, ns)
		var ms int64
		for j := uint64(0); j < ns && d.err == nil; j++ {
			v := d.varint()
			if j == 0 {
				ms = v
			} else {
				ms += v
			}
			rec, behind := d.varint(), d.varint()
			if behind < 0 || behind > math.MaxInt64/int64(time.Millisecond) {
				d.fail("lag time out of range")
			}
			s.Samples = append(s.Samples, LagSample{At: time.UnixMilli(ms), Records: rec, Behind: time.Duration(behind) * time.Millisecond})
		}
		out = append(out, s)
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

type lagDecoder struct {
	b   []byte
	err error
}

func (d *lagDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadLagHistory, what)
	}
}

// count reads a length no larger than the bytes left (every counted item takes at
// least one byte), so a forged count cannot make the decoder allocate.
func (d *lagDecoder) count() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	if v > uint64(len(d.b)) {
		d.fail("count beyond the input")
		return 0
	}
	return v
}

func (d *lagDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return v
}
