package emf

import "github.com/stratalog/strata/pkg/compact"

// The compaction function's metrics, one set per pass (a scheduled fan-out or one
// partition's pass).
const (
	CompactionRuns           = "strata_compaction_runs_total"
	CompactionRewrites       = "strata_compaction_rewrites_total"
	CompactionRecordsRemoved = "strata_compaction_records_removed_total"
	CompactionObjectsDeleted = "strata_compaction_objects_deleted_total"
)

// CompactionRun records one compaction pass: its result by {result, trigger} (trigger
// is "schedule", "fanout" or "dirty"), and what it did.
func (s *Sink) CompactionRun(trigger string, st compact.Stats, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.Emit([][2]string{{"result", result}, {"trigger", trigger}}, Metric{CompactionRuns, UnitCount, 1})
	s.Emit(nil,
		Metric{CompactionRewrites, UnitCount, float64(st.Rewrites)},
		Metric{CompactionRecordsRemoved, UnitCount, float64(st.RecordsRemoved)},
		Metric{CompactionObjectsDeleted, UnitCount, float64(st.ObjectsDeleted)})
}
