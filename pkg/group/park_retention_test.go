package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// TestParkingTopicKeepsParkedRecordsAsLongAsAnySource: a parking group's parking topic
// holds records of every topic the group consumes, until their key is released, so it
// is created keeping them as long as any topic of the deployment may keep its own: the
// deployment's maximum retention, or group.DefaultParkingRetention where it sets none.
// Before, it got the default retention (24 h) whatever its sources kept, and a key
// released later had lost its parked records.
func TestParkingTopicKeepsParkedRecordsAsLongAsAnySource(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		for _, c := range []struct {
			name     string
			max      time.Duration
			want     time.Duration
			grp      string
			retained time.Duration // the source topic's retention
		}{
			{"with a maximum retention", 10 * 24 * time.Hour, 10 * 24 * time.Hour, "billing", 9 * 24 * time.Hour},
			{"without one", 0, group.DefaultParkingRetention, "refunds", 3 * 24 * time.Hour},
		} {
			l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: log.TopicDefaults{MaxRetention: c.max}})
			if err != nil {
				t.Fatal(err)
			}
			src := c.grp + "-orders"
			if _, err := l.CreateTopic(ctx, src, 1, c.retained); err != nil {
				t.Fatal(err)
			}
			coord := group.New(s.Meta, l, nil)
			if _, err := coord.SetSettings(ctx, c.grp, group.Settings{ResetPolicy: "earliest", MaxAttempts: 1, OnFailure: group.OnFailurePark}); err != nil {
				t.Fatal(err)
			}
			pt, err := l.Topic(ctx, wire.ParkingTopic(c.grp))
			if err != nil {
				t.Fatal(err)
			}
			if pt.Retention != c.want || pt.Retention < c.retained {
				t.Errorf("%s: the parking topic keeps records %s, want %s (its source keeps them %s)", c.name, pt.Retention, c.want, c.retained)
			}
		}
	})
}
