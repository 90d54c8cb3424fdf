package kafka_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

func configOf(t *testing.T, rcs kadm.ResourceConfigs, key string) kadm.Config {
	t.Helper()
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe: %+v", rcs)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("no config %q in %+v", key, rcs[0].Configs)
	return kadm.Config{}
}

// TestTopicConfigs: kadm describes a topic's configs with Kafka's sources (retention.ms
// the topic's once set, the rest defaults) and a broker's; IncrementalAlterConfigs and
// AlterConfigs change retention.ms in the log (validate-only changes nothing); a
// read-only or unknown config, or a bad value, is INVALID_CONFIG and changes nothing;
// an unknown topic is UNKNOWN_TOPIC_OR_PARTITION. On every backend.
func TestTopicConfigs(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		adm := kadm.NewClient(g.client(t))
		createTopic(t, adm, "cfg", 1)
		retention := func() time.Duration {
			t.Helper()
			r, err := g.log.Retention(ctxT(t), "cfg")
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		def := retention()
		describe := func() kadm.ResourceConfigs {
			t.Helper()
			rcs, err := adm.DescribeTopicConfigs(ctxT(t), "cfg")
			if err != nil {
				t.Fatal(err)
			}
			return rcs
		}
		rcs := describe()
		if c := configOf(t, rcs, "retention.ms"); c.Source != kmsg.ConfigSourceDefaultConfig || c.Value == nil || *c.Value != strconv.FormatInt(def.Milliseconds(), 10) {
			t.Errorf("retention.ms %+v", c)
		}
		if c := configOf(t, rcs, "cleanup.policy"); *c.Value != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("cleanup.policy %+v", c)
		}
		if c := configOf(t, rcs, "max.message.bytes"); *c.Value != "6291456" {
			t.Errorf("max.message.bytes %+v", c)
		}
		configOf(t, rcs, "message.timestamp.type")
		// The flags kadm does not show: read-only and, at v0, is-default.
		for _, v := range []int16{0, 4} {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.SetVersion(v)
			req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "cfg",
				ConfigNames: []string{"max.message.bytes", "retention.ms"}}}
			resp := dial(t, g.addr).roundTrip(req).(*kmsg.DescribeConfigsResponse)
			if len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 2 {
				t.Fatalf("v%d: %+v", v, resp.Resources)
			}
			for _, c := range resp.Resources[0].Configs {
				if c.ReadOnly != (c.Name == "max.message.bytes") || (v == 0 && !c.IsDefault) {
					t.Errorf("v%d: %s read-only %v default %v", v, c.Name, c.ReadOnly, c.IsDefault)
				}
			}
		}

		set := func(name, value string) error {
			t.Helper()
			resp, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: &value}}, "cfg")
			if err != nil {
				t.Fatal(err)
			}
			return resp[0].Err
		}
		if err := set("retention.ms", "7200000"); err != nil {
			t.Fatal(err)
		}
		if r := retention(); r != 2*time.Hour {
			t.Fatalf("retention %s after the alter, want 2h", r)
		}
		if c := configOf(t, describe(), "retention.ms"); *c.Value != "7200000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("retention.ms after the alter %+v", c)
		}
		for _, bad := range [][2]string{{"max.message.bytes", "100"}, {"segment.ms", "1000"}, {"cleanup.policy", "compacted"}, {"retention.ms", "-2"}} {
			if err := set(bad[0], bad[1]); !errors.Is(err, kerr.InvalidConfig) {
				t.Errorf("%s=%s: %v, want INVALID_CONFIG", bad[0], bad[1], err)
			}
		}
		v := "60000"
		if resp, err := adm.ValidateAlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, "cfg"); err != nil || resp[0].Err != nil {
			t.Fatalf("validate only: %v %v", err, resp)
		}
		if r := retention(); r != 2*time.Hour {
			t.Fatalf("retention %s after refusals and a validation, want 2h", r)
		}
		// AlterConfigs replaces the set: retention.ms named is set, unnamed is the default.
		if resp, err := adm.AlterTopicConfigsState(ctxT(t), []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, "cfg"); err != nil || resp[0].Err != nil {
			t.Fatalf("AlterConfigs: %v %v", err, resp)
		}
		if r := retention(); r != time.Minute {
			t.Fatalf("retention %s after AlterConfigs, want 1m", r)
		}
		if resp, err := adm.AlterTopicConfigsState(ctxT(t), nil, "cfg"); err != nil || resp[0].Err != nil {
			t.Fatalf("AlterConfigs of nothing: %v %v", err, resp)
		}
		if r := retention(); r != def {
			t.Fatalf("retention %s after AlterConfigs of nothing, want the default %s", r, def)
		}
		if rcs, err := adm.DescribeTopicConfigs(ctxT(t), "nope"); err != nil || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("unknown topic: %v %+v", err, rcs)
		}
		lat := "LogAppendTime"
		if resp, err := adm.CreateTopic(ctxT(t), 1, -1, map[string]*string{"message.timestamp.type": &lat}, "cfg-lat"); err != nil || resp.Err != nil {
			t.Fatalf("create a LogAppendTime topic: %v %v", err, resp.Err)
		}
		lrcs, err := adm.DescribeTopicConfigs(ctxT(t), "cfg-lat")
		if err != nil {
			t.Fatal(err)
		}
		if c := configOf(t, lrcs, "message.timestamp.type"); *c.Value != "LogAppendTime" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("message.timestamp.type of a LogAppendTime topic %+v", c)
		}
		brs, err := adm.DescribeBrokerConfigs(ctxT(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		if c := configOf(t, brs, "auto.create.topics.enable"); *c.Value != "false" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("auto.create.topics.enable %+v", c)
		}
	})
}

// TestRetentionForever: Kafka's retention.ms=-1 keeps a topic's records for ever where
// the deployment has no maximum retention (CreateTopics, IncrementalAlterConfigs and
// AlterConfigs alike, described back as -1); where it has one, -1 is INVALID_CONFIG
// naming the setting (strata:maxRetentionDays) and changes nothing.
func TestRetentionForever(t *testing.T) {
	forever := "-1"
	for _, maxR := range []time.Duration{0, 7 * 24 * time.Hour} {
		g := startGatewayWith(t, backendtest.Local(t.Context(), t), log.TopicDefaults{MaxRetention: maxR})
		adm := kadm.NewClient(g.client(t))
		refused := func(what string, err error) {
			t.Helper()
			if maxR == 0 && err != nil {
				t.Errorf("%s without a maximum: %v", what, err)
			}
			var ke *kerr.Error
			if maxR > 0 && (!errors.As(err, &ke) || ke != kerr.InvalidConfig || !strings.Contains(err.Error(), "strata:maxRetentionDays")) {
				t.Errorf("%s with a maximum of %s: %v, want INVALID_CONFIG naming strata:maxRetentionDays", what, maxR, err)
			}
		}
		resp, err := adm.CreateTopic(ctxT(t), 1, -1, map[string]*string{"retention.ms": &forever}, "kept")
		if resp.Err != nil {
			err = fmt.Errorf("%w: %s", resp.Err, resp.ErrMessage)
		}
		refused("CreateTopics retention.ms=-1", err)
		createTopic(t, adm, "altered", 1)
		for _, incremental := range []bool{true, false} {
			var ar kadm.AlterConfigsResponses
			if incremental {
				ar, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &forever}}, "altered")
			} else {
				ar, err = adm.AlterTopicConfigsState(ctxT(t), []kadm.AlterConfig{{Name: "retention.ms", Value: &forever}}, "altered")
			}
			if err == nil && ar[0].Err != nil {
				err = fmt.Errorf("%w: %s", ar[0].Err, ar[0].ErrMessage)
			}
			refused(fmt.Sprintf("alter retention.ms=-1 (incremental %v)", incremental), err)
		}
		want := "-1"
		if maxR > 0 {
			want = strconv.FormatInt(g.log.DefaultRetention().Milliseconds(), 10)
		}
		if c := configOf(t, mustDescribe(t, adm, "altered"), "retention.ms"); c.Value == nil || *c.Value != want {
			t.Errorf("maximum %s: retention.ms described %v, want %s", maxR, c.Value, want)
		}
		if maxR == 0 {
			if c := configOf(t, mustDescribe(t, adm, "kept"), "retention.ms"); c.Value == nil || *c.Value != "-1" {
				t.Errorf("created with retention.ms=-1: described %v", c.Value)
			}
		}
	}
}

func mustDescribe(t *testing.T, adm *kadm.Client, topic string) kadm.ResourceConfigs {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return rcs
}
