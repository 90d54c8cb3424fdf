package group

import "time"

// DataLoss is how close a group's position on a partition is to retention: the time
// left before the oldest unread record still retained expires, and the records that
// expired before the group read them.
type DataLoss struct {
	// TimeLeft is the oldest unread record's append time + how long the topic keeps it
	// for the group (its retention, plus the pin cap for a group with a position there:
	// store.Topic.KeptFor) − now, clamped at 0 (already expiring).
	TimeLeft time.Duration
	// RecordsLost is log start − the group's position when the position is below it.
	RecordsLost int64
}

// PlanDataLoss computes the DataLoss of a group at position next on a partition whose
// log starts at logStart, whose oldest unread retained record was appended at oldest,
// kept for kept after its append (store.Topic.KeptFor: the retention, plus the pin cap
// when the group pins it), at now. Retention counts from the append time of a record's
// index entry (DESIGN.md §4), as oldest is.
func PlanDataLoss(next, logStart int64, oldest time.Time, kept time.Duration, now time.Time) DataLoss {
	return DataLoss{
		TimeLeft:    max(oldest.Add(kept).Sub(now), 0),
		RecordsLost: max(logStart-next, 0),
	}
}
