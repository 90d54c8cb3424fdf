package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/store"
)

// TestPlanTopicAlter: a topic alter as a table: retention.ms set, reset by DELETE and,
// for AlterConfigs, by leaving it out; cleanup.policy=delete accepted as a no-op;
// compaction, read-only and unknown configs, bad values, list operations on retention.ms
// and a config named twice refused, changing nothing.
func TestPlanTopicAlter(t *testing.T) {
	cur := store.Topic{Name: "t", Retention: 3 * time.Hour}
	def := 24 * time.Hour
	v := kmsg.StringPtr
	for _, tc := range []struct {
		name        string
		ops         []alterOp
		incremental bool
		retention   time.Duration
		code        int16
	}{
		{"set retention", []alterOp{{cfgRetentionMs, opSet, v("7200000")}}, true, 2 * time.Hour, 0},
		{"delete retention", []alterOp{{cfgRetentionMs, opDelete, nil}}, true, def, 0},
		{"nothing named, incremental", nil, true, 3 * time.Hour, 0},
		{"nothing named, full replace", nil, false, def, 0},
		{"full replace with retention", []alterOp{{cfgRetentionMs, opSet, v("60000")}, {cfgCleanupPolicy, opSet, v("delete")}}, false, time.Minute, 0},
		{"cleanup.policy delete", []alterOp{{cfgCleanupPolicy, opSet, v("delete")}}, true, 3 * time.Hour, 0},
		{"cleanup.policy append delete", []alterOp{{cfgCleanupPolicy, opAppend, v("delete")}}, true, 3 * time.Hour, 0},
		{"cleanup.policy compact", []alterOp{{cfgCleanupPolicy, opSet, v("compact")}}, true, 0, invalidConfig},
		{"cleanup.policy subtract", []alterOp{{cfgCleanupPolicy, opSubtract, v("delete")}}, true, 0, invalidConfig},
		{"retention below the minimum", []alterOp{{cfgRetentionMs, opSet, v("10")}}, true, 0, invalidConfig},
		{"retention not a number", []alterOp{{cfgRetentionMs, opSet, v("1h")}}, true, 0, invalidConfig},
		{"retention null", []alterOp{{cfgRetentionMs, opSet, nil}}, true, 0, invalidConfig},
		{"retention appended", []alterOp{{cfgRetentionMs, opAppend, v("60000")}}, true, 0, invalidRequest},
		{"unknown operation", []alterOp{{cfgRetentionMs, 7, v("60000")}}, true, 0, invalidRequest},
		{"read-only max.message.bytes", []alterOp{{cfgMaxMessage, opSet, v("100")}}, true, 0, invalidConfig},
		{"read-only timestamp type", []alterOp{{cfgTimestampType, opSet, v("LogAppendTime")}}, true, 0, invalidConfig},
		{"unknown config", []alterOp{{"segment.ms", opSet, v("1000")}}, true, 0, invalidConfig},
		{"good then bad", []alterOp{{cfgRetentionMs, opSet, v("7200000")}, {"segment.ms", opSet, v("1")}}, true, 0, invalidConfig},
		{"named twice", []alterOp{{cfgRetentionMs, opSet, v("7200000")}, {cfgRetentionMs, opSet, v("3600000")}}, true, 0, invalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ret, code, msg := planTopicAlter(tc.ops, cur, def, 0, tc.incremental)
			if code != tc.code || (code == 0 && ret != tc.retention) || (code != 0 && msg == "") {
				t.Fatalf("plan = %s, %d %q; want %s, %d", ret, code, msg, tc.retention, tc.code)
			}
		})
	}
}

// TestPlanTopicAlterForever: retention.ms -1 (Kafka's "for ever") keeps records for ever
// where the deployment has no maximum retention; where it has one, -1 and any retention
// above it are refused naming the setting (strata:maxRetentionDays), and one within it
// is set.
func TestPlanTopicAlterForever(t *testing.T) {
	cur := store.Topic{Name: "t", Retention: 3 * time.Hour}
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		value     string
		max       time.Duration
		retention time.Duration
		refused   bool
	}{
		{"-1", 0, forever, false},
		{"-1", week, 0, true},
		{"691200000", week, 0, true}, // 8 days
		{"604800000", week, week, false},
		{"-2", 0, 0, true},
	} {
		ret, code, msg := planTopicAlter([]alterOp{{cfgRetentionMs, opSet, kmsg.StringPtr(tc.value)}}, cur, time.Hour, tc.max, true)
		switch {
		case tc.refused && (code != invalidConfig || (tc.max > 0 && !strings.Contains(msg, "strata:maxRetentionDays"))):
			t.Errorf("retention.ms=%s, maximum %s: %d %q; want INVALID_CONFIG naming strata:maxRetentionDays", tc.value, tc.max, code, msg)
		case !tc.refused && (code != 0 || ret != tc.retention):
			t.Errorf("retention.ms=%s, maximum %s: %s, %d %q; want %s", tc.value, tc.max, ret, code, msg, tc.retention)
		}
	}
	if got := retentionMsValue(forever); got != "-1" {
		t.Errorf("retention.ms of a topic kept for ever: %q, want -1", got)
	}
}

// TestTopicConfigsTimestampType: message.timestamp.type says the topic's: CreateTime by
// default, LogAppendTime (a topic setting) when the topic stamps append times.
func TestTopicConfigsTimestampType(t *testing.T) {
	for _, lat := range []bool{false, true} {
		want, src := "CreateTime", kmsg.ConfigSourceDefaultConfig
		if lat {
			want, src = "LogAppendTime", kmsg.ConfigSourceDynamicTopicConfig
		}
		for _, e := range topicConfigs(store.Topic{Retention: time.Hour, LogAppendTime: lat}, time.Hour, 100) {
			if e.name == cfgTimestampType && (e.value != want || e.source != src || !e.readOnly) {
				t.Errorf("LogAppendTime %v: %+v", lat, e)
			}
		}
	}
}
