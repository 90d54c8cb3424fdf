package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/store"
)

// TestPlanTopicAlter: a topic alter as a table: retention.ms set, reset by DELETE and,
// for AlterConfigs, by leaving it out; cleanup.policy set, appended to and subtracted
// from as Kafka's list, a compacted topic never back to delete; the compaction settings
// set and reset; read-only and unknown configs, bad values, list operations on
// retention.ms and a config named twice refused, changing nothing.
func TestPlanTopicAlter(t *testing.T) {
	cur := store.Topic{Name: "t", Retention: 3 * time.Hour}
	compacted := store.Topic{Name: "c", Retention: 3 * time.Hour, Cleanup: store.CleanupCompactDelete, MinCompactionLag: time.Minute}
	def := 24 * time.Hour
	v := kmsg.StringPtr
	for _, tc := range []struct {
		name        string
		cur         *store.Topic
		ops         []alterOp
		incremental bool
		retention   time.Duration
		code        int16
		cleanup     store.TopicCleanup
	}{
		{"compact", nil, []alterOp{{cfgCleanupPolicy, opSet, v("compact")}}, true, 3 * time.Hour, 0, store.TopicCleanup{Cleanup: store.CleanupCompact}},
		{"append compact", nil, []alterOp{{cfgCleanupPolicy, opAppend, v("compact")}}, true, 3 * time.Hour, 0, store.TopicCleanup{Cleanup: store.CleanupCompactDelete}},
		{"subtract delete", &compacted, []alterOp{{cfgCleanupPolicy, opSubtract, v("delete")}}, true, 3 * time.Hour, 0, store.TopicCleanup{Cleanup: store.CleanupCompact, MinCompactionLag: time.Minute}},
		{"subtract compact", &compacted, []alterOp{{cfgCleanupPolicy, opSubtract, v("compact")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"compacted to delete", &compacted, []alterOp{{cfgCleanupPolicy, opSet, v("delete")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"compacted, full replace", &compacted, nil, false, 0, invalidConfig, store.TopicCleanup{}},
		{"compaction settings", &compacted, []alterOp{{cfgMinCompaction, opDelete, nil}, {cfgMaxCompaction, opSet, v("60000")}, {cfgDeleteRetain, opSet, v("1000")}}, true, 3 * time.Hour, 0,
			store.TopicCleanup{Cleanup: store.CleanupCompactDelete, MaxCompactionLag: time.Minute, DeleteRetention: time.Second}},
		{"max lag Long.MAX is unset", &compacted, []alterOp{{cfgMaxCompaction, opSet, v(kafkaForever)}}, true, 3 * time.Hour, 0, store.TopicCleanup{Cleanup: store.CleanupCompactDelete, MinCompactionLag: time.Minute}},
		{"max lag below min", &compacted, []alterOp{{cfgMaxCompaction, opSet, v("1000")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"negative lag", nil, []alterOp{{cfgDeleteRetain, opSet, v("-1")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"lag appended", nil, []alterOp{{cfgDeleteRetain, opAppend, v("1")}}, true, 0, invalidRequest, store.TopicCleanup{}},
		{"unknown policy", nil, []alterOp{{cfgCleanupPolicy, opSet, v("compacted")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"set retention", nil, []alterOp{{cfgRetentionMs, opSet, v("7200000")}}, true, 2 * time.Hour, 0, store.TopicCleanup{}},
		{"delete retention", nil, []alterOp{{cfgRetentionMs, opDelete, nil}}, true, def, 0, store.TopicCleanup{}},
		{"nothing named, incremental", nil, nil, true, 3 * time.Hour, 0, store.TopicCleanup{}},
		{"nothing named, full replace", nil, nil, false, def, 0, store.TopicCleanup{}},
		{"full replace with retention", nil, []alterOp{{cfgRetentionMs, opSet, v("60000")}, {cfgCleanupPolicy, opSet, v("delete")}}, false, time.Minute, 0, store.TopicCleanup{}},
		{"cleanup.policy delete", nil, []alterOp{{cfgCleanupPolicy, opSet, v("delete")}}, true, 3 * time.Hour, 0, store.TopicCleanup{}},
		{"cleanup.policy append delete", nil, []alterOp{{cfgCleanupPolicy, opAppend, v("delete")}}, true, 3 * time.Hour, 0, store.TopicCleanup{}},
		{"cleanup.policy subtract", nil, []alterOp{{cfgCleanupPolicy, opSubtract, v("delete")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"retention below the minimum", nil, []alterOp{{cfgRetentionMs, opSet, v("10")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"retention -2", nil, []alterOp{{cfgRetentionMs, opSet, v("-2")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"retention not a number", nil, []alterOp{{cfgRetentionMs, opSet, v("1h")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"retention null", nil, []alterOp{{cfgRetentionMs, opSet, nil}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"retention appended", nil, []alterOp{{cfgRetentionMs, opAppend, v("60000")}}, true, 0, invalidRequest, store.TopicCleanup{}},
		{"unknown operation", nil, []alterOp{{cfgRetentionMs, 7, v("60000")}}, true, 0, invalidRequest, store.TopicCleanup{}},
		{"read-only max.message.bytes", nil, []alterOp{{cfgMaxMessage, opSet, v("100")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"read-only timestamp type", nil, []alterOp{{cfgTimestampType, opSet, v("LogAppendTime")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"unknown config", nil, []alterOp{{"segment.ms", opSet, v("1000")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"good then bad", nil, []alterOp{{cfgRetentionMs, opSet, v("7200000")}, {"segment.ms", opSet, v("1")}}, true, 0, invalidConfig, store.TopicCleanup{}},
		{"named twice", nil, []alterOp{{cfgRetentionMs, opSet, v("7200000")}, {cfgRetentionMs, opSet, v("3600000")}}, true, 0, invalidRequest, store.TopicCleanup{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cur
			if tc.cur != nil {
				c = *tc.cur
			}
			plan, code, msg := planTopicAlter(tc.ops, c, def, 0, tc.incremental)
			if code != tc.code || (code == 0 && (plan.retention != tc.retention || plan.cleanup != tc.cleanup)) || (code != 0 && msg == "") {
				t.Fatalf("plan = %+v, %d %q; want %s %+v, %d", plan, code, msg, tc.retention, tc.cleanup, tc.code)
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
		plan, code, msg := planTopicAlter([]alterOp{{cfgRetentionMs, opSet, kmsg.StringPtr(tc.value)}}, cur, time.Hour, tc.max, true)
		ret := plan.retention
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
