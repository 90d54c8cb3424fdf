package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Lease TTL bounds of the contract, in milliseconds.
var (
	minTTLMs = group.MinTTL.Milliseconds()
	maxTTLMs = group.MaxTTL.Milliseconds()
)

type leaseRequest struct {
	Member      *string `json:"member"`
	TTLMs       *int64  `json:"ttl_ms"`
	Generation  *int64  `json:"generation"`
	Incarnation *string `json:"incarnation"`
}

// leaseResponse is the contract's shape (pkg/wire).
type leaseResponse = wire.Lease

type releaseRequest struct {
	Member      *string `json:"member"`
	Generation  *int64  `json:"generation"`
	Incarnation *string `json:"incarnation"`
}

type commitRequest struct {
	Member      *string `json:"member"`
	Generation  *int64  `json:"generation"`
	NextOffset  *int64  `json:"next_offset"`
	Incarnation *string `json:"incarnation"`
	// Completed is read as lists so that a range of other than two bounds is refused
	// (a [2]int64 would drop or zero-fill bounds silently).
	Completed     [][]int64 `json:"completed"`
	Metadata      *string   `json:"metadata"`
	AllowBackward *bool     `json:"allow_backward"`
}

// completedRanges checks the commit's completed ranges against the contract; the
// coordinator checks them against the high watermark.
func completedRanges(next int64, raw [][]int64) ([]store.OffsetRange, *apiError) {
	if raw == nil {
		return nil, nil
	}
	if len(raw) > wire.MaxCompletedRanges {
		return nil, invalid(fmt.Sprintf("completed: %d ranges, at most %d", len(raw), wire.MaxCompletedRanges))
	}
	rs := make([]wire.OffsetRange, len(raw))
	for i, r := range raw {
		if len(r) != 2 {
			return nil, invalid(fmt.Sprintf("completed: range %d has %d bounds, want [from, to]", i, len(r)))
		}
		rs[i] = wire.OffsetRange{r[0], r[1]}
	}
	if err := wire.CheckCompleted(next, rs); err != nil {
		return nil, invalid("completed: " + err.Error())
	}
	return group.FromWire(rs), nil
}

// partitionTarget is the {group}, {topic} and {p} of a partition route.
type partitionTarget struct {
	group, topic string
	partition    int32
}

// consumeTarget authenticates, checks consume on the group and read on the topic, and
// parses the partition. The path names a topic, never a store.TopicRef: a lease
// holder names its lease's incarnation in a field of its own (ref), so permissions are
// always checked on the name.
func (s *server) consumeTarget(r *http.Request) (partitionTarget, *apiError) {
	t := partitionTarget{group: r.PathValue("group"), topic: r.PathValue("topic")}
	if _, e := s.principal(r, onGroup(OpConsume, t.group), onTopic(OpRead, t.topic)); e != nil {
		return t, e
	}
	if !wire.ValidName(t.topic) {
		return t, invalid(fmt.Sprintf("bad topic name %q", t.topic))
	}
	var e *apiError
	t.partition, e = partitionParam(r)
	return t, e
}

// ref is the topic a lease holder's call acts on: the path's name, pinned to the
// incarnation the lease's answer named when the call sends it back (store.TopicRef),
// so that the coordinator fences the call once that incarnation is deleted, even when
// the name has a live one again. Without one the call acts on the live incarnation,
// as older clients expect.
func (t partitionTarget) ref(incarnation *string) (string, *apiError) {
	return pinTopic(t.topic, incarnation)
}

// pinTopic is name pinned to incarnation (nil: the name alone), which must be one.
func pinTopic(name string, incarnation *string) (string, *apiError) {
	if incarnation == nil {
		return name, nil
	}
	if !store.ValidIncarnation(*incarnation) {
		return "", invalid(fmt.Sprintf("incarnation must be 1–64 lowercase letters and digits, got %q", *incarnation))
	}
	return store.TopicRef(name, *incarnation), nil
}

// leaseTTL reads an optional ttl_ms: absent is zero, the coordinator's default; an
// explicit one must be in range itself.
func leaseTTL(ms *int64) (time.Duration, *apiError) {
	if ms == nil {
		return 0, nil
	}
	if *ms < minTTLMs || *ms > maxTTLMs {
		return 0, invalid(fmt.Sprintf("ttl_ms must be %d–%d, got %d", minTTLMs, maxTTLMs, *ms))
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

func missing(fields ...string) *apiError {
	return invalid(fmt.Sprintf("%s required", quoteFields(fields)))
}

func quoteFields(fields []string) string {
	var b bytes.Buffer
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", f)
	}
	if len(fields) == 1 {
		b.WriteString(" is")
	} else {
		b.WriteString(" are")
	}
	return b.String()
}

func (s *server) lease(w http.ResponseWriter, r *http.Request) {
	t, e := s.consumeTarget(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req leaseRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Member == nil {
		writeError(w, missing("member"))
		return
	}
	ttl, e := leaseTTL(req.TTLMs)
	if e != nil {
		writeError(w, e)
		return
	}
	if req.Incarnation != nil && req.Generation == nil {
		writeError(w, invalid(`"incarnation" is for a renew: it needs "generation"`))
		return
	}
	ref, e := t.ref(req.Incarnation)
	if e != nil {
		writeError(w, e)
		return
	}
	var l group.Lease
	var err error
	if req.Generation != nil {
		l, err = s.groups.Renew(r.Context(), t.group, ref, t.partition, *req.Member, *req.Generation, ttl)
	} else {
		l, err = s.groups.Acquire(r.Context(), t.group, t.topic, t.partition, *req.Member, ttl)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, leaseResponse{Generation: l.Generation, LeaseExpiresAtMs: l.ExpiresAt.UnixMilli(), CommittedOffset: l.Committed,
		Completed: group.ToWire(l.Completed), Incarnation: l.Incarnation})
}

func (s *server) release(w http.ResponseWriter, r *http.Request) {
	t, e := s.consumeTarget(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req releaseRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Member == nil || req.Generation == nil {
		writeError(w, missing("member", "generation"))
		return
	}
	ref, e := t.ref(req.Incarnation)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.groups.Release(r.Context(), t.group, ref, t.partition, *req.Member, *req.Generation); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) commit(w http.ResponseWriter, r *http.Request) {
	t, e := s.consumeTarget(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req commitRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Member == nil || req.Generation == nil || req.NextOffset == nil {
		writeError(w, missing("member", "generation", "next_offset"))
		return
	}
	completed, e := completedRanges(*req.NextOffset, req.Completed)
	if e != nil {
		writeError(w, e)
		return
	}
	ref, e := t.ref(req.Incarnation)
	if e != nil {
		writeError(w, e)
		return
	}
	opts := group.CommitOptions{Completed: completed}
	if req.Metadata != nil {
		opts.Metadata = *req.Metadata
	}
	if req.AllowBackward != nil {
		opts.AllowBackward = *req.AllowBackward
	}
	if err := s.commitAt(r.Context(), t.group, ref, t.partition, *req.Member, *req.Generation, *req.NextOffset, opts); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.CommitResponse{CommittedOffset: *req.NextOffset, Metadata: opts.Metadata})
}

// The answers are the contract's shapes (pkg/wire).
type (
	groupPartition        = wire.GroupPartition
	describeGroupResponse = wire.Group
	resetPartition        = wire.ResetPartition
)

func (s *server) describeGroup(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpDescribe, g))
	if !ok {
		return
	}
	info, err := s.groups.Describe(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	parked, err := s.parkedCounts(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, describeGroupResponse{Group: g, Partitions: groupPartitions(p, info, parked)})
}

// groupPartitions is the group's partitions as the API shows them: only those of topics
// p may describe (their high watermarks and owners are the topic's), as GET /v1/topics
// lists only those.
func groupPartitions(p *Principal, info group.GroupInfo, parked map[group.PartitionKey]int64) []groupPartition {
	out := make([]groupPartition, 0, len(info.Partitions))
	for _, pi := range info.Partitions {
		if !p.Allowed(OpDescribe, "topic:"+pi.Topic) {
			continue
		}
		gp := groupPartition{
			Topic:           pi.Topic,
			Partition:       pi.Partition,
			CommittedOffset: pi.Committed,
			HighWatermark:   pi.HighWatermark,
			Generation:      pi.Generation,
			ParkedKeys:      parked[group.PartitionKey{Topic: pi.Topic, Partition: pi.Partition}],
			Metadata:        pi.Metadata,
		}
		lagRecords, lagSeconds := pi.LagRecords, float64(pi.LagTime.Milliseconds())/1000
		gp.LagRecords, gp.LagSeconds = &lagRecords, &lagSeconds
		if dl := pi.DataLoss; dl != nil {
			secs := float64(dl.TimeLeft.Milliseconds()) / 1000
			gp.SecondsToDataLoss, gp.RecordsLost = &secs, dl.RecordsLost
		}
		if pi.Owner != "" {
			owner, exp := pi.Owner, pi.LeaseExpiresAt.UnixMilli()
			gp.Owner, gp.LeaseExpiresAtMs = &owner, &exp
		}
		out = append(out, gp)
	}
	return out
}

// parkedCounts is the group's parked keys per partition (none when the server's groups
// keep no parked keys).
func (s *server) parkedCounts(ctx context.Context, g string) (map[group.PartitionKey]int64, error) {
	if s.parker == nil {
		return nil, nil
	}
	rows, err := s.parker.ListParked(ctx, g)
	if errors.Is(err, group.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return group.CountParked(rows), nil
}

type resetRequest struct {
	To json.RawMessage `json:"to"`
	// Partitions, when present, limits the reset to these partitions.
	Partitions []int32 `json:"partitions"`
}

type resetPosition struct {
	Offset      *int64 `json:"offset"`
	TimestampMs *int64 `json:"timestamp_ms"`
}

func (s *server) reset(w http.ResponseWriter, r *http.Request) {
	g, topic := r.PathValue("group"), r.PathValue("topic")
	if _, ok := s.allow(w, r, onGroup(OpReset, g), onTopic(OpRead, topic)); !ok {
		return
	}
	var req resetRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	to, e := resetTarget(req.To)
	if e != nil {
		writeError(w, e)
		return
	}
	if req.Partitions != nil {
		s.resetPartitions(w, r, g, topic, req.Partitions, to)
		return
	}
	offsets, err := s.groups.Reset(r.Context(), g, topic, to)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]resetPartition, len(offsets))
	for i, o := range offsets {
		out[i] = resetPartition{Partition: o.Partition, CommittedOffset: o.Offset}
	}
	writeJSON(w, http.StatusOK, wire.ResetResponse{Partitions: out})
}

// resetTarget decodes "to": "earliest", "latest", {"offset": N} or {"timestamp_ms": T}.
func resetTarget(raw json.RawMessage) (group.ResetTo, *apiError) {
	const want = `"to" must be "earliest", "latest", {"offset": N} or {"timestamp_ms": T}`
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return group.ResetTo{}, invalid(`"to" is required`)
	}
	var word string
	if err := json.Unmarshal(raw, &word); err == nil {
		switch word {
		case "earliest":
			return group.ResetEarliest(), nil
		case "latest":
			return group.ResetLatest(), nil
		}
		return group.ResetTo{}, invalid(want)
	}
	var pos resetPosition
	if err := decodeStrict(raw, &pos); err != nil || raw[0] != '{' || (pos.Offset == nil) == (pos.TimestampMs == nil) {
		return group.ResetTo{}, invalid(want)
	}
	if pos.Offset != nil {
		if *pos.Offset < 0 {
			return group.ResetTo{}, invalid(fmt.Sprintf("offset must not be negative, got %d", *pos.Offset))
		}
		return group.ResetOffset(*pos.Offset), nil
	}
	if ts := *pos.TimestampMs; ts < 0 || ts > MaxTimestampMs {
		return group.ResetTo{}, invalid(fmt.Sprintf("timestamp_ms must be 0–%d, got %d", int64(MaxTimestampMs), ts))
	}
	return group.ResetTime(time.UnixMilli(*pos.TimestampMs)), nil
}

// CommitterAt is the part of a Groups that commits with options (metadata, a backward
// move): *group.Coordinator and metrics.Groups have it.
type CommitterAt interface {
	CommitAt(ctx context.Context, g, topic string, partition int32, member string, generation, nextOffset int64, opts group.CommitOptions) error
}

// commitAt commits through CommitAt when the coordinator has it; one without it takes
// only plain commits, and a commit asking for more is refused rather than half done.
func (s *server) commitAt(ctx context.Context, g, topic string, partition int32, member string, generation, nextOffset int64, opts group.CommitOptions) error {
	if c, ok := s.groups.(CommitterAt); ok {
		return c.CommitAt(ctx, g, topic, partition, member, generation, nextOffset, opts)
	}
	if opts.Metadata != "" || opts.AllowBackward {
		return fmt.Errorf("%w: this server's coordinator keeps neither commit metadata nor backward commits", group.ErrInvalid)
	}
	return s.groups.Commit(ctx, g, topic, partition, member, generation, nextOffset, opts.Completed...)
}
