package httpapi

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// TimeIndex resolves a time to an offset from the partition's index (*log.Log
// implements it): what a reader seeks to when it starts from a time.
type TimeIndex interface {
	OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (int64, error)
}

var _ TimeIndex = (*log.Log)(nil)

// offsetsRoute answers, per partition, the first offset appended at or after a time.
const offsetsRoute = "GET /v1/topics/{topic}/offsets"

// offsetRoutes registers the offsets-by-time route when the log has a time index.
func (s *server) offsetRoutes() {
	if _, ok := s.log.(TimeIndex); !ok {
		return
	}
	s.mux.HandleFunc(offsetsRoute, s.offsetsForTime)
}

// offsetsForTime answers, for every partition of the topic, the first offset appended
// at or after timestamp_ms, within [log start, high watermark] (the high watermark when
// nothing was appended since): the server-side seek of a read that starts from a time.
// Reading may need it as much as describing, so either right admits it.
func (s *server) offsetsForTime(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	p, e := s.authenticate(r)
	if e == nil && !p.Allowed(OpRead, "topic:"+topic) {
		e = authorize(p, onTopic(OpDescribe, topic))
	}
	if e != nil {
		writeError(w, e)
		return
	}
	q, e := parseQuery(r.URL.RawQuery, "timestamp_ms")
	if e != nil {
		writeError(w, e)
		return
	}
	if !q.has("timestamp_ms") {
		writeError(w, invalid(`query parameter "timestamp_ms" is required`))
		return
	}
	ms, e := q.int64In("timestamp_ms", 0, 0, math.MaxInt64/int64(time.Millisecond))
	if e != nil {
		writeError(w, e)
		return
	}
	info, err := s.log.DescribeTopic(r.Context(), topic)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	at := time.UnixMilli(ms)
	out := wire.OffsetsResponse{Topic: info.Name, TimestampMs: ms, Partitions: make([]wire.PartitionOffset, len(info.Partitions))}
	for i, pi := range info.Partitions {
		o, err := s.log.(TimeIndex).OffsetForTime(r.Context(), topic, pi.Partition, at)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Partitions[i] = wire.PartitionOffset{Partition: pi.Partition, Offset: min(max(o, pi.LogStartOffset), pi.HighWatermark)}
	}
	writeJSON(w, http.StatusOK, out)
}
