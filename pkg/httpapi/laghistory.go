package httpapi

import (
	"context"
	"net/http"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// LagHistory is what the lag history route needs: the group's stored history
// (*group.Coordinator implements it; ErrNotFound for an unknown group).
type LagHistory interface {
	LagHistory(ctx context.Context, g string) ([]store.LagSeries, error)
}

var _ LagHistory = (*group.Coordinator)(nil)

// lagHistoryRoutes registers GET /v1/groups/{group}/lag-history when the server has a
// LagHistory.
func (s *server) lagHistoryRoutes() {
	if s.lag == nil {
		return
	}
	s.mux.HandleFunc("GET /v1/groups/{group}/lag-history", s.lagHistory)
}

// lagHistory answers the group's lag history on the topics the caller may describe,
// as describeGroup shows only those.
func (s *server) lagHistory(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpDescribe, g))
	if !ok {
		return
	}
	h, err := s.lag.LagHistory(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := wire.LagHistory{Group: g, Partitions: make([]wire.LagHistoryPartition, 0, len(h))}
	for _, series := range h {
		if !p.Allowed(OpDescribe, "topic:"+series.Topic) {
			continue
		}
		out := wire.LagHistoryPartition{Topic: series.Topic, Partition: series.Partition,
			Samples: make([]wire.LagHistorySample, 0, len(series.Samples))}
		for _, x := range series.Samples {
			out.Samples = append(out.Samples, wire.LagHistorySample{TimestampMs: x.At.UnixMilli(),
				LagRecords: x.Records, LagSeconds: float64(x.Behind.Milliseconds()) / 1000})
		}
		resp.Partitions = append(resp.Partitions, out)
	}
	writeJSON(w, http.StatusOK, resp)
}
