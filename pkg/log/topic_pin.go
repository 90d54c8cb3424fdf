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

// entryExpiry is when a TTL (DynamoDB's, the embedded backend's sweep) may take an
// index entry of t appended at: a day after the deployment's maximum retention, which
// every retention + pin cap fits whatever the cap is raised to later, so no TTL takes an
// entry under a pinned log start (the retention pass deletes expired entries itself;
// the TTL only backs it up). Without a maximum nothing bounds how long a record may be
// kept, so an entry gets no TTL (zero).
func (l *Log) entryExpiry(t store.Topic, at time.Time) time.Time {
	maxR := l.defaults.MaxRetention
	if maxR <= 0 || !t.DeletesByTime() {
		return time.Time{}
	}
	return at.Add(store.SatAdd(max(maxR, t.KeptFor(true)), retentionGrace))
}

// SetRetentionPin sets how far beyond its retention a topic keeps a record that a group
// which has committed on it has not read (0 removes the pin; docs/DESIGN.md, "Retention
// pin"). Every node sees it within TopicCacheTTL; the retention pass reads it at each
// pass. Index entries already written stay as long as the raised cap needs: their TTL
// covers the maximum retention the cap must fit (entryExpiry).
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
