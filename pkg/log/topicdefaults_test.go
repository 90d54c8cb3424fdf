package log_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TestCreateTopicDefaultsAndMaxRetention: partitions and retention left out take the
// configured defaults; a retention above the maximum is refused naming the maximum and
// creates nothing.
func TestCreateTopicDefaultsAndMaxRetention(t *testing.T) {
	week := 7 * 24 * time.Hour
	for _, c := range []struct {
		name           string
		defaults       log.TopicDefaults
		partitions     int32
		retention      time.Duration
		wantPartitions int32
		wantRetention  time.Duration
		refused        bool
	}{
		{"built-in defaults", log.TopicDefaults{}, 0, 0, log.DefaultPartitions, log.DefaultRetention, false},
		{"configured defaults", log.TopicDefaults{Partitions: 8, Retention: 48 * time.Hour}, 0, 0, 8, 48 * time.Hour, false},
		{"explicit values win", log.TopicDefaults{Partitions: 8, Retention: 48 * time.Hour}, 2, time.Hour, 2, time.Hour, false},
		{"at the maximum", log.TopicDefaults{MaxRetention: week}, 1, week, 1, week, false},
		{"30 days on a 7-day stack", log.TopicDefaults{MaxRetention: week}, 1, 30 * 24 * time.Hour, 0, 0, true},
		{"no maximum", log.TopicDefaults{}, 1, 365 * 24 * time.Hour, 1, 365 * 24 * time.Hour, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := backendtest.Local(context.Background(), t)
			l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: c.defaults})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			got, err := l.CreateTopic(ctx, "orders", c.partitions, c.retention)
			if c.refused {
				if !errors.Is(err, log.ErrInvalid) || !strings.Contains(err.Error(), "maximum retention_ms 604800000") {
					t.Fatalf("err = %v, want ErrInvalid naming the maximum", err)
				}
				if _, err := l.Topic(ctx, "orders"); !errors.Is(err, log.ErrTopicNotFound) && !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("refused topic exists: %v", err)
				}
				return
			}
			if err != nil || got.Partitions != c.wantPartitions || got.Retention != c.wantRetention {
				t.Fatalf("%+v, %v; want %d partitions, %s", got, err, c.wantPartitions, c.wantRetention)
			}
		})
	}
}

func TestTopicDefaultsValidate(t *testing.T) {
	for _, d := range []log.TopicDefaults{
		{Partitions: -1}, {Partitions: log.MaxPartitions + 1}, {Retention: time.Millisecond},
		{MaxRetention: time.Millisecond}, {MaxRetention: time.Hour}, // default 24h above it
		{Retention: 48 * time.Hour, MaxRetention: 24 * time.Hour},
	} {
		s := backendtest.Local(context.Background(), t)
		if _, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: d}); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
}

// TestMissingObjectAboveLogStart: an object missing above the log start (a lifecycle
// rule expired it early) is corruption, and the message says it is above the log start,
// not below it.
func TestMissingObjectAboveLogStart(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 1)
		p := int32(0)
		if _, err := l.Append(ctx, "t", []log.Record{{Value: []byte("a"), Partition: &p}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Objects.List(ctx, "v1/t/", func(o store.ObjectInfo) error { return s.Objects.Delete(ctx, o.Key) }); err != nil {
			t.Fatal(err)
		}
		_, err := l.Poll(ctx, "t", 0, 0, log.PollOptions{})
		if !errors.Is(err, log.ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
		if msg := err.Error(); strings.Contains(msg, "below the log start") || !strings.Contains(msg, "offset 0 is missing, above the log start 0") {
			t.Fatalf("message %q does not say the object above the log start is missing", msg)
		}
	})
}

// TestRetentionPinWithinMaxRetention: a topic's retention plus its pin cap must stay
// within the deployment's maximum retention (the bucket's lifecycle rule is derived from
// it), at create and when the pin is set later; a refused pin changes nothing.
func TestRetentionPinWithinMaxRetention(t *testing.T) {
	ctx := context.Background()
	week := 7 * 24 * time.Hour
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: log.TopicDefaults{MaxRetention: week}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopicWith(ctx, "over", log.TopicSpec{Partitions: 1, Retention: 6 * 24 * time.Hour, RetentionPin: 25 * time.Hour}); !errors.Is(err, log.ErrInvalid) ||
		!strings.Contains(err.Error(), "maximum retention_ms 604800000") {
		t.Fatalf("create with retention + pin above the maximum: %v, want ErrInvalid naming the maximum", err)
	}
	if _, err := l.Topic(ctx, "over"); err == nil {
		t.Fatal("the refused topic was created")
	}
	got, err := l.CreateTopicWith(ctx, "orders", log.TopicSpec{Partitions: 1, Retention: 6 * 24 * time.Hour, RetentionPin: 24 * time.Hour})
	if err != nil || got.RetentionPin != 24*time.Hour {
		t.Fatalf("create at the maximum: %+v, %v", got, err)
	}
	for _, pin := range []time.Duration{24*time.Hour + time.Millisecond, -time.Second} {
		if _, err := l.SetRetentionPin(ctx, "orders", pin); !errors.Is(err, log.ErrInvalid) {
			t.Fatalf("SetRetentionPin(%s): %v, want ErrInvalid", pin, err)
		}
	}
	if got, err := s.Meta.GetTopic(ctx, "orders"); err != nil || got.RetentionPin != 24*time.Hour {
		t.Fatalf("after refused pins: %+v, %v; want the pin unchanged", got, err)
	}
	if got, err := l.SetRetentionPin(ctx, "orders", time.Hour); err != nil || got.RetentionPin != time.Hour {
		t.Fatalf("SetRetentionPin(1h): %+v, %v", got, err)
	}
	if _, err := l.SetRetentionPin(ctx, "nope", time.Hour); !errors.Is(err, log.ErrTopicNotFound) {
		t.Fatalf("SetRetentionPin of an unknown topic: %v, want ErrTopicNotFound", err)
	}
}

// TestPinnedIndexEntryTTL: index entries expire a day after the deployment's maximum
// retention, which any retention + pin cap — the one at the append or one raised later
// — fits, so a TTL never takes an entry under a pinned log start; without a maximum they
// get no TTL (the retention pass deletes them).
func TestPinnedIndexEntryTTL(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := time.UnixMilli(1_780_000_000_000)
		for _, c := range []struct {
			name string
			max  time.Duration
			want time.Time
		}{
			{"pinned-max", 10 * 24 * time.Hour, now.Add(10*24*time.Hour + 24*time.Hour)},
			{"pinned-nomax", 0, time.Time{}},
		} {
			l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return now },
				Topics: log.TopicDefaults{MaxRetention: c.max}})
			if err != nil {
				t.Fatal(err)
			}
			topic, err := l.CreateTopicWith(ctx, c.name, log.TopicSpec{Partitions: 1, Retention: time.Hour, RetentionPin: 48 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(ctx, c.name, []log.Record{{Value: []byte("v")}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			es, err := s.Meta.IndexEntries(ctx, topic.ID(), 0, 0, 10)
			if err != nil || len(es) != 1 {
				t.Fatalf("%s: entries %v, %v; want one", c.name, es, err)
			}
			if !es[0].ExpiresAt.Equal(c.want) {
				t.Fatalf("%s: entry expires at %s, want %s (append + the maximum retention + a day, none without a maximum)", c.name, es[0].ExpiresAt.UTC(), c.want.UTC())
			}
		}
	})
}
