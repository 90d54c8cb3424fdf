package log_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestSetRetention: a topic's retention changes after creation, on every backend; below
// the minimum, above the deployment's maximum (with the pin cap) or of an unknown topic
// it is refused and nothing changes.
func TestSetRetention(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := t.Context()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: log.TopicDefaults{MaxRetention: 72 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopicWith(ctx, "ret", log.TopicSpec{Partitions: 2, Retention: time.Hour, RetentionPin: 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		got, err := l.SetRetention(ctx, "ret", 48*time.Hour)
		if err != nil || got.Retention != 48*time.Hour || got.RetentionPin != 24*time.Hour || got.Partitions != 2 {
			t.Fatalf("SetRetention = %+v, %v", got, err)
		}
		for _, bad := range []time.Duration{time.Millisecond, 49 * time.Hour} {
			if _, err := l.SetRetention(ctx, "ret", bad); !errors.Is(err, log.ErrInvalid) {
				t.Errorf("SetRetention(%s) = %v, want ErrInvalid", bad, err)
			}
		}
		if r, err := l.Retention(ctx, "ret"); err != nil || r != 48*time.Hour {
			t.Fatalf("retention %s (%v) after refusals, want 48h", r, err)
		}
		if _, err := l.SetRetention(ctx, "nope", time.Hour); !errors.Is(err, log.ErrTopicNotFound) {
			t.Errorf("SetRetention of an unknown topic = %v", err)
		}
	})
}
