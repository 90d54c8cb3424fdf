package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// Configs. A topic has the configs Strata keeps: retention.ms, cleanup.policy and the
// compaction settings (min.compaction.lag.ms, max.compaction.lag.ms,
// delete.retention.ms), stored per topic and alterable, and read-only ones
// that say what the gateway does (max.message.bytes, the append limit;
// message.timestamp.type, the topic's, set at creation; retention.bytes, -1: no
// retention by size). A
// broker describes the few settings clients ask about, all read-only. Alters decide
// first, for the whole resource (planTopicAlter), then change the cleanup settings and
// the retention: an unknown or read-only config, or a bad value, changes nothing.

// forever is the retention of a topic kept for ever (Kafka's retention.ms -1): the
// longest a time.Duration holds in whole milliseconds, as the HTTP API's retention_ms -1.
const forever = time.Duration(1<<63-1) / time.Millisecond * time.Millisecond

// parseRetentionMs is a retention.ms value in Strata's terms: milliseconds from
// log.MinRetention up, or -1 (kept for ever). Above the deployment's maximum maxR (0:
// none), -1 included, it is refused naming the setting that sets the maximum.
func parseRetentionMs(v string, maxR time.Duration) (time.Duration, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err == nil && ms == -1 && maxR > 0:
		return 0, fmt.Errorf("retention.ms -1 (kept for ever) is refused: this deployment has a maximum retention of %s (retention.ms %d), set by %s",
			maxR, maxR.Milliseconds(), httpapi.MaxRetentionSetting)
	case err == nil && ms == -1:
		return forever, nil
	case err != nil || ms < log.MinRetention.Milliseconds() || ms > int64(forever/time.Millisecond):
		return 0, fmt.Errorf("retention.ms must be -1 (for ever) or a count of milliseconds of at least %d, got %q", log.MinRetention.Milliseconds(), v)
	case maxR > 0 && time.Duration(ms)*time.Millisecond > maxR:
		return 0, fmt.Errorf("retention.ms %d is above this deployment's maximum retention of %s (retention.ms %d), set by %s",
			ms, maxR, maxR.Milliseconds(), httpapi.MaxRetentionSetting)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// retentionMsValue is retention.ms of a topic kept for r: -1 for ever.
func retentionMsValue(r time.Duration) string {
	if r >= forever {
		return "-1"
	}
	return strconv.FormatInt(r.Milliseconds(), 10)
}

// configEntry is one config as DescribeConfigs answers it.
type configEntry struct {
	name, value string
	source      kmsg.ConfigSource
	readOnly    bool
	typ         kmsg.ConfigType
	doc         string
}

// Topic config names.
const (
	cfgRetentionMs    = "retention.ms"
	cfgCleanupPolicy  = "cleanup.policy"
	cfgMaxMessage     = "max.message.bytes"
	cfgTimestampType  = "message.timestamp.type"
	cfgRetentionBytes = "retention.bytes"
	cfgMinCompaction  = "min.compaction.lag.ms"
	cfgMaxCompaction  = "max.compaction.lag.ms"
	cfgDeleteRetain   = "delete.retention.ms"
)

// kafkaForever is Kafka's "no bound" for a lag (Long.MAX_VALUE ms), which
// max.compaction.lag.ms defaults to; here an unset setting.
const kafkaForever = "9223372036854775807"

// maxConfigMs keeps a millisecond setting within a time.Duration.
const maxConfigMs = int64(time.Duration(1<<63-1) / time.Millisecond)

// parseCleanupPolicy reads cleanup.policy as Kafka writes it.
func parseCleanupPolicy(v string) (store.CleanupPolicy, error) {
	p, err := store.ParseCleanupPolicy(v)
	if err != nil || v == "" {
		return "", fmt.Errorf("cleanup.policy must be delete, compact or compact,delete, got %q", v)
	}
	return p, nil
}

// parseLagMs reads a compaction setting: a count of milliseconds from 0, Kafka's
// Long.MAX_VALUE meaning unset (0).
func parseLagMs(name, v string) (time.Duration, error) {
	if v == kafkaForever {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > maxConfigMs {
		return 0, fmt.Errorf("%s must be a count of milliseconds from 0 to %d, got %q", name, maxConfigMs, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// policyParts is a cleanup policy as the set Kafka's list config is.
func policyParts(p store.CleanupPolicy) (compact, del bool) {
	t := store.Topic{Cleanup: p}
	return t.Compacted(), t.DeletesByTime()
}

// policyOf is the policy of the parts (delete when neither: Kafka refuses an empty
// list, and so does the caller).
func policyOf(compact, del bool) store.CleanupPolicy {
	switch {
	case compact && del:
		return store.CleanupCompactDelete
	case compact:
		return store.CleanupCompact
	}
	return store.CleanupDelete
}

// cleanupConfigs are t's cleanup policy and compaction settings as configs.
func cleanupConfigs(t store.Topic) []configEntry {
	dyn, def := kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigSourceDefaultConfig
	policy, policySrc := string(store.CleanupDelete), def
	if t.Cleanup != "" && t.Cleanup != store.CleanupDelete {
		policy, policySrc = string(t.Cleanup), dyn
	}
	lag := func(d time.Duration, unset string) (string, kmsg.ConfigSource) {
		if d == 0 {
			return unset, def
		}
		return strconv.FormatInt(d.Milliseconds(), 10), dyn
	}
	minV, minS := lag(t.MinCompactionLag, "0")
	maxV, maxS := lag(t.MaxCompactionLag, kafkaForever)
	delV, delS := lag(t.DeleteRetention, strconv.FormatInt(store.DefaultDeleteRetention.Milliseconds(), 10))
	return []configEntry{
		{cfgCleanupPolicy, policy, policySrc, false, kmsg.ConfigTypeList,
			"delete: records older than retention.ms are removed; compact: the latest record of each key is kept (records need a key); compact,delete: both"},
		{cfgDeleteRetain, delV, delS, false, kmsg.ConfigTypeLong, "how long a tombstone of a compacted topic is kept after its append"},
		{cfgMaxCompaction, maxV, maxS, false, kmsg.ConfigTypeLong, "how long an overwritten record may stay before compaction removes it"},
		{cfgMinCompaction, minV, minS, false, kmsg.ConfigTypeLong, "how long after its append a record is never compacted away"},
	}
}

// topicConfigs are topic t's configs; retention.ms is a topic config unless it is the
// deployment's default.
func topicConfigs(t store.Topic, defaultRetention time.Duration, maxMessageBytes int) []configEntry {
	retSource := kmsg.ConfigSourceDynamicTopicConfig
	if t.Retention == defaultRetention {
		retSource = kmsg.ConfigSourceDefaultConfig
	}
	tsType, tsSource, tsDoc := "CreateTime", kmsg.ConfigSourceDefaultConfig, "records keep the producer's timestamp"
	if t.LogAppendTime {
		tsType, tsSource, tsDoc = "LogAppendTime", kmsg.ConfigSourceDynamicTopicConfig, "records are stamped with their append time (set at creation)"
	}
	return append(cleanupConfigs(t), []configEntry{
		{cfgMaxMessage, strconv.Itoa(maxMessageBytes), kmsg.ConfigSourceDefaultConfig, true, kmsg.ConfigTypeInt,
			"the largest record batch one append takes, compressed or not"},
		{cfgTimestampType, tsType, tsSource, true, kmsg.ConfigTypeString, tsDoc},
		{cfgRetentionBytes, "-1", kmsg.ConfigSourceDefaultConfig, true, kmsg.ConfigTypeLong,
			"retention is by time only"},
		{cfgRetentionMs, retentionMsValue(t.Retention), retSource, false, kmsg.ConfigTypeLong,
			"how long a record is kept after its append"},
	}...)
}

// brokerConfigs are what a broker describes: the defaults topics get and the limits
// every gateway applies.
func (s *Server) brokerConfigs() []configEntry {
	static := kmsg.ConfigSourceStaticBrokerConfig
	return []configEntry{
		{"auto.create.topics.enable", "false", static, true, kmsg.ConfigTypeBoolean, "topics are created explicitly"},
		{"broker.id", strconv.Itoa(int(s.cfg.NodeID)), static, true, kmsg.ConfigTypeInt, "this gateway's node id"},
		{"default.replication.factor", "1", static, true, kmsg.ConfigTypeShort, "every partition is stored in the object store"},
		{"log.cleanup.policy", "delete", static, true, kmsg.ConfigTypeList, "retention by time"},
		{"log.retention.ms", strconv.FormatInt(s.log.DefaultRetention().Milliseconds(), 10), static, true, kmsg.ConfigTypeLong, "the retention a topic gets by default"},
		{"message.max.bytes", strconv.Itoa(s.cfg.MaxMessageBytes), static, true, kmsg.ConfigTypeInt, "the largest record batch one append takes"},
		{"min.insync.replicas", "1", static, true, kmsg.ConfigTypeInt, "an append is durable once acknowledged"},
		{"num.partitions", strconv.Itoa(int(s.log.DefaultPartitions())), static, true, kmsg.ConfigTypeInt, "the partitions a topic gets by default"},
	}
}

func (s *Server) describeConfigs(ctx context.Context, r *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(r.Version)
	for _, rr := range r.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		fail := func(code int16, format string, args ...any) {
			out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(fmt.Sprintf(format, args...))
		}
		var entries []configEntry
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, code := s.topic(ctx, rr.ResourceName, 0)
			if code != 0 {
				fail(code, "topic %q is unknown", rr.ResourceName)
				break
			}
			entries = topicConfigs(t, s.log.DefaultRetention(), s.cfg.MaxMessageBytes)
		case kmsg.ConfigResourceTypeBroker:
			if code, msg := s.brokerResource(rr.ResourceName); code != 0 {
				fail(code, "%s", msg)
				break
			}
			entries = s.brokerConfigs()
		default:
			fail(invalidRequest, "configs of %s resources are not implemented (topics and brokers are)", rr.ResourceType)
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.Source = e.name, kmsg.StringPtr(e.value), e.readOnly, e.source
			c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
			c.ConfigType = e.typ
			if r.IncludeSynonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = e.name, c.Value, e.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
			if r.IncludeDocumentation {
				c.Documentation = kmsg.StringPtr(e.doc)
			}
			out.Configs = append(out.Configs, c)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}

// brokerResource checks a broker resource's name: this gateway's node id, or empty
// (the cluster's defaults).
func (s *Server) brokerResource(name string) (int16, string) {
	if name == "" || name == strconv.Itoa(int(s.cfg.NodeID)) {
		return 0, ""
	}
	return invalidRequest, fmt.Sprintf("broker %q is not this gateway (node id %d)", name, s.cfg.NodeID)
}

// alterOp is one config change of an alter, incremental or not (then always a set).
type alterOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

const (
	opSet      = kmsg.IncrementalAlterConfigOp(0)
	opDelete   = kmsg.IncrementalAlterConfigOp(1)
	opAppend   = kmsg.IncrementalAlterConfigOp(2)
	opSubtract = kmsg.IncrementalAlterConfigOp(3)
)

// topicAlterPlan is what a topic must be after an alter: its retention and its cleanup
// settings.
type topicAlterPlan struct {
	retention time.Duration
	cleanup   store.TopicCleanup
}

// planTopicAlter decides a topic's alter: the retention and cleanup settings it must
// have after it (cur's when unchanged), or a Kafka error code and why, changing
// nothing. incremental false is AlterConfigs, which replaces the topic's configs: a
// config it does not name goes back to its default (cleanup.policy's is delete, which
// a compacted topic refuses). retention.ms -1 is for ever, where maxRetention (the
// deployment's maximum, 0 for none) allows it.
func planTopicAlter(ops []alterOp, cur store.Topic, defaultRetention, maxRetention time.Duration, incremental bool) (topicAlterPlan, int16, string) {
	plan := topicAlterPlan{retention: cur.Retention, cleanup: cur.CleanupSettings()}
	if !incremental {
		plan = topicAlterPlan{retention: defaultRetention}
	}
	if plan.cleanup.Cleanup == "" {
		plan.cleanup.Cleanup = store.CleanupDelete
	}
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.name] {
			return plan, invalidRequest, fmt.Sprintf("config %q is named twice", o.name)
		}
		seen[o.name] = true
		if o.op > opSubtract {
			return plan, invalidRequest, fmt.Sprintf("config %q: unknown operation %d", o.name, o.op)
		}
		if o.op != opDelete && o.value == nil {
			return plan, invalidConfig, fmt.Sprintf("config %q: a null value (use DELETE to reset it)", o.name)
		}
		switch o.name {
		case cfgRetentionMs:
			switch o.op {
			case opDelete:
				plan.retention = defaultRetention
			case opSet:
				r, err := parseRetentionMs(*o.value, maxRetention)
				if err != nil {
					return plan, invalidConfig, err.Error()
				}
				plan.retention = r
			default:
				return plan, invalidRequest, fmt.Sprintf("retention.ms is not a list: %s does not apply", o.op)
			}
		case cfgCleanupPolicy:
			var next store.CleanupPolicy
			switch o.op {
			case opDelete:
				next = store.CleanupDelete
			case opSet:
				p, err := parseCleanupPolicy(*o.value)
				if err != nil {
					return plan, invalidConfig, err.Error()
				}
				next = p
			default:
				p, err := parseCleanupPolicy(*o.value)
				if err != nil {
					return plan, invalidConfig, err.Error()
				}
				c, d := policyParts(plan.cleanup.Cleanup)
				oc, od := policyParts(p)
				if o.op == opAppend {
					c, d = c || oc, d || od
				} else {
					c, d = c && !oc, d && !od
				}
				if !c && !d {
					return plan, invalidConfig, "cleanup.policy: removing every policy leaves none"
				}
				next = policyOf(c, d)
			}
			plan.cleanup.Cleanup = next
		case cfgMinCompaction, cfgMaxCompaction, cfgDeleteRetain:
			dst := map[string]*time.Duration{cfgMinCompaction: &plan.cleanup.MinCompactionLag, cfgMaxCompaction: &plan.cleanup.MaxCompactionLag,
				cfgDeleteRetain: &plan.cleanup.DeleteRetention}[o.name]
			switch o.op {
			case opDelete:
				*dst = 0
			case opSet:
				d, err := parseLagMs(o.name, *o.value)
				if err != nil {
					return plan, invalidConfig, err.Error()
				}
				*dst = d
			default:
				return plan, invalidRequest, fmt.Sprintf("%s is not a list: %s does not apply", o.name, o.op)
			}
		case cfgMaxMessage, cfgTimestampType, cfgRetentionBytes:
			return plan, invalidConfig, fmt.Sprintf("config %q is read-only here", o.name)
		default:
			return plan, invalidConfig, fmt.Sprintf("config %q is not one this gateway implements (%s, %s, %s, %s, %s; %s, %s and %s are read-only)",
				o.name, cfgRetentionMs, cfgCleanupPolicy, cfgMinCompaction, cfgMaxCompaction, cfgDeleteRetain, cfgMaxMessage, cfgTimestampType, cfgRetentionBytes)
		}
	}
	if plan.cleanup.Cleanup == store.CleanupDelete {
		plan.cleanup.Cleanup = ""
	}
	switch c := plan.cleanup; {
	case cur.Compacted() && !(store.Topic{Cleanup: c.Cleanup}).Compacted():
		return plan, invalidConfig, fmt.Sprintf("cleanup.policy: topic %q is compacted (%s); it can become compact or compact,delete, not delete (its key index would go stale)", cur.Name, cur.Cleanup)
	case c.MaxCompactionLag > 0 && c.MaxCompactionLag < c.MinCompactionLag:
		return plan, invalidConfig, fmt.Sprintf("max.compaction.lag.ms %d is below min.compaction.lag.ms %d", c.MaxCompactionLag.Milliseconds(), c.MinCompactionLag.Milliseconds())
	}
	return plan, 0, ""
}

// alterResource applies one resource's alter and returns its error code and message.
func (s *Server) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, ops []alterOp, incremental, validateOnly bool) (int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		if code, msg := s.brokerResource(name); code != 0 {
			return code, msg
		}
		if len(ops) > 0 {
			return invalidConfig, "broker configs are read-only here"
		}
		return 0, ""
	default:
		return invalidRequest, fmt.Sprintf("configs of %s resources are not implemented (topics are)", typ)
	}
	t, code := s.topic(ctx, name, 0)
	if code != 0 {
		return code, fmt.Sprintf("topic %q is unknown", name)
	}
	plan, code, msg := planTopicAlter(ops, t, s.log.DefaultRetention(), s.log.MaxRetention(), incremental)
	if code != 0 {
		return code, msg
	}
	retention, cleanupChanged := plan.retention, plan.cleanup != t.CleanupSettings()
	if maxR := s.log.MaxRetention(); maxR > 0 && retention != t.Retention && store.SatAdd(retention, t.RetentionPin) > maxR {
		return invalidConfig, fmt.Sprintf("retention.ms %d plus the topic's retention pin (%s) is above this deployment's maximum retention (%s), set by %s",
			retention.Milliseconds(), t.RetentionPin, maxR, httpapi.MaxRetentionSetting)
	}
	if validateOnly {
		return 0, ""
	}
	fail := func(err error) (int16, string) {
		if code = errCode(err); code == invalidRequest {
			code = invalidConfig
		}
		return code, err.Error()
	}
	if cleanupChanged {
		c := plan.cleanup
		if _, err := s.log.AlterCleanup(ctx, name, log.CleanupChange{Cleanup: &c.Cleanup, MinCompactionLag: &c.MinCompactionLag,
			MaxCompactionLag: &c.MaxCompactionLag, DeleteRetention: &c.DeleteRetention}); err != nil {
			return fail(err)
		}
	}
	if retention != t.Retention {
		if _, err := s.log.SetRetention(ctx, name, retention); err != nil {
			return fail(err)
		}
	}
	return 0, ""
}

func (s *Server) incrementalAlterConfigs(ctx context.Context, r *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(r.Version)
	for _, rr := range r.Resources {
		ops := make([]alterOp, 0, len(rr.Configs))
		for _, c := range rr.Configs {
			ops = append(ops, alterOp{c.Name, c.Op, c.Value})
		}
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		code, msg := s.alterResource(ctx, rr.ResourceType, rr.ResourceName, ops, true, r.ValidateOnly)
		out.ErrorCode = code
		if code != 0 {
			out.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}

func (s *Server) alterConfigs(ctx context.Context, r *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.SetVersion(r.Version)
	for _, rr := range r.Resources {
		ops := make([]alterOp, 0, len(rr.Configs))
		for _, c := range rr.Configs {
			ops = append(ops, alterOp{c.Name, opSet, c.Value})
		}
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		code, msg := s.alterResource(ctx, rr.ResourceType, rr.ResourceName, ops, false, r.ValidateOnly)
		out.ErrorCode = code
		if code != 0 {
			out.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}
