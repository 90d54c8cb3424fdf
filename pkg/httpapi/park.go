package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

// GroupParker is what the parked-key routes need of the coordinator: the group's
// parked keys and their release (*group.Coordinator implements it).
type GroupParker interface {
	ListParked(ctx context.Context, g string) ([]group.Parked, error)
	ReleaseParked(ctx context.Context, g, topic string, key []byte) ([]group.Parked, error)
}

// PartitionParker is what the member-side parked-row routes need of the coordinator:
// a partition's parked rows, and the owner's writes of them, fenced by its lease's
// generation as a commit is (*group.Coordinator implements it).
type PartitionParker interface {
	ParkedOf(ctx context.Context, g, topic string, partition int32) ([]group.Parked, error)
	PutParked(ctx context.Context, p group.Parked, member string, generation int64) error
	Unpark(ctx context.Context, g, topic string, partition int32, key []byte, member string, generation int64) error
}

var (
	_ GroupParker     = (*group.Coordinator)(nil)
	_ PartitionParker = (*group.Coordinator)(nil)
)

// parkRoutes registers the parked-key routes when the server's groups can park.
func (s *server) parkRoutes() {
	if s.parker == nil {
		return
	}
	s.mux.HandleFunc("GET /v1/groups/{group}/parked", s.listParked)
	s.mux.HandleFunc("POST /v1/groups/{group}/parked/release", s.releaseParked)
}

// partitionParkedRoute reads a partition's parked rows; it checks its own query
// parameter (the lease's incarnation).
const partitionParkedRoute = "GET /v1/groups/{group}/topics/{topic}/partitions/{p}/parked"

// partitionParkRoutes registers the member-side parked-row routes beside the lease and
// commit routes of the partition, when the server's groups keep parked rows.
func (s *server) partitionParkRoutes() {
	if s.pparker == nil {
		return
	}
	const gp = "/v1/groups/{group}/topics/{topic}/partitions/{p}/parked"
	s.mux.HandleFunc(partitionParkedRoute, s.partitionParked)
	s.mux.HandleFunc("PUT "+gp, s.putParked)
	s.mux.HandleFunc("POST "+gp+"/unpark", s.unpark)
}

// parkedJSON is the rows as the operator's routes answer them; starts are the parking
// topic's log starts per partition (nil when unknown), which say whether retention took
// a row's first parked record.
func parkedJSON(rows []group.Parked, starts map[int32]int64) wire.ParkedList {
	out := wire.ParkedList{Parked: make([]wire.ParkedKey, len(rows))}
	for i, p := range rows {
		start, known := starts[p.ParkPartition]
		out.Parked[i] = wire.ParkedKey{Topic: p.Topic, Partition: p.Partition, Key: base64.StdEncoding.EncodeToString(p.Key),
			FirstOffset: p.FirstOffset, Records: p.Records, Error: p.Error, ParkedAtMs: p.ParkedAt.UnixMilli(),
			Expired: known && p.ParkOffset >= 0 && p.ParkOffset < start}
		if !p.ReleaseRequested.IsZero() {
			ms := p.ReleaseRequested.UnixMilli()
			out.Parked[i].ReleaseRequestedAtMs = &ms
		}
	}
	return out
}

// parkingStarts returns the log start of each partition of g's parking topic, or nil
// when it cannot be read (the listing goes on without saying what expired).
func (s *server) parkingStarts(ctx context.Context, g string) map[int32]int64 {
	info, err := s.log.DescribeTopic(ctx, wire.ParkingTopic(g))
	if err != nil {
		return nil
	}
	out := make(map[int32]int64, len(info.Partitions))
	for _, p := range info.Partitions {
		out[p.Partition] = p.LogStartOffset
	}
	return out
}

// listParked answers the group's parked keys; it needs describe on the group, and
// lists only the topics the caller may read.
func (s *server) listParked(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpDescribe, g))
	if !ok {
		return
	}
	rows, err := s.parker.ListParked(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	visible := rows[:0]
	for _, row := range rows {
		if p.Allowed(OpRead, "topic:"+row.Topic) {
			visible = append(visible, row)
		}
	}
	writeJSON(w, http.StatusOK, parkedJSON(visible, s.parkingStarts(r.Context(), g)))
}

type parkedReleaseRequest struct {
	Topic *string `json:"topic"`
	Key   *string `json:"key"`
}

// releaseParked asks for a parked key's release; it needs reset on the group (a
// release hands records to the group's handler again) and read on the topic.
func (s *server) releaseParked(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpReset, g))
	if !ok {
		return
	}
	var req parkedReleaseRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Topic == nil || req.Key == nil {
		writeError(w, missing("topic", "key"))
		return
	}
	key, e := decodeBase64("key", *req.Key)
	if e != nil {
		writeError(w, e)
		return
	}
	if len(key) > wire.MaxParkedKey {
		writeError(w, invalid(`"key" is longer than any parked key`))
		return
	}
	if e := authorize(p, onTopic(OpRead, *req.Topic)); e != nil {
		writeError(w, e)
		return
	}
	rows, err := s.parker.ReleaseParked(r.Context(), g, *req.Topic, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, parkedJSON(rows, s.parkingStarts(r.Context(), g)))
}

// parkedRowsJSON is a partition's rows as its owner reads them.
func parkedRowsJSON(rows []group.Parked) wire.ParkedRows {
	out := wire.ParkedRows{Parked: make([]wire.ParkedRow, len(rows))}
	for i, p := range rows {
		out.Parked[i] = wire.ParkedRow{ParkedState: wire.ParkedState{Key: base64.StdEncoding.EncodeToString(p.Key),
			FirstOffset: p.FirstOffset, LastOffset: p.LastOffset, Records: p.Records, Error: p.Error, Attempts: p.Attempts,
			ParkedAtMs: p.ParkedAt.UnixMilli(), ParkPartition: p.ParkPartition, ParkOffset: p.ParkOffset}}
		if !p.ReleaseRequested.IsZero() {
			ms := p.ReleaseRequested.UnixMilli()
			out.Parked[i].ReleaseRequestedAtMs = &ms
		}
	}
	return out
}

// partitionParked answers the partition's parked rows whole, for the member that runs
// the partition (it reads them when its run starts and at each renew); it needs what a
// commit needs. A read, so not fenced: the writes are.
func (s *server) partitionParked(w http.ResponseWriter, r *http.Request) {
	t, e := s.consumeTarget(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q, e := parseQuery(r.URL.RawQuery, "incarnation")
	if e != nil {
		writeError(w, e)
		return
	}
	ref, e := t.ref(q.str("incarnation"))
	if e != nil {
		writeError(w, e)
		return
	}
	rows, err := s.pparker.ParkedOf(r.Context(), t.group, ref, t.partition)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, parkedRowsJSON(rows))
}

// parkedPutRequest is wire.ParkedPut with presence checks.
type parkedPutRequest struct {
	Member        *string `json:"member"`
	Generation    *int64  `json:"generation"`
	Key           *string `json:"key"`
	FirstOffset   *int64  `json:"first_offset"`
	LastOffset    *int64  `json:"last_offset"`
	Records       *int64  `json:"records"`
	Error         *string `json:"error"`
	Attempts      *int    `json:"attempts"`
	ParkedAtMs    *int64  `json:"parked_at_ms"`
	ParkPartition *int32  `json:"park_partition"`
	ParkOffset    *int64  `json:"park_offset"`
	Incarnation   *string `json:"incarnation"`
}

// parkedRow checks a PUT body against the contract and returns the row it stores.
func parkedRow(t partitionTarget, req parkedPutRequest) (group.Parked, *apiError) {
	if req.Member == nil || req.Generation == nil || req.Key == nil || req.FirstOffset == nil || req.LastOffset == nil ||
		req.Records == nil || req.Error == nil || req.Attempts == nil || req.ParkedAtMs == nil || req.ParkPartition == nil || req.ParkOffset == nil {
		return group.Parked{}, missing("member", "generation", "key", "first_offset", "last_offset", "records", "error",
			"attempts", "parked_at_ms", "park_partition", "park_offset")
	}
	key, e := parkedKeyParam(*req.Key)
	if e != nil {
		return group.Parked{}, e
	}
	first, last, n := *req.FirstOffset, *req.LastOffset, *req.Records
	switch {
	case first < 0 || last < first:
		return group.Parked{}, invalid(fmt.Sprintf("first_offset %d and last_offset %d: want 0 ≤ first_offset ≤ last_offset", first, last))
	case n < 1 || n-1 > last-first:
		return group.Parked{}, invalid(fmt.Sprintf("records %d: want 1 to last_offset − first_offset + 1", n))
	case len(*req.Error) > wire.MaxParkedError:
		return group.Parked{}, invalid(fmt.Sprintf("error is %d bytes, at most %d", len(*req.Error), wire.MaxParkedError))
	case *req.Attempts < 0:
		return group.Parked{}, invalid(fmt.Sprintf("attempts must not be negative, got %d", *req.Attempts))
	case *req.ParkedAtMs < 0 || *req.ParkedAtMs > MaxTimestampMs:
		return group.Parked{}, invalid(fmt.Sprintf("parked_at_ms must be 0–%d, got %d", int64(MaxTimestampMs), *req.ParkedAtMs))
	case *req.ParkPartition < 0 || *req.ParkPartition >= wire.MaxPartitions:
		return group.Parked{}, invalid(fmt.Sprintf("park_partition must be 0–%d, got %d", wire.MaxPartitions-1, *req.ParkPartition))
	case *req.ParkOffset < -1:
		return group.Parked{}, invalid(fmt.Sprintf("park_offset must be -1 (not appended yet) or an offset, got %d", *req.ParkOffset))
	}
	ref, e := t.ref(req.Incarnation)
	if e != nil {
		return group.Parked{}, e
	}
	return group.Parked{Group: t.group, Topic: ref, Partition: t.partition, Key: key, FirstOffset: first, LastOffset: last,
		Records: n, Error: *req.Error, Attempts: *req.Attempts, ParkedAt: time.UnixMilli(*req.ParkedAtMs),
		ParkPartition: *req.ParkPartition, ParkOffset: *req.ParkOffset}, nil
}

// parkedKeyParam decodes a parked key: base64, at most wire.MaxParkedKey bytes.
func parkedKeyParam(s string) ([]byte, *apiError) {
	key, e := decodeBase64("key", s)
	if e != nil {
		return nil, e
	}
	if len(key) > wire.MaxParkedKey {
		return nil, invalid(fmt.Sprintf(`"key" is %d bytes, at most %d`, len(key), wire.MaxParkedKey))
	}
	return key, nil
}

// putParked stores a parked row for the partition's owner, fenced by its generation as
// a commit is (an obsolete generation or another member → 409 fenced).
func (s *server) putParked(w http.ResponseWriter, r *http.Request) {
	t, e := s.consumeTarget(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req parkedPutRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	row, e := parkedRow(t, req)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.pparker.PutParked(r.Context(), row, *req.Member, *req.Generation); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// parkedUnparkRequest is wire.ParkedUnpark with presence checks.
type parkedUnparkRequest struct {
	Member      *string `json:"member"`
	Generation  *int64  `json:"generation"`
	Key         *string `json:"key"`
	Incarnation *string `json:"incarnation"`
}

// unpark deletes a parked row once its owner replayed the key, fenced as putParked.
func (s *server) unpark(w http.ResponseWriter, r *http.Request) {
	t, e := s.consumeTarget(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req parkedUnparkRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Member == nil || req.Generation == nil || req.Key == nil {
		writeError(w, missing("member", "generation", "key"))
		return
	}
	key, e := parkedKeyParam(*req.Key)
	if e != nil {
		writeError(w, e)
		return
	}
	ref, e := t.ref(req.Incarnation)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.pparker.Unpark(r.Context(), t.group, ref, t.partition, key, *req.Member, *req.Generation); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// str returns the parameter's value, nil when absent.
func (q query) str(name string) *string {
	vs, ok := q.v[name]
	if !ok {
		return nil
	}
	return &vs[0]
}
