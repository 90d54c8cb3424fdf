package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Parking (the group's on_failure "park"): a record of key K that fails every attempt
// parks K on its partition — the row is written first, then the record goes to the
// group's parking topic — and every later record of K is forwarded there too, in
// order, while the other keys flow. The rows live in the group store, written fenced by
// the lease's generation before the commit that passes the record, so the partition's
// next owner (after a crash, a move, or another Lambda invocation) forwards K as well.
// A release asked through the API is seen when a run starts and at each renew: the
// key's worker replays K's parked records in origin order, before any newer record of
// K (all of K's records go to that worker), then deletes the row.

// ParkCoordinator is what parking needs of the coordinator beyond Coordinator
// (*group.Coordinator has it). ParkedOf must return the partition's parked keys;
// PutParked and Unpark must be fenced by the lease's generation (group.ErrFenced).
type ParkCoordinator interface {
	ParkedOf(ctx context.Context, grp, topic string, partition int32) ([]group.Parked, error)
	PutParked(ctx context.Context, p group.Parked, member string, generation int64) error
	Unpark(ctx context.Context, grp, topic string, partition int32, key []byte, member string, generation int64) error
}

// ErrParkingUnsupported: the group parks keys and the coordinator keeps none.
var ErrParkingUnsupported = errors.New("consumer: the group's on_failure is park and the coordinator keeps no parked keys")

// replayMarker in Record.Attempt marks a queue entry that is no record but a release of
// its key, to replay on the key's worker.
const replayMarker = -1

// recordAction is what a worker does with a polled record.
type recordAction int

const (
	actHandle  recordAction = iota // hand it to the handler
	actForward                     // its key is parked: append it to the parking topic
)

// planRecord decides a record's action from whether its key is parked.
func planRecord(parking, keyParked bool) recordAction {
	if parking && keyParked {
		return actForward
	}
	return actHandle
}

// failureAction is what a record that failed every attempt does.
type failureAction int

const (
	failDrop failureAction = iota
	failDeadLetter
	failPark
)

// planFailure decides what a record that failed every attempt does: a parking group
// parks its key unless it has none or one too long to keep (those are dead-lettered,
// or dropped without a dead-letter topic).
func planFailure(onFailure string, key []byte, deadLetterTopic string) failureAction {
	if onFailure == group.OnFailurePark && key != nil && len(key) <= wire.MaxParkedKey {
		return failPark
	}
	if deadLetterTopic == "" {
		return failDrop
	}
	return failDeadLetter
}

// planForward is the row after the record at offset landed at (partition, at) of the
// parking topic: the offset counted once (a redelivery changes nothing but a missing
// parking position), and whether it must be written.
func planForward(row group.Parked, offset int64, partition int32, at int64) (group.Parked, bool) {
	changed := false
	if offset > row.LastOffset {
		row.LastOffset, row.Records = offset, row.Records+1
		changed = true
	}
	if row.ParkOffset < 0 && at >= 0 {
		row.ParkPartition, row.ParkOffset = partition, at
		changed = true
	}
	return row, changed
}

// planReleases returns the keys whose release is asked for in rows and not yet
// replayed or tried by this run (tried maps a key to the release request it tried).
func planReleases(rows []group.Parked, tried map[string]time.Time) [][]byte {
	var out [][]byte
	for _, p := range rows {
		if p.ReleaseRequested.IsZero() || tried[string(p.Key)].Equal(p.ReleaseRequested) {
			continue
		}
		out = append(out, p.Key)
	}
	return out
}

// parking is a run's parked keys; workers and the loop share it.
type parking struct {
	coord ParkCoordinator
	topic string // the parking topic
	mu    sync.Mutex
	keys  map[string]group.Parked
	// tried maps a key to the release request a replay was started for.
	tried     map[string]time.Time
	replaying int // releases scheduled and not finished
	// loaded: the run's first read adopted the stored rows; later reads only learn
	// of release requests.
	loaded bool
}

func (pk *parking) get(key []byte) (group.Parked, bool) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	p, ok := pk.keys[string(key)]
	return p, ok
}

func (pk *parking) set(p group.Parked) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.keys[string(p.Key)] = p
}

func (pk *parking) pendingReplays() int {
	if pk == nil {
		return 0
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return pk.replaying
}

// startParking sets the run up to park when the group's policy says so.
func (r *run) startParking(ctx context.Context) error {
	if r.pol.OnFailure != group.OnFailurePark {
		return nil
	}
	pc, ok := r.c.coord.(ParkCoordinator)
	if !ok {
		return ErrParkingUnsupported
	}
	r.parks = &parking{coord: pc, topic: wire.ParkingTopic(r.c.cfg.Group), keys: map[string]group.Parked{}, tried: map[string]time.Time{}}
	return r.refreshParked(ctx)
}

// refreshParked reads the partition's parked keys (decide: planReleases) and queues a
// replay on the key's worker for each release asked (act).
func (r *run) refreshParked(ctx context.Context) error {
	if r.parks == nil {
		return nil
	}
	cfg := r.c.cfg
	rows, err := r.parks.coord.ParkedOf(ctx, cfg.Group, r.lease.TopicRef(), r.p)
	if err != nil {
		return fmt.Errorf("consumer: parked keys of %s/%d: %w", cfg.Topic, r.p, err)
	}
	pk := r.parks
	pk.mu.Lock()
	for _, p := range rows {
		cur, ok := pk.keys[string(p.Key)]
		switch {
		case ok:
			// Only the owner parks and unparks: the rest of the row is this run's.
			cur.ReleaseRequested = p.ReleaseRequested
			pk.keys[string(p.Key)] = cur
		case !pk.loaded:
			pk.keys[string(p.Key)] = p
		default:
			// Unparked by this run since the read began (its replay deleted it).
			continue
		}
	}
	pk.loaded = true
	known := rows[:0]
	for _, p := range rows {
		if _, ok := pk.keys[string(p.Key)]; ok {
			known = append(known, p)
		}
	}
	release := planReleases(known, pk.tried)
	for _, key := range release {
		pk.tried[string(key)] = pk.keys[string(key)].ReleaseRequested
		pk.replaying++
	}
	pk.mu.Unlock()
	for _, key := range release {
		i := route(0, key, cfg.Workers, true, log.PartitionForKey)
		if r.pending != nil {
			r.pending[i] = append(r.pending[i], Record{Record: segment.Record{Offset: -1, Key: key}, Topic: cfg.Topic, Partition: r.p, Attempt: replayMarker})
		}
	}
	return nil
}

// process is a worker's step for one record: forward it when its key is parked, else
// handle it; false means stop (the record is not complete).
func (r *run) process(rec Record) bool {
	if r.parks == nil {
		return r.handle(rec)
	}
	row, parked := r.parks.get(rec.Key)
	if planRecord(true, parked && rec.Key != nil) == actForward {
		return r.forward(rec, row)
	}
	return r.handle(rec)
}

// parkKey parks rec's key after rec failed every attempt with cause: the row first
// (fenced), then the record to the parking topic.
func (r *run) parkKey(rec Record, cause error) bool {
	cfg := r.c.cfg
	row := group.Parked{Group: cfg.Group, Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key,
		FirstOffset: rec.Offset, LastOffset: rec.Offset, Records: 1, Error: parkedError(cause), Attempts: rec.Attempt,
		ParkedAt: cfg.Clock(), ParkPartition: 0, ParkOffset: -1}
	if err := r.parks.coord.PutParked(r.workCtx, r.ofLease(row), cfg.Member, r.lease.Generation); err != nil {
		return r.workFailed(fmt.Errorf("consumer: park key of %s/%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, err))
	}
	r.parks.set(row)
	cfg.Logger.Warn("consumer: key parked", "group", cfg.Group, "topic", rec.Topic, "partition", rec.Partition,
		"offset", rec.Offset, "parking_topic", r.parks.topic, "attempts", rec.Attempt, "err", cause)
	return r.forward(rec, row)
}

// parkedError is cause's text as a parked row keeps it: cut to wire.MaxParkedError
// bytes at a character boundary, so every coordinator (the HTTP one refuses longer)
// stores the same row and every delivery appends the same body.
func parkedError(cause error) string {
	msg := cause.Error()
	if len(msg) <= wire.MaxParkedError {
		return msg
	}
	cut := wire.MaxParkedError
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return strings.ToValidUTF8(msg[:cut], "")
}

// forward appends rec to the parking topic (idempotently: the body is the same on every
// delivery, built from the row) and records it in the row before the record completes.
func (r *run) forward(rec Record, row group.Parked) bool {
	cfg := r.c.cfg
	res, err := r.appendParked(rec, row)
	if errors.Is(err, log.ErrIdempotencyKeyReused) {
		// Another body holds this parking's key (two parkings of the record within
		// one millisecond): the record is in the parking topic, once, at a position
		// this row does not learn (a release counts it lost if it finds it nowhere).
		cfg.Logger.Warn("consumer: record already in the parking topic from an earlier parking", "group", cfg.Group,
			"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "parking_topic", r.parks.topic)
		res, err = log.Result{Partition: row.ParkPartition, Offset: -1}, nil
	}
	if err != nil {
		return r.workFailed(fmt.Errorf("consumer: forward %s/%d@%d to %s: %w", rec.Topic, rec.Partition, rec.Offset, r.parks.topic, err))
	}
	next, changed := planForward(row, rec.Offset, res.Partition, res.Offset)
	if changed {
		if err := r.parks.coord.PutParked(r.workCtx, r.ofLease(next), cfg.Member, r.lease.Generation); err != nil {
			return r.workFailed(fmt.Errorf("consumer: parked key of %s/%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, err))
		}
		r.parks.set(next)
	}
	r.parkedN.Add(1)
	return true
}

// workFailed ends the run with err (unless it is already ending) and reports false.
func (r *run) workFailed(err error) bool {
	if r.workCtx.Err() == nil {
		if errors.Is(err, group.ErrFenced) {
			r.fenced.Store(true)
		}
		r.workErr <- err
		r.signal()
	}
	return false
}

// ParkKey is the Idempotency-Key of the parking append of (group, topic, partition,
// offset), topic the record's store.TopicRef, like DeadLetterKey with "park:": at most
// 68 characters.
func ParkKey(group, topic string, partition int32, offset int64) string {
	return store.RecordKey("park:", group, topic, partition, offset)
}

// ofLease is p as the run writes it: of the incarnation its lease was taken on.
func (r *run) ofLease(p group.Parked) group.Parked {
	p.Topic = r.lease.TopicRef()
	return p
}

// parkingAppendKey is the Idempotency-Key one parking appends a record with: the
// record's ParkKey and the parking's time (the row's ParkedAt, milliseconds in base 36,
// at most 9 characters). Every delivery within one parking sends the same key and body;
// a later parking of the record (released, then redelivered by a reset and parked
// again) appends it anew, so its row learns where it lies, instead of finding the
// earlier parking's copy at a position the new row cannot know.
func parkingAppendKey(key string, parkedAt time.Time) string {
	return key + ":" + strconv.FormatInt(parkedAt.UnixMilli(), 36)
}

// parkHeaders are the headers a parked record carries besides its own.
var parkHeaders = map[string]bool{wire.HeaderOriginTopic: true, wire.HeaderOriginPartition: true, wire.HeaderOriginOffset: true,
	wire.HeaderAttempts: true, wire.HeaderError: true, wire.HeaderParkedAt: true}

// appendParked appends rec to the parking topic with the origin headers; the error,
// attempts and time come from the row, so every delivery sends the same body.
func (r *run) appendParked(rec Record, row group.Parked) (log.Result, error) {
	cfg := r.c.cfg
	attempts := 0
	if rec.Offset == row.FirstOffset {
		attempts = row.Attempts
	}
	hs := append([]segment.Header(nil), rec.Headers...)
	hs = append(hs,
		segment.Header{Key: wire.HeaderOriginTopic, Value: []byte(rec.Topic)},
		segment.Header{Key: wire.HeaderOriginPartition, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		segment.Header{Key: wire.HeaderOriginOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		segment.Header{Key: wire.HeaderAttempts, Value: []byte(strconv.Itoa(attempts))},
		segment.Header{Key: wire.HeaderError, Value: []byte(row.Error)},
		segment.Header{Key: wire.HeaderParkedAt, Value: []byte(strconv.FormatInt(row.ParkedAt.UnixMilli(), 10))},
	)
	ts := rec.Timestamp
	key := ParkKey(cfg.Group, r.lease.TopicRef(), rec.Partition, rec.Offset)
	key = parkingAppendKey(key, row.ParkedAt)
	for attempt := 1; ; attempt++ {
		res, err := r.c.log.Append(r.workCtx, r.parks.topic,
			[]log.Record{{Key: rec.Key, Value: rec.Value, Headers: hs, Timestamp: &ts}}, log.AppendOptions{IdempotencyKey: key})
		if err == nil && len(res) == 1 {
			return res[0], nil
		}
		if err == nil {
			return log.Result{}, fmt.Errorf("append answered %d results", len(res))
		}
		if !errors.Is(err, log.ErrUnavailable) || attempt >= max(r.pol.MaxAttempts, 3) {
			return log.Result{}, err
		}
		if err := ctxtime.Sleep(r.workCtx, cfg.Backoff(attempt)); err != nil {
			return log.Result{}, err
		}
	}
}

// replay releases key on its worker: it hands the key's parked records to the handler
// in origin order, then unparks the key. A record that fails every attempt again ends
// the replay with the key still parked (until the next release). False means stop.
func (r *run) replay(key []byte) bool {
	cfg := r.c.cfg
	defer func() {
		r.parks.mu.Lock()
		r.parks.replaying--
		r.parks.mu.Unlock()
		r.signal()
	}()
	row, ok := r.parks.get(key)
	if !ok {
		return true
	}
	lg := cfg.Logger.With("group", cfg.Group, "topic", row.Topic, "partition", row.Partition, "parking_topic", r.parks.topic)
	var replayed int64 // the key's parked records handled, each origin offset once
	if row.ParkOffset >= 0 {
		start, hw, err := r.c.log.Bounds(r.workCtx, r.parks.topic, row.ParkPartition)
		if err != nil {
			return r.workFailed(fmt.Errorf("consumer: replay from %s/%d: %w", r.parks.topic, row.ParkPartition, err))
		}
		done := row.FirstOffset - 1 // the newest origin offset replayed
		// The parking topic's retention may have taken the first parked records: the
		// replay starts at the log start then, and counts what it did not find as lost.
		for at := max(row.ParkOffset, start); at < hw && done < row.LastOffset; {
			res, err := r.c.log.Poll(r.workCtx, r.parks.topic, row.ParkPartition, at, log.PollOptions{MaxRecords: cfg.PollRecords})
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				// Retention moved the log start past at meanwhile: go on from there.
				start, _, berr := r.c.log.Bounds(r.workCtx, r.parks.topic, row.ParkPartition)
				if berr == nil && start > at {
					at = start
					continue
				}
			}
			if err != nil {
				return r.workFailed(fmt.Errorf("consumer: replay from %s/%d@%d: %w", r.parks.topic, row.ParkPartition, at, err))
			}
			for _, pr := range res.Records {
				orig, ok := parkedOrigin(pr, row)
				if !ok || orig.Offset <= done || orig.Offset > row.LastOffset {
					continue // another key's, or a duplicate of an earlier append
				}
				orig.Fence = group.Fence{Group: cfg.Group, Topic: cfg.Topic, Incarnation: r.lease.Incarnation, Partition: row.Partition, Generation: r.lease.Generation}
				if err := r.attempts(&orig); err != nil {
					if errors.Is(err, group.ErrFenced) {
						return r.stopFenced(err)
					}
					if r.workCtx.Err() != nil {
						return false
					}
					lg.Warn("consumer: replay of a released key failed; the key stays parked", "offset", orig.Offset, "err", err)
					return true
				}
				done = orig.Offset
				replayed++
				r.replayedN.Add(1)
			}
			if res.NextOffset <= at {
				// A commit of the parking topic not indexed yet (the poll waited for it):
				// its records are not lost, so the key stays parked; the partition's next
				// run tries the release again.
				lg.Warn("consumer: replay of a released key stopped at a commit not indexed yet; the key stays parked", "offset", at)
				return true
			}
			at = res.NextOffset
		}
	}
	if err := r.parks.coord.Unpark(r.workCtx, cfg.Group, r.lease.TopicRef(), row.Partition, key, cfg.Member, r.lease.Generation); err != nil {
		return r.workFailed(fmt.Errorf("consumer: unpark a key of %s/%d: %w", row.Topic, row.Partition, err))
	}
	r.parks.mu.Lock()
	delete(r.parks.keys, string(key))
	r.parks.mu.Unlock()
	if lost := planReplayLoss(row, replayed); lost > 0 {
		r.parkedLostN.Add(lost)
		lg.Warn("consumer: parked key released; the parking topic's retention took some of its records before the release",
			"first_offset", row.FirstOffset, "records", row.Records, "replayed", replayed, "lost", lost)
		return true
	}
	lg.Info("consumer: parked key released", "first_offset", row.FirstOffset, "records", row.Records)
	return true
}

// planReplayLoss is how many of row's parked records a completed replay that handled
// replayed of them did not find: the parking topic's retention took them (or the row
// never learnt where they lie). Each origin offset counts once in both.
func planReplayLoss(row group.Parked, replayed int64) int64 {
	return max(row.Records-replayed, 0)
}

// parkedOrigin is the origin record a parking-topic record holds, when it is one of
// row's key and partition.
func parkedOrigin(pr segment.Record, row group.Parked) (Record, bool) {
	if !bytes.Equal(pr.Key, row.Key) {
		return Record{}, false
	}
	var topic, part, off string
	hs := make([]segment.Header, 0, len(pr.Headers))
	for _, h := range pr.Headers {
		switch h.Key {
		case wire.HeaderOriginTopic:
			topic = string(h.Value)
		case wire.HeaderOriginPartition:
			part = string(h.Value)
		case wire.HeaderOriginOffset:
			off = string(h.Value)
		}
		if !parkHeaders[h.Key] {
			hs = append(hs, h)
		}
	}
	o, err := strconv.ParseInt(off, 10, 64)
	if topic != row.Topic || part != strconv.Itoa(int(row.Partition)) || err != nil {
		return Record{}, false
	}
	rec := pr
	rec.Offset, rec.Headers = o, hs
	return Record{Record: rec, Topic: row.Topic, Partition: row.Partition}, true
}

// attempts runs the handler on rec up to the policy's attempts, with backoff, and
// returns its last error, rec.Attempt left at the last attempt made (what a dead-letter
// records). A group.ErrFenced is returned at once: a fenced business write
// (group.Effects) proves the partition moved on, and trying again cannot change that.
func (r *run) attempts(rec *Record) error {
	cfg := r.c.cfg
	var err error
	for attempt := 1; attempt <= r.pol.MaxAttempts; attempt++ {
		rec.Attempt = attempt
		if err = cfg.Handler(r.workCtx, *rec); err == nil {
			r.handled.Add(1)
			return nil
		}
		if errors.Is(err, group.ErrFenced) || r.workCtx.Err() != nil || attempt == r.pol.MaxAttempts {
			break
		}
		r.retries.Add(1)
		if serr := ctxtime.Sleep(r.workCtx, cfg.Backoff(attempt)); serr != nil {
			return serr
		}
	}
	return err
}
