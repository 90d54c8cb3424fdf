package group

import (
	"context"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// ErrApplied: a fenced effect of that record was applied already (a duplicate delivery).
var ErrApplied = store.ErrApplied

// Fence is a consumer's fencing token: the group, topic (by name here), partition and
// the generation of the lease it handles the partition under, and the topic
// incarnation the lease is of (pkg/consumer's records carry it; "" means the live
// one): a run of a deleted incarnation is then fenced even when the name has a live
// incarnation again.
type Fence = store.Fence

// Effects is a business store whose writes are fenced by the writer's lease (issue 22
// item 2): a write is applied only while the fence's generation is the partition's
// current one and only once per record, so a zombie consumer's late write is refused
// (ErrFenced), not only its commit, and a duplicate delivery's is refused as ErrApplied.
// It addresses topics by name, resolving each to its live incarnation as the
// coordinator does.
type Effects struct {
	es  store.EffectStore
	ids TopicIDs
	now func() time.Time
}

// EffectMarkerGrace is how long a record's marker outlives the longest the record can
// be kept (store.Topic.KeptFor with the pin) after its effect was applied: it covers a
// pin cap raised after the effect, the retention pass's interval and clock skew.
const EffectMarkerGrace = 24 * time.Hour

// TopicConfigs resolves a topic name to its live incarnation's configuration (*log.Log
// has it): the effect markers' expiry counts its retention and pin cap.
type TopicConfigs interface {
	Topic(ctx context.Context, name string) (store.Topic, error)
}

// NewEffects returns Effects over es; ids resolves topic names to incarnations (nil: the
// names are the store keys, as for a log without incarnations). When ids is also
// TopicConfigs (as *log.Log is), each record's marker expires PlanMarkerExpiry after
// the write; else markers never expire.
func NewEffects(es store.EffectStore, ids TopicIDs) *Effects {
	return &Effects{es: es, ids: ids, now: time.Now}
}

// WithClock makes e read the time from now (for the markers' expiry) and returns e.
func (e *Effects) WithClock(now func() time.Time) *Effects {
	e.now = now
	return e
}

// MaxRetentions is what TopicConfigs also has when the deployment bounds retention
// (*log.Log has it): the longest any topic may keep a record, pin cap included.
type MaxRetentions interface {
	MaxRetention() time.Duration
}

// PlanMarkerExpiry is when the marker of a record of topic t whose effect is applied at
// now may go: after the record can be redelivered no more. A record is readable until
// its append time + the retention + the pin cap (store.Topic.KeptFor), and its append
// time is before now, so a replay within retention is refused; EffectMarkerGrace is on
// top. maxRetention (0: none) is the deployment's bound on retention + cap: a cap raised
// after the effect can reach it, so the marker lasts at least that long, as the record's
// index entry does, and a raised pin never outlives the marker of a record it keeps.
func PlanMarkerExpiry(t store.Topic, maxRetention time.Duration, now time.Time) time.Time {
	return now.Add(store.SatAdd(max(t.KeptFor(true), maxRetention), EffectMarkerGrace))
}

// Apply puts value under key as the effect of the record at offset, fenced by f.
// ErrFenced: the partition moved to another generation (or the topic, or the fence's
// incarnation, is gone);
// ErrApplied: the record's effect was applied already. Either way nothing was written.
func (e *Effects) Apply(ctx context.Context, f Fence, offset int64, key string, value []byte) error {
	ref := f.Topic
	if f.Incarnation != "" {
		ref = store.TopicRef(f.Topic, f.Incarnation)
	}
	if err := checkRef(f.Group, ref, f.Partition); err != nil {
		return err
	}
	if offset < 0 || key == "" {
		return invalidf("effect of %s/%d@%d: negative offset or empty key", f.Topic, f.Partition, offset)
	}
	sf := f
	if e.ids != nil {
		id, err := (&byIncarnation{ids: e.ids}).id(ctx, ref, true)
		if err != nil {
			return fmt.Errorf("group: effect of %s/%d@%d: %w", f.Topic, f.Partition, offset, err)
		}
		sf.Topic = id
	} else {
		sf.Topic = ref
	}
	sf.Incarnation = ""
	var expires time.Time
	if tc, ok := e.ids.(TopicConfigs); ok {
		t, err := tc.Topic(ctx, topicName(f.Topic))
		if err != nil {
			return fmt.Errorf("group: effect of %s/%d@%d: retention of the topic: %w", f.Topic, f.Partition, offset, err)
		}
		var maxR time.Duration
		if mr, ok := e.ids.(MaxRetentions); ok {
			maxR = mr.MaxRetention()
		}
		expires = PlanMarkerExpiry(t, maxR, e.now())
	}
	if err := e.es.ApplyEffect(ctx, sf, offset, key, value, expires); err != nil {
		return fmt.Errorf("group: effect of %s/%d@%d for %s generation %d: %w", f.Topic, f.Partition, offset, f.Group, f.Generation, err)
	}
	return nil
}

// Get returns the value last put under key, or an error matching ErrNotFound.
func (e *Effects) Get(ctx context.Context, key string) ([]byte, error) {
	return e.es.GetEffect(ctx, key)
}
