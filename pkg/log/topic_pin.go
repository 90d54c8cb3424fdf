package log

import (
	"context"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// checkPin refuses a pin cap that is negative or that keeps records past
// Config.Topics.MaxRetention: the bucket's lifecycle rule, derived from that maximum,
// would then take a pinned record's object. Retention plus pin past the largest
// duration (about 292 years) is kept for ever (store.SatAdd), not refused.
func (l *Log) checkPin(retention, pin time.Duration) error {
	if pin < 0 {
		return invalidf("retention pin must not be negative, got %s", pin)
	}
	if maxR := l.defaults.MaxRetention; maxR > 0 && store.SatAdd(retention, pin) > maxR {
		return invalidf("retention_ms %d plus retention_pin_ms %d (%s) is above this deployment's maximum retention_ms %d (%s): "+
			"segment objects older than the maximum are expired by the bucket's lifecycle rule",
			retention.Milliseconds(), pin.Milliseconds(), store.SatAdd(retention, pin), maxR.Milliseconds(), maxR)
	}
	return nil
}

// MaxRetention is Config.Topics.MaxRetention: the longest a topic may keep a record,
// its pin cap included (0: no maximum).
func (l *Log) MaxRetention() time.Duration { return l.defaults.MaxRetention }

// SetRetentionPin sets how far beyond its retention a topic keeps a record that a group
// which has committed on it has not read (0 removes the pin; docs/DESIGN.md, "Retention
// pin"). Every node sees it within TopicCacheTTL; the retention pass reads it at each
// pass. The index entries' TTL is set at the append (retention + pin + a day's grace),
// so a cap raised past that grace covers older entries only as far as their TTL.
func (l *Log) SetRetentionPin(ctx context.Context, name string, pin time.Duration) (store.Topic, error) {
	a, err := l.topicAdmin("change topics")
	if err != nil {
		return store.Topic{}, err
	}
	cur, err := l.reloadTopic(ctx, name)
	if err != nil {
		return store.Topic{}, err
	}
	if err := l.checkPin(cur.Retention, pin); err != nil {
		return store.Topic{}, err
	}
	t, err := a.SetRetentionPin(ctx, name, pin)
	return l.changedTopic(name, t, err)
}
