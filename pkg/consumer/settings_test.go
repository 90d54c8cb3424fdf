package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
)

// TestGroupSettingsReachTheConsumer is issue 17.4: the group's stored settings (max
// attempts, dead-letter topic, reset policy) are what a consumer applies when its
// configuration leaves them unset; a set field overrides them and is logged. Before,
// pkg/consumer never read them: a poison record was tried its own 5 times and dropped
// while the group said "dead-letter to orders.dlq after 2".
func TestGroupSettingsReachTheConsumer(t *testing.T) {
	cases := []struct {
		name     string
		settings group.Settings
		mod      func(*consumer.Config)
		// want: attempts at the poison record, dead-lettered, dropped, handled, and
		// the override logged (setting name) or "".
		attempts, dead, dropped, handled int
		override                         string
	}{
		{"group's attempts and dead-letter topic", group.Settings{ResetPolicy: "earliest", MaxAttempts: 2, DeadLetterTopic: "orders.dlq"},
			nil, 2, 1, 0, 5, ""},
		{"config's attempts override", group.Settings{ResetPolicy: "earliest", MaxAttempts: 2, DeadLetterTopic: "orders.dlq"},
			func(c *consumer.Config) { c.MaxAttempts = 3 }, 3, 1, 0, 5, "max_attempts"},
		{"config's dead-letter topic overrides a group without one", group.Settings{ResetPolicy: "earliest", MaxAttempts: 1},
			func(c *consumer.Config) { c.DeadLetterTopic = "orders.dlq" }, 1, 1, 0, 5, "dead_letter_topic"},
		{"group without a dead-letter topic drops", group.Settings{ResetPolicy: "earliest", MaxAttempts: 4},
			nil, 4, 0, 1, 5, ""},
		{"group's reset policy latest: a new group starts at the end", group.Settings{ResetPolicy: "latest", MaxAttempts: 2},
			nil, 0, 0, 0, 0, ""},
		{"config's reset policy overrides the group's", group.Settings{ResetPolicy: "latest", MaxAttempts: 2, DeadLetterTopic: "orders.dlq"},
			func(c *consumer.Config) { c.ResetPolicy = consumer.ResetEarliest }, 2, 1, 0, 5, "reset_policy"},
	}
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 6)
		if _, err := f.log.CreateTopic(ctx, "orders.dlq", 1, 0); err != nil {
			t.Fatal(err)
		}
		dlqBefore := int64(0)
		for i, c := range cases {
			grp := "g" + string(rune('a'+i))
			if _, err := f.coord.SetSettings(ctx, grp, c.settings); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			attempts := 0
			h := func(_ context.Context, r consumer.Record) error {
				if r.Offset == 2 {
					mu.Lock()
					attempts++
					mu.Unlock()
					return errors.New("poison")
				}
				return nil
			}
			var logs bytes.Buffer
			var lmu sync.Mutex
			cons := f.consumer(t, grp, "m-0", h, func(cfg *consumer.Config) {
				cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &lmu}, nil))
				if c.mod != nil {
					c.mod(cfg)
				}
			})
			st, err := cons.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if attempts != c.attempts || st.DeadLettered != int64(c.dead) || st.Dropped != int64(c.dropped) || st.Handled != int64(c.handled) {
				t.Errorf("%s: %d attempts, stats %+v; want %d attempts, %d dead-lettered, %d dropped, %d handled",
					c.name, attempts, st, c.attempts, c.dead, c.dropped, c.handled)
			}
			if got := f.committed(t, grp); got != 6 {
				t.Errorf("%s: committed %d, want 6", c.name, got)
			}
			lmu.Lock()
			logged := logs.String()
			lmu.Unlock()
			if c.override != "" && (!strings.Contains(logged, "overrides the group's setting") || !strings.Contains(logged, "setting="+c.override)) {
				t.Errorf("%s: override of %q not logged: %s", c.name, c.override, logged)
			}
			if c.override == "" && strings.Contains(logged, "overrides") {
				t.Errorf("%s: override logged with none configured: %s", c.name, logged)
			}
			_, hw, err := f.log.Bounds(ctx, "orders.dlq", 0)
			if err != nil || hw-dlqBefore != int64(c.dead) {
				t.Errorf("%s: dead-letter topic grew by %d, %v; want %d", c.name, hw-dlqBefore, err, c.dead)
			}
			dlqBefore = hw
		}
	})
}

// lockedWriter serialises writes of concurrent log calls.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestGroupSettingsUnreadableFailsTheRun: when the settings cannot be read the run
// fails (releasing its lease) instead of guessing a policy.
func TestGroupSettingsUnreadableFailsTheRun(t *testing.T) {
	f := newFixture(t, backendtest.Local(context.Background(), t), "orders", 3)
	cons, err := consumer.New(f.log, settingsDown{f.coord}, consumer.Config{Group: "billing", Topic: "orders", Member: "m-0",
		Handler: func(context.Context, consumer.Record) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	st, err := cons.Run(context.Background(), 0, consumer.RunOptions{UntilCaughtUp: true})
	if !errors.Is(err, group.ErrUnavailable) || st.Handled != 0 {
		t.Fatalf("run = %+v, %v; want nothing handled and the settings error", st, err)
	}
	if _, err := f.coord.Acquire(context.Background(), "billing", "orders", 0, "m-1", 0); err != nil {
		t.Fatalf("lease not released: %v", err)
	}
}

type settingsDown struct{ *group.Coordinator }

func (settingsDown) GetSettings(context.Context, string) (group.Settings, error) {
	return group.Settings{}, group.ErrUnavailable
}
