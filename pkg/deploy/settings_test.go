package deploy_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/deploy"
)

// TestSettingNamesAreTheConstants: every Env* name of a setting is a field of Settings.
func TestSettingNamesAreTheConstants(t *testing.T) {
	names := deploy.SettingNames()
	for _, n := range []string{deploy.EnvBucket, deploy.EnvObjectPrefix, deploy.EnvTablePrefix, deploy.EnvGrants,
		deploy.EnvSubscriptions, deploy.EnvTopic, deploy.EnvGroup, deploy.EnvBusinessTable, deploy.EnvMetricsNamespace,
		deploy.EnvGroupCommitWindow, deploy.EnvBootstrap, deploy.EnvDefaultPartitions, deploy.EnvDefaultRetentionMS,
		deploy.EnvMaxRetentionMS} {
		if !slices.Contains(names, n) {
			t.Errorf("%s is not a field of deploy.Settings", n)
		}
	}
}

// TestSettingsRoundTrip: ParseSettings reads back what Env renders, for any settings.
func TestSettingsRoundTrip(t *testing.T) {
	word := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._-]{0,20}`)
	rapid.Check(t, func(t *rapid.T) {
		s := deploy.Settings{
			Bucket:            word.Draw(t, "bucket"),
			ObjectPrefix:      rapid.SampledFrom([]string{"", "p/", "a/b/"}).Draw(t, "prefix"),
			TablePrefix:       word.Draw(t, "tables"),
			Bootstrap:         rapid.Bool().Draw(t, "bootstrap"),
			DefaultPartitions: rapid.IntRange(0, 1024).Draw(t, "partitions"),
			DefaultRetention:  time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "retention")) * time.Millisecond,
			MaxRetention:      time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "max")) * time.Millisecond,
			GroupCommitWindow: rapid.SampledFrom([]time.Duration{0, -1, time.Millisecond, 5 * time.Millisecond}).Draw(t, "window"),
			Topic:             word.Draw(t, "topic"),
		}
		if rapid.Bool().Draw(t, "subscribed") {
			s.Subscriptions = []deploy.Subscription{{Topic: word.Draw(t, "st"), Group: word.Draw(t, "sg"), Function: word.Draw(t, "sf")}}
		}
		env, err := s.Env()
		if err != nil {
			t.Fatal(err)
		}
		got, err := deploy.ParseSettings(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("parsed %+v from %v, want %+v", got, env, s)
		}
	})
}

func FuzzParseSettings(f *testing.F) {
	f.Add("4", "86400000", "5ms", `[{"topic":"a","group":"b","function":"c"}]`)
	f.Add("x", "-1", "soon", `{`)
	f.Fuzz(func(t *testing.T, partitions, retention, window, subs string) {
		env := map[string]string{deploy.EnvDefaultPartitions: partitions, deploy.EnvDefaultRetentionMS: retention,
			deploy.EnvGroupCommitWindow: window, deploy.EnvSubscriptions: subs}
		s, err := deploy.ParseSettings(func(k string) string { return env[k] })
		if err != nil {
			return
		}
		out, err := s.Env()
		if err != nil {
			t.Fatal(err)
		}
		again, err := deploy.ParseSettings(func(k string) string { return out[k] })
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-parse of %v: %+v, %v", out, again, err)
		}
	})
}
