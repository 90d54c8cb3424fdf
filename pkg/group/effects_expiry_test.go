package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// TestPlanMarkerExpiry: a record's effect marker outlives every redelivery of the record
// (its append time, before the effect's, + retention + pin cap) by the grace.
func TestPlanMarkerExpiry(t *testing.T) {
	for _, c := range []struct {
		name                    string
		retention, pin, maxKeep time.Duration
		want                    time.Duration // after the effect
	}{
		{"no pin", time.Hour, 0, 0, time.Hour + group.EffectMarkerGrace},
		{"pinned", time.Hour, 6 * time.Hour, 0, 7*time.Hour + group.EffectMarkerGrace},
		{"a week", 7 * 24 * time.Hour, 0, 0, 7*24*time.Hour + group.EffectMarkerGrace},
		{"bounded deployment", time.Hour, 0, 7 * 24 * time.Hour, 7*24*time.Hour + group.EffectMarkerGrace},
		{"pinned beyond the bound", 2 * time.Hour, 9 * 24 * time.Hour, 7 * 24 * time.Hour, 9*24*time.Hour + 2*time.Hour + group.EffectMarkerGrace},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := group.PlanMarkerExpiry(store.Topic{Retention: c.retention, RetentionPin: c.pin}, c.maxKeep, t0)
			if want := t0.Add(c.want); !got.Equal(want) {
				t.Fatalf("PlanMarkerExpiry = %s, want %s", got, want)
			}
		})
	}
}

// recordingEffects is an EffectStore that keeps the marker expiry it was last given.
type recordingEffects struct {
	store.EffectStore
	expires time.Time
}

func (r *recordingEffects) ApplyEffect(_ context.Context, _ store.Fence, _ int64, _ string, _ []byte, exp time.Time) error {
	r.expires = exp
	return nil
}

// pinnedTopics resolves every name to itself, a topic with retention 1h and pin 2h.
type pinnedTopics struct{}

func (pinnedTopics) TopicID(_ context.Context, name string) (string, error) { return name, nil }
func (pinnedTopics) Topic(_ context.Context, name string) (store.Topic, error) {
	return store.Topic{Name: name, Partitions: 1, Retention: time.Hour, RetentionPin: 2 * time.Hour}, nil
}

// TestEffectsMarkerExpiryFromTopic: Effects.Apply gives the store the marker expiry of
// the topic's retention and pin at its clock's time; without topic configurations
// markers never expire.
func TestEffectsMarkerExpiryFromTopic(t *testing.T) {
	ctx := context.Background()
	f := group.Fence{Group: "billing", Topic: "orders", Partition: 0, Generation: 1}
	rec := &recordingEffects{}
	fx := group.NewEffects(rec, pinnedTopics{}).WithClock(func() time.Time { return t0 })
	if err := fx.Apply(ctx, f, 4, "order-1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(3*time.Hour + group.EffectMarkerGrace); !rec.expires.Equal(want) {
		t.Fatalf("marker expiry %s, want %s", rec.expires, want)
	}
	if err := group.NewEffects(rec, nil).Apply(ctx, f, 5, "order-1", []byte("v")); err != nil || !rec.expires.IsZero() {
		t.Fatalf("without topic configurations: expiry %s, %v; want none", rec.expires, err)
	}
}

// boundedTopics is pinnedTopics in a deployment whose maximum retention is a week.
type boundedTopics struct{ pinnedTopics }

func (boundedTopics) MaxRetention() time.Duration { return 7 * 24 * time.Hour }

// TestRaisedPinKeepsEffectMarkers: a record's effect marker lasts as long as the
// deployment's maximum retention, so a pin cap raised by days after the effect (up to
// that maximum) never lets the marker go while the record can still be redelivered,
// which would apply its effect a second time.
func TestRaisedPinKeepsEffectMarkers(t *testing.T) {
	ctx := context.Background()
	f := group.Fence{Group: "billing", Topic: "orders", Partition: 0, Generation: 1}
	rec := &recordingEffects{}
	fx := group.NewEffects(rec, boundedTopics{}).WithClock(func() time.Time { return t0 })
	if err := fx.Apply(ctx, f, 4, "order-1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// Raised later to the maximum (retention 1h + cap 7d - 1h): the record is kept until
	// its append time + 7 days, before t0 + 7 days.
	if want := t0.Add(7*24*time.Hour + group.EffectMarkerGrace); rec.expires.Before(want) {
		t.Fatalf("marker expiry %s, before %s: a pin raised to the deployment's maximum outlives it", rec.expires, want)
	}
}
