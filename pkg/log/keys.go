package log

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// ErrKeyNotFound is Latest of a key the topic holds no live record of: never written
// (since the topic became compacted), or deleted by a tombstone whose retention passed.
var ErrKeyNotFound = fmt.Errorf("log: key not found (%w)", store.ErrNotFound)

// KeyDeletedError is Latest of a key whose latest record is a tombstone still within
// its retention: the key was deleted at Offset.
type KeyDeletedError struct {
	Partition  int32
	Offset     int64
	AppendedAt time.Time
}

func (e *KeyDeletedError) Error() string {
	return fmt.Sprintf("log: key deleted by the tombstone at partition %d offset %d", e.Partition, e.Offset)
}

// Is makes errors.Is(err, ErrKeyNotFound) and store.ErrNotFound true.
func (e *KeyDeletedError) Is(target error) bool {
	return target == ErrKeyNotFound || target == store.ErrNotFound
}

// ErrKeyless is an append of a record without a key to a compacted topic (an
// ErrInvalid; the Kafka front answers it INVALID_RECORD, as Kafka does).
var ErrKeyless = fmt.Errorf("%w: compacted topic cannot accept message without key", ErrInvalid)

// keylessf is the refusal of a record without a key on compacted topic t, worded as
// Kafka's ("Compacted topic cannot accept message without key").
func keylessf(t store.Topic, what string) error {
	return fmt.Errorf("%w: %s of topic %s (cleanup.policy=%s) has none", ErrKeyless, what, t.Name, t.Cleanup)
}

// keyMark is one record's key and whether its value is null, for the key index.
type keyMark struct {
	key       []byte
	tombstone bool
}

// blockKeys decodes block i of a request on compacted topic t for its records' keys,
// refusing it if one has none.
func blockKeys(t store.Topic, i int, b Block) ([]keyMark, error) {
	recs, err := segment.DecodeBlock(b.Data, 0)
	if err != nil {
		return nil, invalidf("block %d (partition %d): %v", i, b.Partition, err)
	}
	keys := make([]keyMark, len(recs))
	for j, r := range recs {
		if r.Key == nil {
			return nil, keylessf(t, fmt.Sprintf("block %d (partition %d) record %d", i, b.Partition, j))
		}
		keys[j] = keyMark{key: r.Key, tombstone: r.Value == nil}
	}
	return keys, nil
}

// keyPutsInFlight bounds one request's concurrent key index writes.
const keyPutsInFlight = 8

// indexKeys writes, for a request on a compacted topic, the key index entry of each
// key's last record in each partition it appended (partitions that failed are left
// out), before the request is answered: an acknowledged append is visible to Latest.
// Each write is conditional on the stored offset (store.KeyIndexStore.PutKey), so
// requests on many hosts racing on one key leave its newest record, and writing an
// entry again (a retry answered from its claim) changes nothing. A failed write fails
// the request with ErrUnavailable although its records are appended: the caller's
// retry appends them again, or (idempotent) is answered from its claim, and writes the
// entries.
func (l *Log) indexKeys(ctx context.Context, m *member) error {
	if !m.t.Compacted() {
		return nil
	}
	ks, ok := l.meta.(store.KeyIndexStore)
	if !ok {
		return fmt.Errorf("log: the metadata store keeps no key index: %w", ErrUnavailable)
	}
	now := l.now()
	type pk struct {
		partition int32
		key       string
	}
	latest := map[pk]store.KeyEntry{}
	var order []pk
	for _, g := range m.groups {
		if g.err != nil || g.base < 0 {
			continue
		}
		for j, k := range g.keys {
			id := pk{g.partition, string(k.key)}
			if _, seen := latest[id]; !seen {
				order = append(order, id)
			}
			latest[id] = store.KeyEntry{Topic: m.topic, Partition: g.partition, Key: k.key, Offset: g.base + int64(j), Tombstone: k.tombstone, AppendedAt: now}
		}
	}
	sem := make(chan struct{}, keyPutsInFlight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	replaced := map[int32]int64{}
	for _, id := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(e store.KeyEntry) {
			defer func() { <-sem; wg.Done() }()
			_, repl, err := ks.PutKey(ctx, e)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if repl {
				replaced[e.Partition]++
			}
		}(latest[id])
	}
	wg.Wait()
	// A key written twice in one request superseded its first record too: the index saw
	// one put of it. (A retry answered from its claim counts these again, so the
	// trigger's estimate errs high by them; its puts, at the offsets stored, count
	// nothing.)
	seen := map[pk]bool{}
	for _, g := range m.groups {
		if g.err != nil || g.base < 0 {
			continue
		}
		for _, k := range g.keys {
			id := pk{g.partition, string(k.key)}
			if seen[id] {
				replaced[g.partition]++
			}
			seen[id] = true
		}
	}
	if l.overwrites != nil {
		l.reportOverwrites(ctx, m, replaced)
	}
	if len(errs) > 0 {
		return fmt.Errorf("log: records appended to %s, but %d of %d key index entries not written (a retry writes them): %w",
			m.t.Name, len(errs), len(order), storeErr(errors.Join(errs...)))
	}
	return nil
}

// reportOverwrites tells Config.KeyOverwrites what the request replaced per partition,
// the partitions at once.
func (l *Log) reportOverwrites(ctx context.Context, m *member, replaced map[int32]int64) {
	next := map[int32]int64{}
	for _, g := range m.groups {
		if g.err == nil && g.base >= 0 {
			next[g.partition] = max(next[g.partition], g.base+int64(len(g.keys)))
		}
	}
	var wg sync.WaitGroup
	for p, n := range replaced {
		if n == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.overwrites(ctx, m.t, p, n, next[p])
		}()
	}
	wg.Wait()
}

// KeyValue is the latest record of a key of a compacted topic.
type KeyValue struct {
	Partition int32
	Record    segment.Record
}

// keyReadAttempts bounds Latest's re-reads of the key index when the record it names
// is no longer at its offset (overwritten and compacted away meanwhile).
const keyReadAttempts = 3

// Latest answers the latest record of key on compacted topic name, from the key index:
// one read of the key's entry, then a poll of the one record it names. partition nil
// is the key's partition by the topic's current partition count (PartitionForKey); a
// key appended to another partition (explicitly, or before a partition increase) is
// asked for with its partition. It is read-your-write: every append acknowledged
// before the call is seen (indexKeys writes the entries before the answer). A key
// never written is ErrKeyNotFound; one whose latest record is a tombstone is a
// *KeyDeletedError until the tombstone's retention (store.Topic.TombstoneRetention,
// from its append, by the log's clock) passes, and ErrKeyNotFound after, whether or not
// the compaction pass has removed the entry yet. A topic that is not compacted is
// ErrInvalid.
func (l *Log) Latest(ctx context.Context, name string, key []byte, partition *int32) (KeyValue, error) {
	t, err := l.Topic(ctx, name)
	if err != nil {
		return KeyValue{}, err
	}
	if !t.Compacted() {
		return KeyValue{}, invalidf("topic %s is not compacted (cleanup.policy=delete): it keeps no key index", name)
	}
	if key == nil {
		key = []byte{}
	}
	p := PartitionForKey(key, t.Partitions)
	if partition != nil {
		if *partition >= t.Partitions {
			if t, err = l.reloadTopic(ctx, name); err != nil {
				return KeyValue{}, err
			}
		}
		if *partition < 0 || *partition >= t.Partitions {
			return KeyValue{}, invalidf("partition %d outside [0, %d)", *partition, t.Partitions)
		}
		p = *partition
	}
	ks, ok := l.meta.(store.KeyIndexStore)
	if !ok {
		return KeyValue{}, fmt.Errorf("log: the metadata store keeps no key index: %w", ErrUnavailable)
	}
	for attempt := 0; ; attempt++ {
		e, err := ks.GetKey(ctx, t.ID(), p, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return KeyValue{}, fmt.Errorf("%w: topic %s partition %d", ErrKeyNotFound, name, p)
		case err != nil:
			return KeyValue{}, storeErr(err)
		case e.TombstoneExpired(t, l.now()):
			return KeyValue{}, fmt.Errorf("%w: topic %s partition %d (its tombstone's retention passed)", ErrKeyNotFound, name, p)
		case e.Tombstone:
			return KeyValue{}, &KeyDeletedError{Partition: p, Offset: e.Offset, AppendedAt: e.AppendedAt}
		}
		res, err := l.Poll(ctx, name, p, e.Offset, PollOptions{MaxRecords: 1})
		if errors.Is(err, ErrOffsetOutOfRange) {
			// Below the log start: retention (compact,delete) removed the record.
			return KeyValue{}, fmt.Errorf("%w: topic %s partition %d (its latest record expired)", ErrKeyNotFound, name, p)
		}
		if err != nil {
			return KeyValue{}, err
		}
		if len(res.Records) > 0 && res.Records[0].Offset == e.Offset && string(res.Records[0].Key) == string(key) {
			return KeyValue{Partition: p, Record: res.Records[0]}, nil
		}
		if attempt+1 == keyReadAttempts {
			return KeyValue{}, fmt.Errorf("log: topic %s partition %d: the key index names offset %d, which holds no record of the key: %w", name, p, e.Offset, ErrUnavailable)
		}
	}
}
