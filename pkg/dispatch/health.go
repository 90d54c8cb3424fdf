package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/stratalog/strata/pkg/group"
)

// Groups describes consumer groups and lists the keys they parked; *group.Coordinator
// has it. The sweep's role must be able to read the parked table for ListParked.
type Groups interface {
	Describe(ctx context.Context, group string) (group.GroupInfo, error)
	ListParked(ctx context.Context, group string) ([]group.Parked, error)
}

// GroupHealth is one subscription's lag and time to data loss, over the topic's
// partitions the group has leased or committed: what the alarms of the stack read.
type GroupHealth struct {
	Group, Topic string
	// LagSeconds is the largest age of an oldest unread record.
	LagSeconds float64
	// SecondsToDataLoss is the smallest time to data loss; nil when every partition
	// is caught up.
	SecondsToDataLoss *float64
	// RecordsLost is the sum over the partitions of the records expired unread.
	RecordsLost int64
	// ParkedKeys is the number of keys the group parked over the topic's partitions
	// (on_failure "park"), waiting for a release; nil when they could not be read.
	ParkedKeys *int64
}

// Health describes the group of every subscription (the deployment's and attached
// ones) with groups and returns their health, ordered by topic then group. A group not
// created yet (no lease, no commit) is left out; other describe errors are joined. A
// group whose parked keys cannot be read keeps its health without ParkedKeys, the error
// joined.
func (d *Dispatcher) Health(ctx context.Context, groups Groups) ([]GroupHealth, error) {
	var st Stats
	byTopic, errs := d.subscriptions(ctx, &st)
	var out []GroupHealth
	for _, ss := range byTopic {
		for _, s := range ss {
			info, err := groups.Describe(ctx, s.Group)
			if errors.Is(err, group.ErrNotFound) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("dispatch: describe group %q: %w", s.Group, err))
				continue
			}
			parked, err := groups.ListParked(ctx, s.Group)
			if errors.Is(err, group.ErrNotFound) {
				parked, err = nil, nil // leases without settings: nothing parked
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("dispatch: parked keys of group %q: %w", s.Group, err))
			}
			h := PlanHealth(info, s.Group, s.Topic)
			if err == nil {
				n := CountParked(parked, s.Topic)
				h.ParkedKeys = &n
			}
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Group < out[j].Group
	})
	return out, errors.Join(errs...)
}

// PlanHealth folds the partitions of topic in info into the GroupHealth of (name, topic).
func PlanHealth(info group.GroupInfo, name, topic string) GroupHealth {
	h := GroupHealth{Group: name, Topic: topic}
	var least *time.Duration
	for _, p := range info.Partitions {
		if p.Topic != topic {
			continue
		}
		h.LagSeconds = max(h.LagSeconds, p.LagTime.Seconds())
		if dl := p.DataLoss; dl != nil {
			h.RecordsLost += dl.RecordsLost
			if least == nil || dl.TimeLeft < *least {
				t := dl.TimeLeft
				least = &t
			}
		}
	}
	if least != nil {
		s := least.Seconds()
		h.SecondsToDataLoss = &s
	}
	return h
}

// CountParked is the number of rows of topic among a group's parked keys.
func CountParked(rows []group.Parked, topic string) int64 {
	var n int64
	for _, p := range rows {
		if p.Topic == topic {
			n++
		}
	}
	return n
}
