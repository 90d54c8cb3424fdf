package node_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestFromEnvReadsEverySetting: FromEnv looks up every variable of deploy.Settings, so
// the set of variables the node reads is derived from that one definition (infra's
// tests compare the stack's environment with it).
func TestFromEnvReadsEverySetting(t *testing.T) {
	asked := map[string]bool{}
	if _, err := node.FromEnv(func(k string) string { asked[k] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	for _, name := range deploy.SettingNames() {
		if !asked[name] {
			t.Errorf("FromEnv never reads %s", name)
		}
	}
	for _, name := range []string{deploy.EnvEndpoint, deploy.EnvEndpointAlias, deploy.EnvMaxConcurrency} {
		if !asked[name] {
			t.Errorf("FromEnv never reads %s", name)
		}
	}
}

// sample holds a valid, non-default value of every setting; a setting added to
// deploy.Settings without one here fails TestEverySettingReachesTheConfig.
var sample = map[string]string{
	deploy.EnvBucket:              "b",
	deploy.EnvObjectPrefix:        "p/",
	deploy.EnvTablePrefix:         "t-",
	deploy.EnvBootstrap:           "1",
	deploy.EnvMetricsNamespace:    "NS",
	deploy.EnvDefaultPartitions:   "8",
	deploy.EnvDefaultRetentionMS:  "3600000",
	deploy.EnvMaxRetentionMS:      "2592000000",
	deploy.EnvGroupCommitWindow:   "3ms",
	deploy.EnvGroupCommitBudget:   "16777216",
	deploy.EnvGrants:              `{"arn:aws:iam::1:role/*":[{"resource":"topic:*","ops":["read"]}]}`,
	deploy.EnvSubscriptions:       `[{"topic":"orders","group":"g","function":"f"}]`,
	deploy.EnvSubscriptionsPath:   "/strata/t-subscriptions",
	deploy.EnvEveryPrincipalAdmin: "1",
	deploy.EnvTopic:               "orders",
	deploy.EnvGroup:               "g",
	deploy.EnvBusinessTable:       "biz",
	deploy.EnvRetentionFanout:     "1",
	deploy.EnvCompactFanout:       "1",
	deploy.EnvCompactFunction:     "strata-compact",
}

// TestEverySettingReachesTheConfig: each setting, set alone, changes the node's
// configuration: a variable the stack writes is one the node uses, not only parses.
func TestEverySettingReachesTheConfig(t *testing.T) {
	base, err := node.FromEnv(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range deploy.SettingNames() {
		v, ok := sample[name]
		if !ok {
			t.Errorf("no sample value for %s", name)
			continue
		}
		got, err := node.FromEnv(envOf(map[string]string{name: v}))
		if err != nil {
			t.Errorf("%s=%s: %v", name, v, err)
			continue
		}
		if reflect.DeepEqual(got, base) {
			t.Errorf("%s=%s changes nothing in the node's configuration", name, v)
		}
	}
}

func TestFromEnv(t *testing.T) {
	cfg, err := node.FromEnv(envOf(map[string]string{
		deploy.EnvBucket: " b ", deploy.EnvTablePrefix: "t-\n", deploy.EnvObjectPrefix: " p/",
		deploy.EnvDefaultPartitions: "8", deploy.EnvDefaultRetentionMS: "3600000", deploy.EnvMaxRetentionMS: "604800000",
		deploy.EnvEndpointAlias: " http://127.0.0.1:1 ",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := node.AWSConfig{Bucket: "b", TablePrefix: "t-", ObjectPrefix: "p/", Endpoint: "http://127.0.0.1:1"}
	if !reflect.DeepEqual(cfg.AWS, want) {
		t.Errorf("AWS %+v, want %+v (values trimmed alike)", cfg.AWS, want)
	}
	if cfg.Topics.Partitions != 8 || cfg.Topics.Retention != time.Hour || cfg.Topics.MaxRetention != 7*24*time.Hour {
		t.Errorf("topics %+v", cfg.Topics)
	}
	if cfg.Function.MetricsNamespace != deploy.MetricsNamespace || cfg.Function.BusinessTable != deploy.BusinessDefaultTable {
		t.Errorf("function defaults %+v", cfg.Function)
	}
	// The SDK's own variable wins over the alias.
	cfg, err = node.FromEnv(envOf(map[string]string{deploy.EnvEndpoint: "http://127.0.0.1:2", deploy.EnvEndpointAlias: "http://127.0.0.1:1"}))
	if err != nil || cfg.AWS.Endpoint != "http://127.0.0.1:2" {
		t.Errorf("endpoint %q, %v", cfg.AWS.Endpoint, err)
	}
}

func TestFromEnvGroupCommitWindow(t *testing.T) {
	for _, c := range []struct {
		window, concurrency string
		want                time.Duration
	}{
		{"", "", -1},
		{"", "1", -1},
		{"", "32", deploy.DefaultManagedGroupCommitWindow},
		{"", "many", -1},
		{"10ms", "", 10 * time.Millisecond},
		{"0", "32", -1},
	} {
		cfg, err := node.FromEnv(envOf(map[string]string{deploy.EnvGroupCommitWindow: c.window, deploy.EnvMaxConcurrency: c.concurrency}))
		if err != nil || cfg.GroupCommitWindow != c.want {
			t.Errorf("window %q concurrency %q: %v, %v; want %v", c.window, c.concurrency, cfg.GroupCommitWindow, err, c.want)
		}
	}
}

// TestGroupCommitBudgetReachesTheLog (issue 20 item 5): the stack's budget is the log's
// batch budget, next to the window, so a stack can run 250 ms / 16 MiB.
func TestGroupCommitBudgetReachesTheLog(t *testing.T) {
	cfg, err := node.FromEnv(envOf(map[string]string{deploy.EnvGroupCommitWindow: "250ms", deploy.EnvGroupCommitBudget: "16777216"}))
	if err != nil || cfg.GroupCommitWindow != 250*time.Millisecond || cfg.GroupCommitBytes != 16<<20 {
		t.Fatalf("window %v, budget %d, %v; want 250ms and 16 MiB", cfg.GroupCommitWindow, cfg.GroupCommitBytes, err)
	}
}

// TestGroupCommitBudgetBoundIsTheLogs: the stack refuses what the log would.
func TestGroupCommitBudgetBoundIsTheLogs(t *testing.T) {
	if deploy.MaxGroupCommitBudget != log.MaxGroupCommitBytes {
		t.Errorf("deploy.MaxGroupCommitBudget %d, log.MaxGroupCommitBytes %d", deploy.MaxGroupCommitBudget, log.MaxGroupCommitBytes)
	}
}

// TestFromEnvRefuses: a value that does not parse or is out of range is an error naming
// the variable.
func TestFromEnvRefuses(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{deploy.EnvDefaultPartitions, "four"},
		{deploy.EnvDefaultPartitions, "0"},
		{deploy.EnvDefaultPartitions, "1025"},
		{deploy.EnvDefaultRetentionMS, "1.5"},
		{deploy.EnvDefaultRetentionMS, "-1"},
		{deploy.EnvDefaultRetentionMS, "999"},
		{deploy.EnvMaxRetentionMS, "3600000"}, // below the default retention of 24 h
		{deploy.EnvGroupCommitWindow, "soon"},
		{deploy.EnvGroupCommitWindow, "-1ms"},
		{deploy.EnvGroupCommitBudget, "67108865"}, // above log.MaxGroupCommitBytes
		{deploy.EnvGroupCommitBudget, "lots"},
		{deploy.EnvGroupCommitWindow, "2s"},
		{deploy.EnvBootstrap, "yes"},
		{deploy.EnvSubscriptions, `[{"topic":"a"}]`},
		{deploy.EnvGrants, `{`},
		{"STRATA_FAULT_RATE", "lots"},
		{deploy.EnvEveryPrincipalAdmin, "true"},
	} {
		_, err := node.FromEnv(envOf(map[string]string{c.name: c.value}))
		if !errors.Is(err, node.ErrConfig) || !strings.Contains(err.Error(), c.name) && !strings.Contains(err.Error(), "retention") {
			t.Errorf("%s=%q: %v, want ErrConfig naming it", c.name, c.value, err)
		}
	}
}

// TestSettingsRoundTrip: what the stack renders (deploy.Settings.Env) is what the node
// parses back.
func TestSettingsRoundTrip(t *testing.T) {
	s := deploy.Settings{Bucket: "b", TablePrefix: "t-", DefaultPartitions: 4, DefaultRetention: 24 * time.Hour,
		MaxRetention: 7 * 24 * time.Hour, GroupCommitWindow: -1,
		Subscriptions: []deploy.Subscription{{Topic: "orders", Group: "g", Function: "f"}}}
	env, err := s.Env()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := node.FromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AWS.Bucket != "b" || cfg.Topics.MaxRetention != s.MaxRetention || cfg.Topics.Partitions != 4 ||
		cfg.GroupCommitWindow != -1 || !slices.Equal(cfg.Function.Subscriptions, s.Subscriptions) {
		t.Errorf("parsed back %+v from %v", cfg, env)
	}
}
