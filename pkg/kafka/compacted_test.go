package kafka_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/store"
)

// TestCompactedTopicOverKafka: CreateTopics takes cleanup.policy=compact and the
// compaction settings, DescribeConfigs answers them as topic configs, a keyless record
// is refused INVALID_RECORD naming Kafka's reason (idempotent producer or not) while a
// keyed one lands in the key index, IncrementalAlterConfigs appends delete to the
// policy and sets delete.retention.ms, and never turns a compacted topic back to
// delete. On every backend.
func TestCompactedTopicOverKafka(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		adm := kadm.NewClient(g.client(t))
		compact, lag := "compact", "60000"
		if resp, err := adm.CreateTopic(ctxT(t), 1, -1, map[string]*string{"cleanup.policy": &compact, "min.compaction.lag.ms": &lag}, "kv"); err != nil || resp.Err != nil {
			t.Fatalf("create a compacted topic: %v %v", err, resp.Err)
		}
		bad := "compacted"
		if resp, err := adm.CreateTopic(ctxT(t), 1, -1, map[string]*string{"cleanup.policy": &bad}, "kv-bad"); !errors.Is(resp.Err, kerr.InvalidConfig) {
			t.Fatalf("create with a bad policy: %v %v, want INVALID_CONFIG", err, resp.Err)
		}
		describe := func() kadm.ResourceConfigs {
			t.Helper()
			rcs, err := adm.DescribeTopicConfigs(ctxT(t), "kv")
			if err != nil {
				t.Fatal(err)
			}
			return rcs
		}
		rcs := describe()
		if c := configOf(t, rcs, "cleanup.policy"); *c.Value != "compact" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("cleanup.policy %+v", c)
		}
		if c := configOf(t, rcs, "min.compaction.lag.ms"); *c.Value != "60000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("min.compaction.lag.ms %+v", c)
		}
		if c := configOf(t, rcs, "delete.retention.ms"); *c.Value != "86400000" || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("delete.retention.ms %+v", c)
		}
		if c := configOf(t, rcs, "max.compaction.lag.ms"); *c.Value != "9223372036854775807" {
			t.Errorf("max.compaction.lag.ms %+v", c)
		}

		for _, opts := range [][]kgo.Opt{nil, {kgo.DisableIdempotentWrite()}} {
			cl := g.client(t, append(opts, kgo.DefaultProduceTopic("kv"), kgo.RecordRetries(1))...)
			err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("keyless")}).FirstErr()
			if !errors.Is(err, kerr.InvalidRecord) {
				t.Fatalf("keyless produce (%d opts): %v, want INVALID_RECORD", len(opts), err)
			}
			if err := cl.ProduceSync(ctxT(t), &kgo.Record{Key: []byte("o-42"), Value: []byte("paid")}).FirstErr(); err != nil {
				t.Fatalf("keyed produce: %v", err)
			}
		}
		kv, err := g.log.Latest(ctxT(t), "kv", []byte("o-42"), nil)
		if err != nil || string(kv.Record.Value) != "paid" || kv.Record.Offset != 1 {
			t.Fatalf("Latest after Kafka produces = %+v, %v; want paid at 1", kv, err)
		}

		set := func(op kadm.IncrementalOp, name, value string) error {
			t.Helper()
			resp, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: op, Name: name, Value: &value}}, "kv")
			if err != nil {
				t.Fatal(err)
			}
			return resp[0].Err
		}
		if err := set(kadm.AppendConfig, "cleanup.policy", "delete"); err != nil {
			t.Fatal(err)
		}
		if err := set(kadm.SetConfig, "delete.retention.ms", "3600000"); err != nil {
			t.Fatal(err)
		}
		tp, err := g.log.Topic(ctxT(t), "kv")
		if err != nil || tp.Cleanup != store.CleanupCompactDelete || tp.DeleteRetention.Milliseconds() != 3600000 || tp.MinCompactionLag.Milliseconds() != 60000 {
			t.Fatalf("topic after the alters = %+v, %v", tp, err)
		}
		for _, bad := range []struct {
			op          kadm.IncrementalOp
			name, value string
		}{{kadm.SetConfig, "cleanup.policy", "delete"}, {kadm.SubtractConfig, "cleanup.policy", "compact"}, {kadm.SetConfig, "max.compaction.lag.ms", "1000"}} {
			err := set(bad.op, bad.name, bad.value)
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Errorf("%v %s=%s: %v, want INVALID_CONFIG", bad.op, bad.name, bad.value, err)
			}
		}
		if c := configOf(t, describe(), "cleanup.policy"); *c.Value != "compact,delete" {
			t.Errorf("cleanup.policy after refusals %+v", c)
		}
		if err := set(kadm.SetConfig, "cleanup.policy", "compact"); err != nil || !strings.Contains(*configOf(t, describe(), "cleanup.policy").Value, "compact") {
			t.Fatalf("compact,delete to compact: %v", err)
		}
	})
}
