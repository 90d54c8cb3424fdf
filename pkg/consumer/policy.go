package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/stratalog/strata/pkg/group"
)

// policy is what a run applies to failed records and lost positions.
type policy struct {
	ResetPolicy     string
	MaxAttempts     int
	DeadLetterTopic string
	// OnFailure is group.OnFailureDeadLetter or group.OnFailurePark.
	OnFailure string
}

// override is a configuration field that differs from the group's setting.
type override struct {
	Setting, Group, Config string
}

// resolvePolicy is the group's settings with cfg's set fields over them, and the
// overrides that changed something. A group setting left empty (an old row) takes the
// default a new group gets.
func resolvePolicy(s group.Settings, cfg Config) (policy, []override) {
	p := policy{ResetPolicy: s.ResetPolicy, MaxAttempts: s.MaxAttempts, DeadLetterTopic: s.DeadLetterTopic, OnFailure: s.OnFailure}
	if p.OnFailure == "" {
		p.OnFailure = group.DefaultOnFailure
	}
	if p.ResetPolicy == "" {
		p.ResetPolicy = group.DefaultResetPolicy
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = group.DefaultMaxAttempts
	}
	var out []override
	if cfg.ResetPolicy != "" && cfg.ResetPolicy != p.ResetPolicy {
		out = append(out, override{"reset_policy", p.ResetPolicy, cfg.ResetPolicy})
		p.ResetPolicy = cfg.ResetPolicy
	}
	if cfg.MaxAttempts > 0 && cfg.MaxAttempts != p.MaxAttempts {
		out = append(out, override{"max_attempts", strconv.Itoa(p.MaxAttempts), strconv.Itoa(cfg.MaxAttempts)})
		p.MaxAttempts = cfg.MaxAttempts
	}
	if cfg.DeadLetterTopic != "" && cfg.DeadLetterTopic != p.DeadLetterTopic {
		out = append(out, override{"dead_letter_topic", p.DeadLetterTopic, cfg.DeadLetterTopic})
		p.DeadLetterTopic = cfg.DeadLetterTopic
	}
	if cfg.OnFailure != "" && cfg.OnFailure != p.OnFailure {
		out = append(out, override{"on_failure", p.OnFailure, cfg.OnFailure})
		p.OnFailure = cfg.OnFailure
	}
	return p, out
}

// policy reads the group's settings and applies the configuration's overrides, logging
// each one; a group that does not exist yet has the defaults its first lease gives it.
func (c *Consumer) policy(ctx context.Context) (policy, error) {
	s, err := c.coord.GetSettings(ctx, c.cfg.Group)
	switch {
	case errors.Is(err, group.ErrNotFound):
		s = group.Settings{ResetPolicy: group.DefaultResetPolicy, MaxAttempts: group.DefaultMaxAttempts,
			DeadLetterTopic: group.DefaultDeadLetterTopic, OnFailure: group.DefaultOnFailure}
	case err != nil:
		return policy{}, fmt.Errorf("consumer: settings of group %q: %w", c.cfg.Group, err)
	}
	p, overrides := resolvePolicy(s, c.cfg)
	for _, o := range overrides {
		c.cfg.Logger.Info("consumer: configuration overrides the group's setting", "group", c.cfg.Group, "topic", c.cfg.Topic,
			"setting", o.Setting, "group_value", o.Group, "config_value", o.Config)
	}
	return p, nil
}
