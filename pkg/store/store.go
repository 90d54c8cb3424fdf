// Package store defines Strata's two storage interfaces: ObjectStore, where segment
// objects live, and MetaStore, the domain operations on the metadata tables (topics, the
// index that sequences offsets, partitions, leases, commits, groups, members,
// idempotency). Implementations live in sub-packages named after what they wrap
// (s3, dynamo, local); storetest is the conformance suite every implementation must pass.
//
// Times are kept at millisecond precision: an implementation may truncate a stored time
// to the millisecond, and callers should pass millisecond times. A zero time.Time (no
// TTL, for example) must read back as the zero time, not as the Unix epoch.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Errors every implementation must return (wrapped or as-is) so callers can branch with
// errors.Is. Each backend maps its native errors to these in one place.
var (
	// ErrNotFound: the object, topic, group or row does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a put-if-absent found the key taken (object, topic).
	ErrExists = errors.New("store: already exists")
	// ErrConflict: an index entry already exists at the requested base offset. The error
	// is a *ConflictError carrying the winner's entry.
	ErrConflict = errors.New("store: index entry exists at base offset")
	// ErrIdempotencyKeyUsed: the idempotency row for (key, partition) already exists.
	// The error is an *IdempotencyError carrying the stored record.
	ErrIdempotencyKeyUsed = errors.New("store: idempotency key already used")
	// ErrLeaseHeld: a live lease is held by another member. The error is a *LeaseHeldError.
	ErrLeaseHeld = errors.New("store: lease held by another member")
	// ErrFenced: the caller is not the owner at that generation (obsolete or never was).
	ErrFenced = errors.New("store: fenced")
	// ErrStaleCommit: the commit is below the committed offset.
	ErrStaleCommit = errors.New("store: stale commit")
	// ErrGroupActive: a reset found a live lease of the group on the topic.
	ErrGroupActive = errors.New("store: group has a live lease")
	// ErrUnavailable: a retryable failure of the backend (throttling, timeout, 5xx).
	ErrUnavailable = errors.New("store: unavailable")
	// ErrCommitUnknown: a sequencer commit whose outcome the backend cannot know (the
	// request may have been applied, its answer lost, and the partition committed again
	// since). The caller must not retry the commit: an add is not idempotent. If it was
	// applied, the materialiser indexes it from the stream like any other commit.
	ErrCommitUnknown = errors.New("store: sequencer commit outcome unknown")
	// ErrBeyondEnd: a log start above the partition's high watermark.
	ErrBeyondEnd = errors.New("store: offset beyond the high watermark")
	// ErrSuperseded: a fence of the same or a later attempt of the request exists
	// (SequencerStore.FenceRequest).
	ErrSuperseded = errors.New("store: superseded by a later attempt of the request")
	// ErrFenceLimit: a fence beyond its owner's share of the topic's fences
	// (MaxOwnerFences) or beyond MaxFenceAttempts of its key; nothing was changed.
	ErrFenceLimit = errors.New("store: fence limit reached")
)

// ConflictError is returned by PutIndexEntry when another entry holds the base offset.
type ConflictError struct {
	// Existing is the winner's entry, read from the failed conditional write.
	Existing IndexEntry
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: index entry exists at %s/%d@%d (count %d)",
		e.Existing.Topic, e.Existing.Partition, e.Existing.BaseOffset, e.Existing.Count)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// IdempotencyError is returned when the idempotency row already exists.
type IdempotencyError struct {
	Existing IdempotencyRecord
}

func (e *IdempotencyError) Error() string {
	return fmt.Sprintf("store: idempotency key %q partition %d already used at offset %d",
		e.Existing.Key, e.Existing.Partition, e.Existing.BaseOffset)
}

// Is makes errors.Is(err, ErrIdempotencyKeyUsed) true.
func (e *IdempotencyError) Is(target error) bool { return target == ErrIdempotencyKeyUsed }

// LeaseHeldError is returned when a live lease of another member blocks an acquire.
type LeaseHeldError struct {
	Owner     string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("store: lease held by %q until %s", e.Owner, e.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// ObjectStore holds immutable segment objects. Keys are opaque strings, as in S3: '/'
// separates segments but means nothing else, so a key may name an object and prefix other
// keys at once, a key that only prefixes others names no object, and List matches string
// prefixes, not directories.
type ObjectStore interface {
	// Put must store data under key only if no object has that key (If-None-Match: *),
	// returning ErrExists otherwise; when it returns nil the object must be durable. An
	// object this same call stored (a retry of an attempt whose answer was lost) is not
	// "another object": Put must then return nil, never ErrExists. The object must be
	// stored with expiry's mark, on the write itself: an Expiring object is one the
	// deployment's lifecycle backstop may expire, a Kept one must never be taken by it
	// (see Expiry; a backend without a backstop may keep no mark).
	Put(ctx context.Context, key string, data []byte, expiry Expiry) error
	// Keep must make the object key a Kept one, as if it had been put Kept, leaving its
	// bytes as they are; keeping a Kept object changes nothing, and a missing object is
	// ErrNotFound. It is how a topic altered to stop deleting by time takes its objects
	// away from the backstop (pkg/compact).
	Keep(ctx context.Context, key string) error
	// GetRange must return exactly length bytes starting at offset, or ErrNotFound when
	// the object does not exist. A range past the end of the object, a negative offset or
	// a length below 1 is an error other than ErrNotFound, never a short read.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// Delete must remove the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// List must call fn for every object whose key starts with prefix, in key order
	// (byte-wise, as S3 lists), stopping at the first error fn returns and returning it.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
}

// Expiry says whether the deployment's lifecycle backstop may expire an object: on AWS
// the bucket's rule retention-backstop takes, a day past the deployment's maximum
// retention, only the segment objects that carry the tag ExpiryTagKey=ExpiryTagValue.
// Lifecycle filters have prefixes and tags but no negation, so the objects the rule may
// take are the marked ones, and an object carries the mark only when every record in it
// belongs to a topic that deletes by time (ExpiryOf).
type Expiry uint8

const (
	// Kept objects are never expired by the backstop: compacted topics' segment
	// objects, compaction rewrites of them, and garbage markers.
	Kept Expiry = iota
	// Expiring objects are those of topics whose retention deletes them by time, which
	// the backstop may expire once the longest retention has passed for them.
	Expiring
)

// The S3 object tag of an Expiring object, which the lifecycle rule's filter requires
// (infra/strata's newBucket).
const (
	ExpiryTagKey   = "strata-expiry"
	ExpiryTagValue = "retention"
)

// ExpiryOf is the mark of a segment object holding records of t: Expiring when t
// deletes by time (delete, compact,delete), Kept for a compact-only topic.
func ExpiryOf(t Topic) Expiry {
	if t.DeletesByTime() {
		return Expiring
	}
	return Kept
}

func (e Expiry) String() string {
	switch e {
	case Kept:
		return "kept"
	case Expiring:
		return "expiring"
	}
	return fmt.Sprintf("expiry(%d)", uint8(e))
}

// ExpiryReader is an ObjectStore that keeps Put's mark and can read it back (S3's object
// tags); the conformance suite checks the marks of a backend that has it.
type ExpiryReader interface {
	// ObjectExpiry must return the mark the object key carries now, ErrNotFound when
	// it does not exist.
	ObjectExpiry(ctx context.Context, key string) (Expiry, error)
}

// BatchDeleter is an ObjectStore that deletes many objects in few requests (S3's
// DeleteObjects takes 1,000 keys). Retention uses it when the store has it.
type BatchDeleter interface {
	// DeleteBatch must remove exactly the objects keys name and no other (a key that
	// only prefixes others is no object); a missing object counts as deleted, and an
	// empty list does nothing. When some keys may not be deleted it must return a
	// *DeleteBatchError naming each of them, its error wrapping this package's errors.
	DeleteBatch(ctx context.Context, keys []string) error
}

// DeleteBatchError reports the keys a DeleteBatch did not delete, each with its error;
// the others were deleted. errors.Is matches any of the keys' errors.
type DeleteBatchError struct {
	Failed []string
	Errs   []error
}

func (e *DeleteBatchError) Error() string {
	if len(e.Failed) == 0 {
		return "delete batch: no key failed"
	}
	return fmt.Sprintf("delete batch: %d keys not deleted, first %q: %v", len(e.Failed), e.Failed[0], e.Errs[0])
}

// Unwrap returns the keys' errors.
func (e *DeleteBatchError) Unwrap() []error { return e.Errs }

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key  string
	Size int64
}

// Topic is a topic's configuration, fixed at creation.
type Topic struct {
	Name string
	// Incarnation tells apart the topics that have had one name (Kafka's topic ID,
	// KIP-516): a topic created again after a delete is a new incarnation, and its
	// records, counters, idempotency claims and segment objects are keyed by ID(), so
	// nothing of the old one is ever seen through the new one. The empty incarnation is
	// the layout of topics created before incarnations, whose keys carry the name alone.
	Incarnation string
	Partitions  int32
	Retention   time.Duration
	// RetentionPin is how far beyond Retention a record may be kept while a group that
	// has committed on the topic has not read it yet (0: never). Retention holds a
	// partition's log start at such a group's position up to this cap (DESIGN.md §4).
	RetentionPin time.Duration
	CreatedAt    time.Time
	// LogAppendTime says the topic stamps every record with its append time, whatever
	// timestamp the producer gave (Kafka's message.timestamp.type=LogAppendTime); false
	// keeps the producer's (CreateTime).
	LogAppendTime bool
	// Cleanup is how records leave the topic: by time (CleanupDelete, the default, also
	// meant by ""), by key (CleanupCompact: the latest record per key is kept for ever),
	// or both (CleanupCompactDelete). Kafka's cleanup.policy.
	Cleanup CleanupPolicy
	// MinCompactionLag is how long after its append a record is never compacted away
	// (Kafka's min.compaction.lag.ms; 0: any record older than the head may go).
	MinCompactionLag time.Duration
	// MaxCompactionLag bounds how long an overwritten record may stay before a
	// compaction pass removes it (Kafka's max.compaction.lag.ms; 0: no bound, passes
	// run by dirty ratio only).
	MaxCompactionLag time.Duration
	// DeleteRetention is how long a tombstone (a null value) of a compacted topic is
	// kept after its append before compaction may remove it with the key (Kafka's
	// delete.retention.ms; DefaultDeleteRetention when 0).
	DeleteRetention time.Duration
}

// CleanupPolicy is a topic's cleanup.policy: CleanupDelete, CleanupCompact or
// CleanupCompactDelete; the empty policy is CleanupDelete.
type CleanupPolicy string

// The cleanup policies, spelled as Kafka spells cleanup.policy.
const (
	CleanupDelete        CleanupPolicy = "delete"
	CleanupCompact       CleanupPolicy = "compact"
	CleanupCompactDelete CleanupPolicy = "compact,delete"
)

// DefaultDeleteRetention is a compacted topic's tombstone retention when it sets none
// (Kafka's delete.retention.ms default: one day).
const DefaultDeleteRetention = 24 * time.Hour

// ParseCleanupPolicy reads a cleanup.policy as Kafka writes it: "delete", "compact",
// or both comma-separated in either order (spaces allowed); "" is "delete". Anything
// else is an error naming the accepted values.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var compact, del bool
	if strings.TrimSpace(s) == "" {
		return CleanupDelete, nil
	}
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case "delete":
			del = true
		case "compact":
			compact = true
		default:
			return "", fmt.Errorf("cleanup policy %q: want delete, compact or compact,delete", s)
		}
	}
	switch {
	case compact && del:
		return CleanupCompactDelete, nil
	case compact:
		return CleanupCompact, nil
	default:
		return CleanupDelete, nil
	}
}

// Compacted reports whether the topic keeps the latest record per key.
func (t Topic) Compacted() bool {
	return t.Cleanup == CleanupCompact || t.Cleanup == CleanupCompactDelete
}

// DeletesByTime reports whether retention drops the topic's records by age.
func (t Topic) DeletesByTime() bool { return t.Cleanup != CleanupCompact }

// TombstoneRetention is how long a tombstone of t is kept (DeleteRetention, or
// DefaultDeleteRetention when unset).
func (t Topic) TombstoneRetention() time.Duration {
	if t.DeleteRetention > 0 {
		return t.DeleteRetention
	}
	return DefaultDeleteRetention
}

// KeptFor is how long after its append a record of t is kept: the retention, plus the
// pin cap for a group that pins it (one that has committed on the topic). It is the one
// formula retention, the time to data loss and the effect markers' expiry count with.
// A topic kept "for ever" (the largest retention the API takes, about 292 years) keeps
// that: the sum saturates (SatAdd) instead of wrapping into the past.
func (t Topic) KeptFor(pinned bool) time.Duration {
	if pinned {
		return SatAdd(t.Retention, t.RetentionPin)
	}
	return t.Retention
}

// SatAdd is a + b for durations that are not negative, or the largest duration when the
// sum would overflow: expiry times built from a retention must never wrap into the past.
func SatAdd(a, b time.Duration) time.Duration {
	if a > 0 && b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// ID is the topic's key in the sequencer, index and idempotency tables: see TopicID.
func (t Topic) ID() string { return TopicID(t.Name, t.Incarnation) }

// TopicID is the key of incarnation of topic name in the per-partition tables: the name
// for the legacy (empty) incarnation, else "name#incarnation". Names cannot contain '#'
// (docs/API.md), so an ID names one incarnation and SplitTopicID inverts it.
func TopicID(name, incarnation string) string {
	if incarnation == "" {
		return name
	}
	return name + "#" + incarnation
}

// ValidIncarnation reports whether s can be an incarnation: 1 to 64 lowercase letters
// and digits (pkg/log makes them lowercase ULIDs), so it holds neither the '#' of a
// TopicID nor the '/' of an object key, and folds to itself on a case-insensitive disk.
func ValidIncarnation(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// TopicCommitPrefix begins the incarnation of every topic whose partitions are sequenced
// by a topic commit (SequencerStore.SequenceBatch: one atomic step per batch for all its
// partitions) instead of one counter per partition. The layout is fixed at creation and
// named by the incarnation, so every store call that carries a TopicID knows it without
// a read; incarnations without the prefix (the ULIDs of earlier versions, which begin
// with a digit, and the legacy empty one) keep their per-partition counters.
const TopicCommitPrefix = "tc"

// TopicCommits reports whether the topic incarnation id (a TopicID) has the topic commit
// layout (TopicCommitPrefix).
func TopicCommits(id string) bool {
	_, inc := SplitTopicID(id)
	return len(inc) > len(TopicCommitPrefix) && strings.HasPrefix(inc, TopicCommitPrefix)
}

// SplitTopicID returns the name and incarnation a TopicID was made of.
func SplitTopicID(id string) (name, incarnation string) {
	name, incarnation, _ = strings.Cut(id, "#")
	return name, incarnation
}

// IndexEntry maps a contiguous run of a partition's offsets to a block of a segment
// object. Entries of a partition tile its offsets: entry n+1's BaseOffset is entry n's
// BaseOffset+Count.
type IndexEntry struct {
	Topic      string
	Partition  int32
	BaseOffset int64
	Count      int64
	ObjectKey  string
	// ByteOffset and ByteLength locate the block within the object.
	ByteOffset int64
	ByteLength int64
	// MaxTimestamp is the largest record timestamp in the block.
	MaxTimestamp time.Time
	// AppendedAt is when the entry was written; retention counts from it.
	AppendedAt time.Time
	// ExpiresAt is the row's TTL (retention plus a grace); zero means none.
	ExpiresAt time.Time
	// Duplicate marks the block of an idempotent append whose key another commit
	// claimed first: its offsets exist (offsets stay dense) but readers skip its records.
	Duplicate bool
	// Skip lists the runs of the entry's offsets that readers skip, EncodeSkip's form of
	// ascending SkipRanges (a string, so entries stay comparable): the blocks of
	// idempotent requests of a shared commit whose claim another attempt holds.
	// Duplicate is the whole entry.
	Skip string
	// MembersOffset and MembersLength locate the members table of the entry's batch in
	// its object (SeqCommit's), zero when the batch has none: a producer request's retry
	// reads it to find an earlier attempt.
	MembersOffset, MembersLength int64
	// Batch is, on a topic commit topic, the topic's number of the entry's batch
	// (SeqCommit.Batch), 0 for an entry written before entries kept it: a producer
	// request's retry searches the entries of the batches numbered above its floor.
	Batch int64
}

// SkipRange is a run of an index entry's offsets readers skip: Count offsets from
// BaseOffset+Offset.
type SkipRange struct {
	Offset, Count int64
}

// EncodeSkip is the Skip of an entry skipping runs: "offset+count" per run, comma
// separated.
func EncodeSkip(runs []SkipRange) string {
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d+%d", r.Offset, r.Count)
	}
	return b.String()
}

// SkipRanges decodes e.Skip, refusing runs that are empty, overlap, are out of order or
// lie outside the entry's Count offsets.
func (e IndexEntry) SkipRanges() ([]SkipRange, error) {
	if e.Skip == "" {
		return nil, nil
	}
	var out []SkipRange
	next := int64(0)
	for _, f := range strings.Split(e.Skip, ",") {
		o, n, ok := strings.Cut(f, "+")
		off, err1 := strconv.ParseInt(o, 10, 64)
		cnt, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil || off < next || cnt < 1 || cnt > e.Count-off {
			return nil, fmt.Errorf("store: entry %s/%d@%d: bad skip %q", e.Topic, e.Partition, e.BaseOffset, e.Skip)
		}
		out = append(out, SkipRange{Offset: off, Count: cnt})
		next = off + cnt
	}
	return out, nil
}

// End is the offset after the entry's last record.
func (e IndexEntry) End() int64 { return e.BaseOffset + e.Count }

// IdempotencyRecord remembers an append already done for (Key, Partition).
type IdempotencyRecord struct {
	Key       string
	Partition int32
	// BodyHash identifies the request body, so a reuse with another body is detected.
	BodyHash   string
	BaseOffset int64
	Count      int64
	// Partitions is the topic's partition count the request's records were placed by, set
	// on the request-level claim (0 when not recorded): a retry after the topic gained
	// partitions is placed as its first attempt was.
	Partitions int32
	ExpiresAt  time.Time
}

// RequestClaim is an idempotent request's one claim (a folded claim, stored under the
// request-claim partition -1 of its key): the body its key names, the partition count
// its records were placed by (0 for a request of blocks, placed as sent) and, per
// partition, the offsets its records hold. It is written after the request's commits,
// once, and each partition's slot is write-once: the attempt whose slot is stored first
// owns the partition, and another attempt's block there is skipped by readers.
type RequestClaim struct {
	Key      string
	BodyHash string
	// Count is the request's record count.
	Count      int64
	Partitions int32
	// Parts are the claimed partitions, ascending, each once.
	Parts     []PartClaim
	ExpiresAt time.Time
}

// PartClaim is one partition's slot of a RequestClaim.
type PartClaim struct {
	Partition  int32
	BaseOffset int64
	Count      int64
}

// Part returns the claim's slot of partition p.
func (c RequestClaim) Part(p int32) (PartClaim, bool) {
	for _, pc := range c.Parts {
		if pc.Partition == p {
			return pc, true
		}
	}
	return PartClaim{}, false
}

// Matches reports whether rec names the same request as the stored claim c: the same
// body, placed by the same partition count (0 on either side matches any).
func (c RequestClaim) Matches(rec RequestClaim) bool {
	return c.BodyHash == rec.BodyHash && c.Count == rec.Count &&
		(c.Partitions == 0 || rec.Partitions == 0 || c.Partitions == rec.Partitions)
}

// MergeClaim is ClaimRequest's decision, which each backend applies in one atomic step:
// the claim to store given the stored one (nil when the key has none) and write false
// when nothing changes — a stored claim of another request, or one that already has a
// slot for each of rec's partitions. Existing slots and the stored expiry are kept.
func MergeClaim(stored *RequestClaim, rec RequestClaim) (next RequestClaim, write bool) {
	if stored == nil {
		rec.Parts = sortParts(rec.Parts)
		return rec, true
	}
	next = *stored
	if !stored.Matches(rec) {
		return next, false
	}
	next.Parts = append([]PartClaim(nil), stored.Parts...)
	for _, pc := range rec.Parts {
		if _, ok := stored.Part(pc.Partition); !ok {
			next.Parts = append(next.Parts, pc)
			write = true
		}
	}
	next.Parts = sortParts(next.Parts)
	return next, write
}

func sortParts(ps []PartClaim) []PartClaim {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b PartClaim) int { return cmp.Compare(a.Partition, b.Partition) })
	return out
}

// CommitMember is one idempotent request's block in a shared commit: its claim's
// identity and where its records lie in the commit (Offset records from the entry's
// base, Count records).
type CommitMember struct {
	Key        string
	BodyHash   string
	Total      int64 // the request's record count (RequestClaim.Count)
	Partitions int32
	Offset     int64
	Count      int64
	// Producer marks a producer session's request (fenced idempotency): it has no claim;
	// its block is skipped when a fence of the commit applies to it (RequestFence.Applies), else
	// owned. Attempt is which attempt of the request the block is, from 0.
	Producer bool
	Attempt  int32
}

// RequestFence marks a retry of a producer request (fenced idempotency): on a topic of the
// topic commit layout (TopicCommits), the blocks of the request's earlier attempts that
// batches committed after the fence carry are skipped, so the retry, having searched
// the batches before the fence, decides alone whether the request is in the log.
type RequestFence struct {
	// Key is the request's scoped key (pkg/log's ScopedKey, as CommitMember.Key).
	Key string
	// Owner names who fences (pkg/log: the appending principal's scope, at most
	// MaxFenceOwner bytes, "" for in-process appenders): one owner's fences never take
	// the share of a topic's fences kept for the others (MaxOwnerFences).
	Owner string
	// Attempt is the fencing attempt: attempts below it are fenced.
	Attempt int32
	// Batch is the topic's batch count when the fence was set (set by the store): it
	// applies to batches numbered above it.
	Batch int64
	// At is when the fence was set.
	At time.Time
}

// FenceHorizon is how long a fence must be kept: past it no attempt it fences can still
// be committed, so a commit may drop fences older than this. Every attempt it fences was
// sent before it; a front (API Gateway, a function URL) delivers a request within a
// minute of its send or never; and the log commits a producer request within two commit
// windows of receiving it or not at all (pkg/log refuses a commit window above
// MaxProducerCommitWindow): four minutes. It is longer by wire.MaxRetryElapsed, so that
// a store pruning a request's fences from a view older than its latest attempt (every
// attempt comes within that of the first) still drops nothing an attempt may need.
// Short, because every fence present is bytes of the topic item, which every batch's
// write is billed on.
const FenceHorizon = 10 * time.Minute

// MaxProducerCommitWindow is the longest commit window under which FenceHorizon holds.
const MaxProducerCommitWindow = 90 * time.Second

// MaxFences bounds the fences a topic holds: a FenceRequest finding the topic with as
// many (by the backend's latest view of it) must refuse with ErrUnavailable, changing
// nothing, so that a storm of retries cannot grow the topic item (and every batch's
// write) without bound; the retries succeed once the fences expire. One owner never
// reaches it alone (MaxOwnerFences).
const MaxFences = 256

// MaxOwnerFences is the share of a topic's fences kept for the owners (RequestFence.Owner)
// holding fewer: a fence of a new key of an owner holding fences of MaxOwnerFences keys
// or more is refused with ErrFenceLimit, changing nothing, once the topic holds
// MaxFences-MaxOwnerFences keys. So one owner holds at most MaxFences-MaxOwnerFences
// (192) — as many as the topic can spare while it retries alone — and the last
// MaxOwnerFences stay for the others: no owner's retries use up another's.
const MaxOwnerFences = 64

// MaxFenceAttempts bounds the attempts of one request that fence (1 to it): each adds
// an attribute to the topic item, so a client piling attempts on one key could
// otherwise grow it without bound. A fence of a later attempt is refused with
// ErrFenceLimit before anything is read or written.
const MaxFenceAttempts = 16

// MaxFenceOwner bounds a fence's owner.
const MaxFenceOwner = 64

// Applies reports whether f skips attempt of the request key in the topic's batch
// numbered batch.
func (f RequestFence) Applies(key string, attempt int32, batch int64) bool {
	return f.Key == key && attempt < f.Attempt && batch > f.Batch
}

// LatestFence returns the fence of key's latest attempt among fences, and whether key
// has one.
func LatestFence(fences []RequestFence, key string) (RequestFence, bool) {
	var out RequestFence
	ok := false
	for _, f := range fences {
		if f.Key == key && (!ok || f.Attempt > out.Attempt) {
			out, ok = f, true
		}
	}
	return out, ok
}

// FenceKeys counts the request keys fences are of, which MaxFences bounds.
func FenceKeys(fences []RequestFence) int {
	keys := map[string]bool{}
	for _, f := range fences {
		keys[f.Key] = true
	}
	return len(keys)
}

// OwnerFenceKeys counts the request keys owner holds fences of (MaxOwnerFences).
func OwnerFenceKeys(fences []RequestFence, owner string) int {
	keys := map[string]bool{}
	for _, f := range fences {
		if f.Owner == owner {
			keys[f.Key] = true
		}
	}
	return len(keys)
}

// FenceLimits are a store's bounds on the fences a topic holds: Fences (MaxFences by
// default) and the share kept for the owners holding fewer, OwnerFences (MaxOwnerFences
// by default). A zero field is its default. Deployments keep the defaults; a test may
// set smaller ones so that reaching them takes a few writes, not hundreds.
type FenceLimits struct {
	Fences      int
	OwnerFences int
}

// OrDefault is l with every zero field set to its default.
func (l FenceLimits) OrDefault() FenceLimits {
	if l.Fences <= 0 {
		l.Fences = MaxFences
	}
	if l.OwnerFences <= 0 {
		l.OwnerFences = MaxOwnerFences
	}
	return l
}

// Share is the most keys one owner may hold fences of while the topic has no more
// room: Fences-OwnerFences.
func (l FenceLimits) Share() int {
	l = l.OrDefault()
	return l.Fences - l.OwnerFences
}

// Room is what every backend checks of a fence of a new key (none of its fences held)
// against the fences it last saw on the topic: ErrFenceLimit when f's owner holds
// OwnerFences keys or more and the topic Fences-OwnerFences, else ErrUnavailable when
// the topic holds Fences; nil when there is room.
func (l FenceLimits) Room(held []RequestFence, f RequestFence) error {
	l = l.OrDefault()
	n, own := FenceKeys(held), OwnerFenceKeys(held, f.Owner)
	if own >= l.OwnerFences && n >= l.Fences-l.OwnerFences {
		return fmt.Errorf("its owner holds fences of %d requests and the topic's last %d are kept for others: %w", own, l.OwnerFences, ErrFenceLimit)
	}
	if n >= l.Fences {
		return fmt.Errorf("fences of %d keys held: %w", n, ErrUnavailable)
	}
	return nil
}

// FencePoint is a topic's state when a fence was set: every batch numbered at most
// Batch was committed before it.
type FencePoint struct {
	Batch int64
	// Next is each partition's high watermark then (a partition absent is at 0).
	Next map[int32]int64
}

// MaxFenceKey bounds a fence's key (a scoped idempotency key).
const MaxFenceKey = 1024

// CheckFence is what every backend checks of a FenceRequest before writing anything:
// a topic of the topic commit layout, a key of 1 to MaxFenceKey bytes, an owner of at
// most MaxFenceOwner, an attempt from 1 (attempt 0 fences nothing) to MaxFenceAttempts
// (beyond it ErrFenceLimit) and a time after the epoch.
func CheckFence(topic string, f RequestFence) error {
	what := fmt.Sprintf("fence %q attempt %d on %s", f.Key, f.Attempt, topic)
	switch {
	case !TopicCommits(topic):
		return fmt.Errorf("%s: the topic is not of the topic commit layout", what)
	case f.Key == "" || len(f.Key) > MaxFenceKey:
		return fmt.Errorf("%s: the key must have 1 to %d bytes", what, MaxFenceKey)
	case len(f.Owner) > MaxFenceOwner:
		return fmt.Errorf("%s: the owner must have at most %d bytes", what, MaxFenceOwner)
	case f.Attempt < 1:
		return fmt.Errorf("%s: a fence's attempt must be at least 1", what)
	case f.Attempt > MaxFenceAttempts:
		return fmt.Errorf("%s: at most %d attempts of a request fence: %w", what, MaxFenceAttempts, ErrFenceLimit)
	case f.At.IsZero() || f.At.UnixMilli() < 0:
		return fmt.Errorf("%s: a fence must have a time after the epoch", what)
	}
	return nil
}

// Owns reports whether member m of a commit at partition p with base offset base owns
// its block given its claim as stored: the claim names m's request and its slot of p is
// m's block. A block a member does not own is skipped by readers.
func (m CommitMember) Owns(claim RequestClaim, p int32, base int64) bool {
	if !claim.Matches(RequestClaim{BodyHash: m.BodyHash, Count: m.Total, Partitions: m.Partitions}) {
		return false
	}
	pc, ok := claim.Part(p)
	return ok && pc.BaseOffset == base+m.Offset && pc.Count == m.Count
}

// SkipFor is the Skip of commit c's entry: the blocks of its claimed members that their
// claims (c.Claims, in c.Members order) do not own, and the blocks of its producer
// members that a fence of c.Fences applies to in batch c.Batch (a producer member's
// claim, if c.Claims has one, is ignored).
func SkipFor(c SeqCommit) []SkipRange {
	var out []SkipRange
	for i, m := range c.Members {
		skip := false
		if m.Producer {
			for _, f := range c.Fences {
				skip = skip || f.Applies(m.Key, m.Attempt, c.Batch)
			}
		} else {
			skip = !m.Owns(c.Claims[i], c.Entry.Partition, c.Entry.BaseOffset)
		}
		if skip {
			out = append(out, SkipRange{Offset: m.Offset, Count: m.Count})
		}
	}
	slices.SortFunc(out, func(a, b SkipRange) int { return cmp.Compare(a.Offset, b.Offset) })
	return out
}

// SetSkip sets e's skipped runs, marking the whole entry Duplicate when they cover it.
func (e *IndexEntry) SetSkip(skip []SkipRange) {
	var n int64
	for _, s := range skip {
		n += s.Count
	}
	if len(skip) > 0 && n >= e.Count {
		e.Duplicate, e.Skip = true, ""
		return
	}
	e.Skip = EncodeSkip(skip)
}

// SeqCommit is one append's commit to one partition (identified, like its attempt, by
// Entry's object key and byte offset, which no other commit shares): the counter add that assigns the
// block its offsets, and the payload the sequencer keeps (and streams) so that the index
// entry can be written by whoever gets there first — the appender or the materialiser.
type SeqCommit struct {
	// Entry is the committed block. Sequence sets Entry.BaseOffset; Entry.Duplicate is
	// decided when the entry is materialised.
	Entry IndexEntry
	// IdempotencyKey ("topic#key") and BodyHash are set for an idempotent append.
	IdempotencyKey string
	BodyHash       string
	// ClaimExpiresAt is the TTL of the idempotency claim a materialising Sequence writes;
	// zero means Entry.ExpiresAt.
	ClaimExpiresAt time.Time
	// Seq is the partition's commit number, from 1 (set by Sequence).
	Seq int64
	// Materialized reports that the backend wrote the index entry (and claimed the
	// idempotency key) atomically with the commit, so nothing is left to do.
	Materialized bool
	// Claim is the idempotency record that owns (IdempotencyKey, partition) after a
	// materialised idempotent commit: this commit's own, or an earlier attempt's (then
	// Entry.Duplicate is true). (The per-partition claims of the format before folded
	// claims: commits sequenced before the upgrade carry IdempotencyKey.)
	Claim *IdempotencyRecord
	// Members are the idempotent requests whose blocks the commit holds, set by the
	// appender; a materialising Sequence claims each one's slot of this partition (as
	// ClaimRequest) and sets Claims (in Members order) and Entry.Skip. A backend need
	// not keep Members: MembersOffset and MembersLength, which it must keep and return
	// on Last, locate the same table in the segment object (the materialiser reads it);
	// every result and state must carry them on Entry too, which the entry written for
	// the commit keeps (conformance case EntryMembersRoundTrip).
	Members                      []CommitMember
	MembersOffset, MembersLength int64
	Claims                       []RequestClaim
	// Batch is, on a topic commit topic (TopicCommits), the topic's number of the batch
	// the commit belongs to (from 1; set by SequenceBatch and on stream states), 0 when
	// the backend cannot tell (a lost answer resolved from the index). Fences are the
	// topic's fences as the commit's batch found them: every fence that may apply to it
	// (RequestFence.Applies with Batch), set whenever Batch is. Every result and state
	// carrying Batch must carry it on Entry too, which the entry written for the commit
	// keeps (conformance case Batch/EntryBatchRoundTrip).
	Batch  int64
	Fences []RequestFence
}

// SeqState is a partition's sequencer item.
type SeqState struct {
	Topic     string
	Partition int32
	// NextOffset is the high watermark: the next offset a commit assigns. It never
	// moves back and never expires.
	NextOffset int64
	// NextSeq is the number of commits so far.
	NextSeq int64
	// LogStart is the first readable offset (retention raises it, never above NextOffset).
	LogStart int64
	// Last is the newest commit, nil before the first. On a topic commit topic
	// (TopicCommits) it is the partition's last commit in the topic's newest batch, nil
	// when that batch did not touch the partition.
	Last *SeqCommit
	// BatchAt is, on a topic commit topic whose newest batch did not touch this
	// partition (Last nil, NextSeq > 0), that batch's time: the partition's newest commit
	// was appended at most the commit window after it (it committed before that batch,
	// which committed within the window of its time). Zero otherwise.
	BatchAt time.Time
}

// SequencerStore is the per-partition offset counter: commits never race to lose, they
// queue on one atomic add per partition.
type SequencerStore interface {
	// Sequence must atomically add c.Entry.Count to the partition's next offset, count
	// the commit and record c as the newest commit, and return c with Entry.BaseOffset
	// set to the next offset before the add and Seq set. A partition without a counter
	// must first be seeded from its index (its newest entry's end; the migration from
	// the index-as-sequencer format) exactly as Sequencer does. A backend that can write
	// the index entry and the idempotency claim in the same atomic step may do so and
	// set Materialized (and Claim). An outcome the backend cannot know must return
	// ErrCommitUnknown, never a blind retry of the add.
	Sequence(ctx context.Context, c SeqCommit) (SeqCommit, error)
	// SequenceBatch must sequence cs — the commits of one batch, all of one topic
	// incarnation, in the order their blocks lie in the object — in one atomic step:
	// every commit is applied or none is, a partition's commits take consecutive offsets
	// in cs's order after those it had, and each result is what Sequence returns for it
	// (the results in cs's order). A commit of no partition of the batch is touched by
	// another's failure. On a topic commit topic (TopicCommits) it is the topic's one
	// write per batch; on another it may apply the commits one by one, and then each
	// error is its commit's (errs has cs's length, nil where the commit is applied). An
	// outcome it cannot know must be ErrCommitUnknown for every commit it may hold.
	SequenceBatch(ctx context.Context, cs []SeqCommit) (out []SeqCommit, errs []error)
	// Sequencer must return the partition's state read strongly consistently, seeding a
	// missing counter first as Sequence does (a partition never written reads as zeros).
	Sequencer(ctx context.Context, topic string, partition int32) (SeqState, error)
	// SequencerEventual must return the partition's state as Sequencer does, or an
	// older one: a backend may read a replica that lags the latest writes (DynamoDB's
	// eventually consistent read, half the price of a strongly consistent one), so its
	// offsets may be behind, never ahead of, those of a Sequencer call made after it
	// returns. A backend without replicas may answer it with Sequencer.
	SequencerEventual(ctx context.Context, topic string, partition int32) (SeqState, error)
	// ClaimIdempotency must store rec only if (rec.Key, rec.Partition) has no record,
	// else return *IdempotencyError with the stored one and change nothing.
	ClaimIdempotency(ctx context.Context, rec IdempotencyRecord) error
	// ClaimRequest must apply MergeClaim to rec.Key's folded claim atomically (store rec
	// when the key has none; add the slots it lacks when it names rec's request; else
	// change nothing) and return the claim as stored after the call. A key whose request
	// row is of the per-partition format (an IdempotencyRecord of partition -1, written
	// before folded claims) must be resolved per partition instead: each of rec.Parts is
	// claimed as ClaimIdempotency(key, partition) would, and the answer carries that
	// row's body hash, count and partition count with the per-partition claims stored.
	ClaimRequest(ctx context.Context, rec RequestClaim) (RequestClaim, error)
	// GetRequestClaim must return key's claim as ClaimRequest would answer it for the
	// given partitions, writing nothing: the folded claim, or for a key of the
	// per-partition format its request row with those partitions' stored claims. A key
	// without a request row is ErrNotFound. It may read eventually consistently: it
	// spares a retry its writes, and ClaimRequest still decides.
	GetRequestClaim(ctx context.Context, key string, partitions []int32) (RequestClaim, error)
	// FenceRequest must, on a topic of the topic commit layout (TopicCommits), add f to
	// the topic's fences atomically with respect to its batches, with Batch set to the
	// topic's batch count, unless the topic has a fence of f.Key whose Attempt is at
	// least f.Attempt (then ErrSuperseded, nothing changed); it returns the point it was
	// set at. A later attempt's fence is added beside the key's earlier ones, never in
	// their place: a batch must be decided alike from any later view of it (a lost
	// answer resolved by a read, a fence's stream record re-carrying the newest batch),
	// and an earlier fence may apply to it where the later one does not. Every batch
	// committed after it must carry it in Fences (SequenceBatch's
	// results and the stream's states) until FenceHorizon after f.At; only a commit may
	// drop it, one whose AppendedAt is past that. A topic of another layout, or a fence
	// CheckFence refuses, must be refused with an error, changing nothing; so must a
	// fence of a new key that FenceLimits.Room refuses (ErrFenceLimit when its owner has taken
	// its share, ErrUnavailable when the topic holds MaxFences). An outcome the
	// backend cannot tell (an applied fence whose point is lost) is ErrCommitUnknown.
	FenceRequest(ctx context.Context, topic string, f RequestFence) (FencePoint, error)
}

// TopicStore holds topic configurations.
type TopicStore interface {
	// CreateTopic must store t only if no live topic has its name, else return
	// ErrExists; a deleted topic's name is free (TopicAdminStore.DeleteTopic). It should
	// also create its partitions' sequencer counters (keyed by t.ID()) at zero (a
	// counter it does not create is seeded on first use). Callers must give every new
	// topic a fresh Incarnation; the empty one is kept for topics stored before them.
	CreateTopic(ctx context.Context, t Topic) error
	// GetTopic must return the live topic of the name in one read, and ErrNotFound for
	// an unknown or deleted one.
	GetTopic(ctx context.Context, name string) (Topic, error)
	// ListTopics must return every live topic name in lexical order.
	ListTopics(ctx context.Context) ([]string, error)
}

// IndexStore is the per-partition offset sequencer and the map from offsets to blocks.
type IndexStore interface {
	// PutIndexEntry must write e only if no entry of (topic, partition) has its
	// BaseOffset, atomically with respect to concurrent callers; otherwise it must
	// return a *ConflictError holding the existing entry and write nothing. Entries are
	// write-once: the sequencer assigns each base offset to one commit, so the only
	// conflict in normal operation is the appender and the materialiser writing the
	// same commit.
	PutIndexEntry(ctx context.Context, e IndexEntry) error
	// LastIndexEntry must return the entry with the greatest BaseOffset of the
	// partition, read strongly consistently; ok is false when the partition is empty.
	// It is not the high watermark (entries expire; see SequencerStore).
	LastIndexEntry(ctx context.Context, topic string, partition int32) (e IndexEntry, ok bool, err error)
	// IndexEntries must return, in offset order, the entry containing offset from (the
	// greatest BaseOffset <= from, even when from is at or past its End) if any, followed
	// by later entries, at most limit (limit >= 1).
	IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]IndexEntry, error)
	// IndexEntriesEventual must answer as IndexEntries does, or as it did a moment
	// before: a backend may read a replica (DynamoDB's eventually consistent query, half
	// the read units), whose answer may lack entries written lately — stopping short or
	// skipping one — and hold entries deleted or replaced lately. A caller must check the
	// answer (contiguity, the objects it names) and ask IndexEntries when it falls short.
	// A backend without replicas may answer it with IndexEntries.
	IndexEntriesEventual(ctx context.Context, topic string, partition int32, from int64, limit int) ([]IndexEntry, error)
	// GetIdempotency must return the record for (key, partition) or ErrNotFound.
	GetIdempotency(ctx context.Context, key string, partition int32) (IdempotencyRecord, error)
	// DeleteIndexEntry must remove the entry at baseOffset; a missing entry is not an error.
	DeleteIndexEntry(ctx context.Context, topic string, partition int32, baseOffset int64) error
	// DeleteIndexRange must delete every entry of (topic, partition) lying wholly below
	// offset below (End() <= below) and nothing else: an entry holding offset below or a
	// later one, and other partitions, must stay. It returns how many it deleted. It is
	// retention's delete, so its cost must grow with the entries it deletes, not with
	// those retained. It need not be atomic: after an error any subset of the range may
	// be gone, and calling it again must finish the job.
	DeleteIndexRange(ctx context.Context, topic string, partition int32, below int64) (int, error)
}

// PartitionStore holds the log start offset, written by retention. It lives on the
// partition's sequencer item, beside the high watermark it must never pass.
type PartitionStore interface {
	// LogStart must return the partition's log start offset, 0 if never set.
	LogStart(ctx context.Context, topic string, partition int32) (int64, error)
	// AdvanceLogStart must raise the log start offset to offset without touching the
	// high watermark; it must never lower it (a lower offset is ignored, not an error)
	// and must refuse an offset above the high watermark with ErrBeyondEnd.
	AdvanceLogStart(ctx context.Context, topic string, partition int32, offset int64) error
}

// Assignment is the lease row of (group, topic, partition).
type Assignment struct {
	Group      string
	Topic      string
	Partition  int32
	Owner      string // empty when released
	Generation int64
	ExpiresAt  time.Time
	// GroupDeleted: DeleteGroup fenced the row and nobody acquired it since. AcquireLease
	// reports it as it found the row (and clears it), so whoever leases a partition of a
	// deleted group learns the group must be created again.
	GroupDeleted bool
	// Incarnation is the topic incarnation the row is of, set by readers that resolve
	// topic names (group.ByIncarnation); store.TopicRef(Topic, Incarnation) names it.
	Incarnation string
}

// Live reports whether the lease is held at now.
func (a Assignment) Live(now time.Time) bool { return a.Owner != "" && now.Before(a.ExpiresAt) }

// CommitRow is the committed position of (group, topic, partition).
type CommitRow struct {
	Group       string
	Topic       string
	Partition   int32
	NextOffset  int64
	Generation  int64
	CommittedAt time.Time
	// Metadata is the committer's string stored with the position (Kafka's OffsetCommit
	// metadata; pkg/group bounds it), replaced by every commit.
	Metadata string
	// Backward, an input of Commit only (never stored, false on rows read back), lets
	// the owner at its generation move the position below the committed one: a Kafka
	// member's seek-and-commit. The fence applies as ever.
	Backward bool
	// Completed are runs of offsets above NextOffset the consumer has already handled
	// (sorted, disjoint, non-empty; the coordinator checks them), stored with the commit
	// so that a new owner skips them. A commit replaces them; a reset clears them.
	Completed []OffsetRange
	// LeaseExpiresAt and ReleaseLease, inputs of Commit only (never stored, zero on rows
	// read back), write the lease in the commit's own atomic operation, so that a
	// consumer's renewal or release rides in its commit instead of costing a request: a
	// non-zero LeaseExpiresAt moves the assignment's expiry to it (as RenewLease),
	// ReleaseLease clears its owner (as ReleaseLease; it wins over LeaseExpiresAt).
	LeaseExpiresAt time.Time
	ReleaseLease   bool
}

// OffsetRange is the half-open run of offsets [From, To).
type OffsetRange struct {
	From, To int64
}

// GroupConfig is a consumer group's settings.
type GroupConfig struct {
	Name string
	// ResetPolicy is "earliest", "latest" or "fail".
	ResetPolicy     string
	MaxAttempts     int
	DeadLetterTopic string
	// OnFailure is what a record that failed every attempt does: "dead_letter" (also
	// when empty, as rows written before it say nothing) or "park".
	OnFailure string
	CreatedAt time.Time
}

// Member is a live participant of a group (long-running consumers heartbeat).
type Member struct {
	Group     string
	ID        string
	ExpiresAt time.Time
}

// LeaseStore holds assignments (generation-fenced leases) and commits.
type LeaseStore interface {
	// AcquireLease must take the lease for member when it has no owner, is expired at
	// now, or is already member's, setting owner = member, expiry = expiresAt and
	// generation = previous generation + 1 (1 for a new row) — also when member already
	// held it, so a restarted member fences its own earlier incarnation. A live lease of
	// another member must return *LeaseHeldError and change nothing. The returned
	// Assignment's GroupDeleted must say whether the row it took was marked by
	// DeleteGroup, and the taken row must no longer be marked.
	AcquireLease(ctx context.Context, group, topic string, partition int32, member string, now, expiresAt time.Time) (Assignment, error)
	// RenewLease must move the expiry only if owner = member and generation matches,
	// else return ErrFenced and change nothing. (An expired lease nobody took over can
	// still be renewed by its owner: no other member can have acted on it.)
	RenewLease(ctx context.Context, group, topic string, partition int32, member string, generation int64, expiresAt time.Time) (Assignment, error)
	// ReleaseLease must clear the owner only if owner = member and generation matches,
	// else ErrFenced. The generation stays.
	ReleaseLease(ctx context.Context, group, topic string, partition int32, member string, generation int64) error
	// GetAssignment must return the row or ErrNotFound.
	GetAssignment(ctx context.Context, group, topic string, partition int32) (Assignment, error)
	// Commit must, atomically, check that the assignment's owner = member and its
	// generation matches (else ErrFenced), and set the commit row's NextOffset only if
	// nextOffset >= the current one (else ErrStaleCommit; equal is accepted) or c.Backward
	// asks to skip that check. When both checks fail the error is ErrFenced: a fenced
	// caller must learn it lost the lease. Metadata is stored as given (none removes it).
	// The row's Completed ranges must be stored as given, replacing the earlier ones
	// (none given removes them), and GetCommit must return them in order. In the same
	// atomic operation, and only when the commit goes through, c.ReleaseLease must clear
	// the assignment's owner (the generation stays) and otherwise a non-zero
	// c.LeaseExpiresAt must move its expiry to it; a refused commit changes neither.
	Commit(ctx context.Context, c CommitRow, member string) error
	// GetCommit must return the row or ErrNotFound.
	GetCommit(ctx context.Context, group, topic string, partition int32) (CommitRow, error)
	// ResetCommits must set the commit rows of the given partitions to the given
	// offsets (regardless of the current ones), dropping their Completed ranges, only if no lease of the group on topic is
	// live at now, else ErrGroupActive and change nothing. In the same atomic operation it
	// must fence every earlier generation of the group on topic: every assignment row of
	// (group, topic), and a row for every partition reset, gets generation + 1 (1 for a
	// new row) and no owner. An owner whose lease lapsed while nobody took the partition
	// over could otherwise renew and commit at its old generation, undoing the reset.
	ResetCommits(ctx context.Context, group, topic string, offsets map[int32]int64, now time.Time) error
	// ListAssignments and ListCommits must return every row of the group, ordered by
	// topic then partition; an unknown group yields an empty list.
	ListAssignments(ctx context.Context, group string) ([]Assignment, error)
	ListCommits(ctx context.Context, group string) ([]CommitRow, error)
}

// GroupStore holds group settings and member heartbeats.
type GroupStore interface {
	// EnsureGroup must create the group with cfg if absent and return the stored one.
	EnsureGroup(ctx context.Context, cfg GroupConfig) (GroupConfig, error)
	// GetGroup must return ErrNotFound for an unknown group.
	GetGroup(ctx context.Context, name string) (GroupConfig, error)
	// Heartbeat must upsert the member's expiry.
	Heartbeat(ctx context.Context, m Member) error
	// RemoveMember must delete the member; a missing one is not an error.
	RemoveMember(ctx context.Context, group, id string) error
	// LiveMembers must return the members whose expiry is after now, ordered by ID.
	LiveMembers(ctx context.Context, group string, now time.Time) ([]Member, error)
}

// MetaStore is every metadata operation; backends implement all of it. Consumers should
// depend on the narrowest of the interfaces it embeds.
type MetaStore interface {
	TopicStore
	SequencerStore
	IndexStore
	PartitionStore
	LeaseStore
	GroupStore
}
