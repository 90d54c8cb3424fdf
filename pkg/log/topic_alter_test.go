package log_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
)

// TestShorterRetentionTakesEffectAtNextPass: a topic kept 7 days is altered to 1 hour;
// the next retention pass removes a record older than the new retention and keeps one
// within it, on every backend. Before the alter the same pass removes nothing.
func TestShorterRetentionTakesEffectAtNextPass(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := t.Context()
		t0 := time.UnixMilli(1_780_000_000_000)
		now := t0
		clock := func() time.Time { return now }
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "shrink", 1, 7*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, "shrink", []log.Record{{Value: []byte("old")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(2 * time.Hour)
		if _, err := l.Append(ctx, "shrink", []log.Record{{Value: []byte("new")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(2*time.Hour + 10*time.Minute)
		pass := func() {
			t.Helper()
			j := retention.Job{Meta: s.Meta, Objects: s.Objects, Clock: clock}
			if _, err := j.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		start := func() int64 {
			t.Helper()
			st, _, err := l.Bounds(ctx, "shrink", 0)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		pass()
		if st := start(); st != 0 {
			t.Fatalf("log start %d before the alter, want 0 (7d retention keeps both)", st)
		}
		if _, err := l.SetRetention(ctx, "shrink", time.Hour); err != nil {
			t.Fatal(err)
		}
		pass()
		if st := start(); st != 1 {
			t.Fatalf("log start %d after the alter and a pass, want 1 (the 2h-old record gone)", st)
		}
		res, err := l.Poll(ctx, "shrink", 0, 1, log.PollOptions{MaxRecords: 10})
		if err != nil || len(res.Records) != 1 || string(res.Records[0].Value) != "new" {
			t.Fatalf("poll from 1 = %+v, %v, want the 10-minute-old record kept", res, err)
		}
	})
}

// TestAlterRetentionAboveMaximumChangesNothing: on a deployment with a maximum
// retention, an alter above it (alone or with the topic's pin cap) is ErrInvalid and the
// topic keeps its retention and records, on every backend.
func TestAlterRetentionAboveMaximumChangesNothing(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := t.Context()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: log.TopicDefaults{MaxRetention: 7 * 24 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopicWith(ctx, "capped", log.TopicSpec{Partitions: 1, Retention: 24 * time.Hour, RetentionPin: 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, "capped", []log.Record{{Value: []byte("v")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []time.Duration{8 * 24 * time.Hour, 6*24*time.Hour + time.Millisecond} {
			if _, err := l.SetRetention(ctx, "capped", bad); !errors.Is(err, log.ErrInvalid) {
				t.Errorf("SetRetention(%s) = %v, want ErrInvalid", bad, err)
			}
		}
		top, err := l.Topic(ctx, "capped")
		if err != nil || top.Retention != 24*time.Hour || top.RetentionPin != 24*time.Hour {
			t.Fatalf("topic %+v (%v) after refusals, want retention 24h, pin 24h", top, err)
		}
		if _, hw, err := l.Bounds(ctx, "capped", 0); err != nil || hw != 1 {
			t.Fatalf("high watermark %d (%v), want 1", hw, err)
		}
	})
}
