package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// Record is one record to append.
type Record struct {
	// Key, when non-nil (even empty), makes the record keyed: without Partition it goes
	// to wire.PartitionForKey(Key, partitions). A nil Key is unkeyed.
	Key []byte
	// Value nil is a null value (Kafka's tombstone), kept apart from an empty one.
	Value []byte
	// Headers are stored sorted by name, then HeaderList's in its order: a name may
	// repeat there, and a nil value is a null one.
	Headers    map[string][]byte
	HeaderList []Header
	// Partition, when set, places the record explicitly.
	Partition *int32
	// Timestamp, when non-zero, is stored (in milliseconds) as is. Otherwise a Producer
	// stamps the record with the time of Send (Kafka's CreateTime: when the application
	// produced it, not when the server stored it, so batching and retries do not move
	// it), while Client.Append leaves it to the server, which uses the append time.
	Timestamp time.Time
}

// Size is the record's size as the server counts it against the 1 MiB limit: key,
// value, header names and header values, decoded.
func (r Record) Size() int {
	n := len(r.Key) + len(r.Value)
	for k, v := range r.Headers {
		n += len(k) + len(v)
	}
	for _, h := range r.HeaderList {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// Header is a record header; a nil Value is a null value.
type Header = segment.Header

// headers lists r's headers as stored: Headers sorted by name, then HeaderList.
func (r Record) headers() []segment.Header {
	if len(r.Headers) == 0 {
		return r.HeaderList
	}
	out := make([]segment.Header, 0, len(r.Headers)+len(r.HeaderList))
	for k, v := range r.Headers {
		out = append(out, segment.Header{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b segment.Header) int { return strings.Compare(a.Key, b.Key) })
	return append(out, r.HeaderList...)
}

// Result is where one appended record landed.
type Result struct {
	Partition int32
	Offset    int64
	// Err is set, and Offset meaningless, for a record whose partition failed in a
	// partially failed append (Append then also returns an *APIError).
	Err error
}

// PollOptions are optional limits of Poll; zero leaves the server default
// (500 records, 1 MiB, no wait).
type PollOptions struct {
	MaxRecords int
	MaxBytes   int
	// Wait is how long the server may wait for a record when the offset is at the high
	// watermark (rounded up to a millisecond, at most 20 s).
	Wait time.Duration
}

// PolledRecord is one record read back. Value is nil for a tombstone. HeaderList holds
// the headers in order, repeated names and null (nil) values included; Headers maps
// each name to its last value.
type PolledRecord struct {
	Offset     int64
	Timestamp  time.Time
	Key        []byte
	Value      []byte
	Headers    map[string][]byte
	HeaderList []Header
}

// PollResult is one Poll answer. NextOffset is the offset to poll next.
type PollResult struct {
	Records        []PolledRecord
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// TopicConfig is the settable part of a topic; a zero Retention leaves the server's
// default (24 hours).
type TopicConfig struct {
	Partitions int32
	Retention  time.Duration
	// RetentionPin, when positive, is how far beyond Retention a record is kept while a
	// group that has committed on the topic has not read it (docs/API.md).
	RetentionPin time.Duration
	// LogAppendTime stamps every record with its append time instead of the producer's
	// timestamp (Kafka's message.timestamp.type=LogAppendTime).
	LogAppendTime bool
	// Cleanup is CleanupDelete ("" too), CleanupCompact or CleanupCompactDelete
	// (Kafka's cleanup.policy); a compacted topic refuses records without a key and
	// answers Latest.
	Cleanup string
	// MinCompactionLag, MaxCompactionLag and DeleteRetention are the compaction
	// settings (Kafka's min/max.compaction.lag.ms, delete.retention.ms); 0 leaves one
	// unset (DeleteRetention: a day).
	MinCompactionLag time.Duration
	MaxCompactionLag time.Duration
	DeleteRetention  time.Duration
}

// The cleanup policies of a topic (TopicConfig.Cleanup, Topic.Cleanup).
const (
	CleanupDelete        = wire.CleanupDelete
	CleanupCompact       = wire.CleanupCompact
	CleanupCompactDelete = wire.CleanupCompactDelete
)

// CleanupChange is SetCleanup's change: Cleanup "" and nil settings keep the topic's;
// a setting of 0 unsets it.
type CleanupChange struct {
	Cleanup          string
	MinCompactionLag *time.Duration
	MaxCompactionLag *time.Duration
	DeleteRetention  *time.Duration
}

// KeyRecord is the latest record of a key of a compacted topic (Client.Latest).
type KeyRecord struct {
	Partition int32
	PolledRecord
}

// Topic describes a topic. PartitionInfo is filled by DescribeTopic.
type Topic struct {
	Name       string
	Partitions int32
	Retention  time.Duration
	// RetentionPin is the pin cap, 0 without a pin.
	RetentionPin  time.Duration
	LogAppendTime bool
	// Cleanup is the topic's cleanup policy (CleanupDelete, CleanupCompact,
	// CleanupCompactDelete; "" from a server older than policies: delete) and the rest
	// its compaction settings, 0 when unset.
	Cleanup          string
	MinCompactionLag time.Duration
	MaxCompactionLag time.Duration
	DeleteRetention  time.Duration
	PartitionInfo    []PartitionInfo
}

// PartitionInfo is a partition's readable range.
type PartitionInfo struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
}

// Lease is a granted or renewed lease of (group, topic, partition).
type Lease struct {
	Generation int64
	ExpiresAt  time.Time
	// CommittedOffset is the group's next offset to read, nil before the first commit.
	CommittedOffset *int64
	// Completed are the offsets above CommittedOffset the last commit said were handled.
	Completed []wire.OffsetRange
	// Incarnation is the topic incarnation the lease was taken on ("" for a topic
	// created before incarnations): pass TopicRef(topic, Incarnation) as the topic of
	// the lease's renewals, commits, release, polls and parked-row calls.
	Incarnation string
}

// Group describes a consumer group.
type Group struct {
	Name       string
	Partitions []GroupPartition
}

// GroupPartition is a group's position on one partition. Owner is "" and
// LeaseExpiresAt zero when no lease is live; Generation is the last one.
type GroupPartition struct {
	Topic           string
	Partition       int32
	CommittedOffset *int64
	HighWatermark   int64
	LagRecords      int64
	LagSeconds      float64
	// SecondsToDataLoss is how long until the oldest unread record still retained
	// expires (0 when expiring); nil when caught up.
	SecondsToDataLoss *float64
	// RecordsLost counts the records that expired before the group read them.
	RecordsLost int64
	// ParkedKeys counts the keys the group parked on the partition (on_failure park).
	ParkedKeys     int64
	Owner          string
	Generation     int64
	LeaseExpiresAt time.Time
	// Metadata is what the last commit stored with the position (CommitOptions).
	Metadata string
}

// PartitionOffset is a partition's committed offset after a reset.
type PartitionOffset struct {
	Partition       int32
	CommittedOffset int64
}

// ResetTarget is where ResetGroup moves a group's committed offsets; build it with
// ResetEarliest, ResetLatest, ResetToOffset or ResetToTime.
type ResetTarget struct {
	kind   string
	offset int64
	ts     time.Time
}

// ResetEarliest moves to each partition's log start offset.
func ResetEarliest() ResetTarget { return ResetTarget{kind: "earliest"} }

// ResetLatest moves to each partition's high watermark.
func ResetLatest() ResetTarget { return ResetTarget{kind: "latest"} }

// ResetToOffset moves every partition to offset n.
func ResetToOffset(n int64) ResetTarget { return ResetTarget{kind: "offset", offset: n} }

// ResetToTime moves to the first offset appended at or after t (else the high watermark).
func ResetToTime(t time.Time) ResetTarget { return ResetTarget{kind: "timestamp", ts: t} }

// MarshalJSON encodes the "to" value of the reset request.
func (t ResetTarget) MarshalJSON() ([]byte, error) {
	switch t.kind {
	case "earliest", "latest":
		return json.Marshal(t.kind)
	case "offset":
		return json.Marshal(map[string]int64{"offset": t.offset})
	case "timestamp":
		return json.Marshal(map[string]int64{"timestamp_ms": t.ts.UnixMilli()})
	}
	return nil, fmt.Errorf("%w: empty reset target", ErrInvalid)
}

// wireReset is a reset request (its target is the SDK's own ResetTarget).
type wireReset struct {
	To ResetTarget `json:"to"`
}

var b64 = base64.StdEncoding

// toWire encodes a record; partition overrides r.Partition when non-nil.
func toWire(r Record, partition *int32) wire.Record {
	w := wire.Record{Value: b64Ptr(r.Value), Partition: r.Partition}
	if partition != nil {
		w.Partition = partition
	}
	w.Key = b64Ptr(r.Key)
	// The list form only when the object form would lose something (a repeated name,
	// a null value, an order other than by name), so other records reach any server.
	if hs := r.headers(); objectSafe(hs) {
		if len(hs) > 0 {
			w.Headers = &wire.Headers{Object: make(map[string]string, len(hs))}
			for _, h := range hs {
				w.Headers.Object[h.Key] = b64.EncodeToString(h.Value)
			}
		}
	} else {
		w.Headers = &wire.Headers{List: make([]wire.Header, len(hs))}
		for i, h := range hs {
			w.Headers.List[i] = wire.Header{Key: h.Key, Value: b64Ptr(h.Value)}
		}
	}
	if !r.Timestamp.IsZero() {
		ms := r.Timestamp.UnixMilli()
		w.TimestampMs = &ms
	}
	return w
}

func fromWirePolled(w wire.PolledRecord) (PolledRecord, error) {
	r := PolledRecord{Offset: w.Offset, Timestamp: time.UnixMilli(w.TimestampMs)}
	var err error
	if w.Key != nil {
		if r.Key, err = b64.DecodeString(*w.Key); err != nil {
			return r, fmt.Errorf("record %d key: %w", w.Offset, err)
		}
	}
	if w.Value != nil {
		if r.Value, err = b64.DecodeString(*w.Value); err != nil {
			return r, fmt.Errorf("record %d value: %w", w.Offset, err)
		}
	}
	if w.HeaderList != nil {
		hs := make([]segment.Header, len(w.HeaderList))
		for i, h := range w.HeaderList {
			hs[i].Key = h.Key
			if h.Value != nil {
				if hs[i].Value, err = b64.DecodeString(*h.Value); err != nil {
					return r, fmt.Errorf("record %d header %d (%q): %w", w.Offset, i, h.Key, err)
				}
			}
		}
		r.setHeaders(hs)
		return r, nil
	}
	if len(w.Headers) > 0 {
		names := make([]string, 0, len(w.Headers))
		for k := range w.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		hs := make([]segment.Header, len(names))
		for i, k := range names {
			hs[i].Key = k
			if hs[i].Value, err = b64.DecodeString(w.Headers[k]); err != nil {
				return r, fmt.Errorf("record %d header %q: %w", w.Offset, k, err)
			}
		}
		r.setHeaders(hs)
	}
	return r, nil
}

// setHeaders fills HeaderList with hs and Headers with each name's last value.
func (p *PolledRecord) setHeaders(hs []segment.Header) {
	if len(hs) == 0 {
		return
	}
	p.HeaderList = hs
	p.Headers = make(map[string][]byte, len(hs))
	for _, h := range hs {
		p.Headers[h.Key] = h.Value
	}
}

// objectSafe says whether headers hs survive the object form: names strictly ascending,
// no null value.
func objectSafe(hs []segment.Header) bool {
	for i, h := range hs {
		if h.Value == nil || (i > 0 && hs[i-1].Key >= h.Key) {
			return false
		}
	}
	return true
}

// b64Ptr is b in base64, nil for nil.
func b64Ptr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := b64.EncodeToString(b)
	return &s
}

// fromSegment converts a record decoded from a block; its slices alias the block.
func fromSegment(r segment.Record) PolledRecord {
	p := PolledRecord{Offset: r.Offset, Timestamp: time.UnixMilli(r.Timestamp), Key: r.Key, Value: r.Value}
	p.setHeaders(r.Headers)
	return p
}

// blockSize is an upper bound of the bytes r takes in a block (segment's record
// framing), whatever its position in a batch of at most wire.MaxRecordsPerBatch records
// and its timestamp's distance from the first record's: the Producer's byte accounting.
func blockSize(r Record) int {
	const (
		offsetLen = 2  // uvarint of a relative offset below 16384
		deltaLen  = 10 // varint of any timestamp delta
	)
	n := offsetLen + deltaLen + uvarintLen(2*len(r.Value)) + len(r.Value) + uvarintLen(len(r.Headers)+len(r.HeaderList))
	if r.Key == nil {
		n++
	} else {
		n += uvarintLen(2*len(r.Key)) + len(r.Key) // the key length is a zigzag varint
	}
	for k, v := range r.Headers {
		n += uvarintLen(len(k)) + len(k) + uvarintLen(2*len(v)) + len(v) // version 2's zigzag length
	}
	for _, h := range r.HeaderList {
		n += uvarintLen(len(h.Key)) + len(h.Key) + uvarintLen(2*len(h.Value)) + len(h.Value)
	}
	return n
}

func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

// jsonSize is an upper bound of the bytes toWire(r) adds to a request body, so JSON
// batches stay under the server's request limits.
func jsonSize(r Record) int {
	const overhead = 96 // field names, quotes, partition, timestamp
	n := overhead + base64Len(len(r.Key)) + base64Len(len(r.Value))
	for k, v := range r.Headers {
		n += 6*len(k) + 8 + base64Len(len(v)) // an escaped name character takes up to 6 bytes
	}
	for _, h := range r.HeaderList {
		n += 6*len(h.Key) + 24 + base64Len(len(h.Value)) // with "key" and "value" members
	}
	return n
}

func base64Len(n int) int { return (n + 2) / 3 * 4 }
