package httpapi

import (
	"context"
	"net/http"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// StatsIndex scans a partition's index for its stored size (*log.Log implements it):
// what the console shows on opening a topic, never per refresh.
type StatsIndex interface {
	PartitionStats(ctx context.Context, topic string, partition int32, maxEntries int) (log.PartitionStats, error)
}

var _ StatsIndex = (*log.Log)(nil)

// statsRoute answers one partition's bounds, records and stored bytes.
const statsRoute = "GET /v1/topics/{topic}/partitions/{p}/stats"

// statsRoutes registers the partition stats route when the log can scan its index.
func (s *server) statsRoutes() {
	if _, ok := s.log.(StatsIndex); !ok {
		return
	}
	s.mux.HandleFunc(statsRoute, s.partitionStats)
}

// partitionStats answers a scan of at most max_entries index entries of the partition
// from its log start. It needs describe on the topic, as describing the topic does.
func (s *server) partitionStats(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpDescribe, topic)); !ok {
		return
	}
	partition, e := partitionParam(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q, e := parseQuery(r.URL.RawQuery, "max_entries")
	if e != nil {
		writeError(w, e)
		return
	}
	n, e := q.int64In("max_entries", wire.DefaultStatsEntries, 1, wire.MaxStatsEntries)
	if e != nil {
		writeError(w, e)
		return
	}
	st, err := s.log.(StatsIndex).PartitionStats(r.Context(), topic, partition, int(n))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PartitionStats{LogStart: st.LogStart, HighWatermark: st.HighWatermark,
		Records: st.Records, Bytes: st.Bytes, EntriesScanned: int64(st.EntriesScanned), Complete: st.Complete})
}
