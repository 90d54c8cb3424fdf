package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store"
)

type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Invoke(_ context.Context, fn string, ev deploy.ConsumerEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s:%s/%s/%d", fn, ev.Group, ev.Topic, ev.Partition))
	return nil
}

type materialized struct {
	mu  sync.Mutex
	got []string
}

func (m *materialized) Materialize(_ context.Context, cs []dispatch.Commit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		st, ok := c.Payload.(store.SeqState)
		if !ok || st.Last == nil {
			return fmt.Errorf("commit %+v carries no sequencer state", c)
		}
		m.got = append(m.got, fmt.Sprintf("%s/%d@%d [%d,%d) %s", c.Topic, c.Partition, c.HighWatermark,
			st.Last.Entry.BaseOffset, st.Last.Entry.End(), st.Last.Entry.ObjectKey))
	}
	return nil
}

// newDispatch assembles the dispatch function's handler over an embedded node whose
// topic "orders" has records on both partitions.
func newDispatch(t *testing.T, m dispatch.Materializer) (*lambdafn.Dispatch, *recorder, *runtime.Runtime, *bytesSink) {
	t.Helper()
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	api := lambdafn.NewAPI(rt.Handler(), nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	invoke(t, api, fixture(t, "apigw-v2-append.json"))
	inv := &recorder{}
	d, err := dispatch.New(dispatch.Config{
		Subscriptions: []deploy.Subscription{{Topic: "orders", Group: "billing", Function: "strata-consumer"}},
		Leases:        rt.Meta(), Offsets: rt.Log(), Invoker: inv, Materializer: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &bytesSink{}
	return lambdafn.NewDispatch(d, lambdafn.DecodeSequencerImage, emf.New(sink, "Strata", nil)), inv, rt, sink
}

type bytesSink struct {
	mu    sync.Mutex
	lines [][]byte
}

func (b *bytesSink) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.lines = append(b.lines, append([]byte(nil), p...))
	b.mu.Unlock()
	return len(p), nil
}

// dispatchFixture invokes h with the event of the fixture name and decodes its result.
func dispatchFixture(t *testing.T, h *lambdafn.Dispatch, name string) lambdafn.DispatchResult {
	t.Helper()
	out, err := h.Invoke(context.Background(), fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var res lambdafn.DispatchResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDispatchStreamFixture: a DynamoDB stream batch of the sequencer table is
// materialised in order, then one invocation per (group, partition).
func TestDispatchStreamFixture(t *testing.T) {
	m := &materialized{}
	h, inv, _, sink := newDispatch(t, m)
	res := dispatchFixture(t, h, "ddb-stream-sequencer.json")
	if want := []string{
		"orders/0@2 [0,2) v1/orders/01JDZ8W6Q3N4V5X7Y9Z0A1B2C3",
		"orders/1@2 [0,2) v1/orders/01JDZ8W6Q3N4V5X7Y9Z0A1B2C3",
		"orders/0@5 [2,5) v1/orders/01JDZ8W7R8S9T0U1V2W3X4Y5Z6",
	}; !reflect.DeepEqual(m.got, want) {
		t.Errorf("materialised %v, want %v", m.got, want)
	}
	sort.Strings(inv.calls)
	if want := []string{"strata-consumer:billing/orders/0", "strata-consumer:billing/orders/1"}; !reflect.DeepEqual(inv.calls, want) {
		t.Errorf("invoked %v, want %v", inv.calls, want)
	}
	if res.Trigger != "stream" || res.Stats.Commits != 3 || res.Stats.LeaseChecks != 2 || res.Stats.Invocations != 2 {
		t.Errorf("result %+v", res)
	}
	checkEMF(t, sink, emf.DispatchInvocations, 2)
}

// TestDispatchTopicCommitFixture: one stream record of a topic item (the topic commit
// layout) carries every commit of its newest batch: each is materialised, with its
// partition's offsets, and dispatched by the newest high watermark per partition.
func TestDispatchTopicCommitFixture(t *testing.T) {
	m := &materialized{}
	h, inv, _, _ := newDispatch(t, m)
	res := dispatchFixture(t, h, "ddb-stream-topic-commit.json")
	obj := "v1/orders/tc01jdz8w6q3n4v5x7y9z0a1b2c3/01JDZ8W7R8S9T0U1V2W3X4Y5Z6"
	if want := []string{"orders/0@4 [2,4) " + obj, "orders/1@2 [0,2) " + obj, "orders/0@5 [4,5) " + obj}; !reflect.DeepEqual(m.got, want) {
		t.Errorf("materialised %v, want %v", m.got, want)
	}
	sort.Strings(inv.calls)
	if want := []string{"strata-consumer:billing/orders/0", "strata-consumer:billing/orders/1"}; !reflect.DeepEqual(inv.calls, want) {
		t.Errorf("invoked %v, want %v", inv.calls, want)
	}
	if res.Stats.Commits != 3 {
		t.Errorf("result %+v, want 3 commits", res)
	}
}

// TestDispatchScheduleFixture: a scheduled event sweeps every subscribed partition.
func TestDispatchScheduleFixture(t *testing.T) {
	h, inv, _, _ := newDispatch(t, nil)
	res := dispatchFixture(t, h, "scheduled-event.json")
	if res.Trigger != "schedule" || len(inv.calls) != 2 {
		t.Errorf("result %+v, invoked %v", res, inv.calls)
	}
}

func TestDispatchRefusesBadEvents(t *testing.T) {
	h, inv, _, _ := newDispatch(t, nil)
	for _, tc := range []struct {
		name    string
		payload string
		want    error
	}{
		{"not json", `{`, lambdafn.ErrUnknownEvent},
		{"an HTTP request", string(fixture(t, "apigw-v2-poll.json")), lambdafn.ErrUnknownEvent},
		{"another source", `{"Records":[{"eventSource":"aws:sqs","body":"x"}]}`, lambdafn.ErrUnknownEvent},
		{"no new image", `{"Records":[{"eventSource":"aws:dynamodb","eventName":"MODIFY","dynamodb":{"Keys":{"tp":{"S":"orders#0"}}}}]}`, lambdafn.ErrBadImage},
		{"a missing high watermark", `{"Records":[{"eventSource":"aws:dynamodb","eventName":"INSERT","dynamodb":{"NewImage":{"topic":{"S":"orders"},"partition":{"N":"0"}}}}]}`, lambdafn.ErrBadImage},
		{"a negative partition", `{"Records":[{"eventSource":"aws:dynamodb","eventName":"INSERT","dynamodb":{"NewImage":{"topic":{"S":"orders"},"partition":{"N":"-1"},"next_offset":{"N":"3"}}}}]}`, lambdafn.ErrBadImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := h.Invoke(context.Background(), []byte(tc.payload)); !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
		})
	}
	if len(inv.calls) != 0 {
		t.Errorf("bad events invoked %v", inv.calls)
	}
	t.Run("a removed item dispatches nothing", func(t *testing.T) {
		out, err := h.Invoke(context.Background(), []byte(`{"Records":[{"eventSource":"aws:dynamodb","eventName":"REMOVE","dynamodb":{"Keys":{"tp":{"S":"orders#0"}}}}]}`))
		if err != nil || len(inv.calls) != 0 {
			t.Errorf("%s, %v, invoked %v", out, err, inv.calls)
		}
	})
}

// TestRetentionScheduleFixture: the retention function runs one pass per scheduled
// event and reports it in EMF.
func TestRetentionScheduleFixture(t *testing.T) {
	_, _, rt, _ := newDispatch(t, nil)
	sink := &bytesSink{}
	var runs int
	h := lambdafn.NewRetention(func(ctx context.Context) (retention.Stats, error) {
		runs++
		return rt.RunRetention(ctx)
	}, emf.New(sink, "Strata", nil))
	if _, err := h.Invoke(context.Background(), fixture(t, "scheduled-event.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Invoke(context.Background(), fixture(t, "ddb-stream-sequencer.json")); !errors.Is(err, lambdafn.ErrUnknownEvent) {
		t.Errorf("a stream batch: %v, want ErrUnknownEvent", err)
	}
	if runs != 1 {
		t.Errorf("%d passes, want 1", runs)
	}
	checkEMF(t, sink, emf.RetentionRuns, 1)
}

// checkEMF finds name in the sink's lines and checks each line is a valid EMF document.
func checkEMF(t *testing.T, sink *bytesSink, name string, want float64) {
	t.Helper()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	found := false
	for _, line := range sink.lines {
		var doc map[string]any
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		aws, ok := doc["_aws"].(map[string]any)
		if !ok {
			t.Fatalf("line %q has no _aws", line)
		}
		dirs, _ := aws["CloudWatchMetrics"].([]any)
		if len(dirs) != 1 {
			t.Fatalf("line %q: directives %v", line, dirs)
		}
		if v, ok := doc[name].(float64); ok {
			found = true
			if v != want {
				t.Errorf("%s = %v, want %v", name, v, want)
			}
		}
	}
	if !found {
		t.Errorf("no EMF line carries %s", name)
	}
}

func TestConvertImage(t *testing.T) {
	var img map[string]events.DynamoDBAttributeValue
	raw := `{"s":{"S":"x"},"n":{"N":"12"},"b":{"B":"AQI="},"t":{"BOOL":true},"z":{"NULL":true},
	"ss":{"SS":["a","b"]},"ns":{"NS":["1"]},"bs":{"BS":["AQ=="]},"l":{"L":[{"S":"y"},{"M":{"k":{"N":"1"}}}]}}`
	if err := json.Unmarshal([]byte(raw), &img); err != nil {
		t.Fatal(err)
	}
	got, err := lambdafn.ConvertImage(img)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]types.AttributeValue{
		"s": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberN{Value: "12"},
		"b": &types.AttributeValueMemberB{Value: []byte{1, 2}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"z":  &types.AttributeValueMemberNULL{Value: true},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "y"},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "1"}}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("converted %#v", got)
	}
	back, err := lambdafn.ImageToEvents(map[string]types.AttributeValue{"s": want["s"], "n": want["n"], "b": want["b"], "t": want["t"]})
	if err != nil {
		t.Fatal(err)
	}
	again, err := lambdafn.ConvertImage(back)
	if err != nil || !reflect.DeepEqual(again["b"], want["b"]) || !reflect.DeepEqual(again["n"], want["n"]) {
		t.Errorf("round trip: %#v, %v", again, err)
	}
}

// FuzzDispatchInvoke: any payload is an error or a result, never a panic, and a
// payload that is refused invokes nothing.
func FuzzDispatchInvoke(f *testing.F) {
	f.Add(fixture(f, "ddb-stream-sequencer.json"))
	f.Add(fixture(f, "scheduled-event.json"))
	f.Add([]byte(`{"Records":[{"eventSource":"aws:dynamodb","eventName":"INSERT","dynamodb":{"NewImage":{"topic":{"S":"orders"},"partition":{"N":"0"},"next_offset":{"L":[{"L":[]}]}}}}]}`))
	dir := f.TempDir()
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: filepath.Join(dir, "n")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close(context.Background()) })
	inv := &recorder{}
	d, err := dispatch.New(dispatch.Config{
		Subscriptions: []deploy.Subscription{{Topic: "orders", Group: "billing", Function: "fn"}},
		Leases:        rt.Meta(), Offsets: rt.Log(), Invoker: inv,
		Clock: func() time.Time { return time.Unix(1796092200, 0) },
	})
	if err != nil {
		f.Fatal(err)
	}
	h := lambdafn.NewDispatch(d, lambdafn.DecodeSequencerImage, nil)
	f.Fuzz(func(t *testing.T, payload []byte) {
		inv.mu.Lock()
		before := len(inv.calls)
		inv.mu.Unlock()
		out, err := h.Invoke(context.Background(), payload)
		inv.mu.Lock()
		after := len(inv.calls)
		inv.mu.Unlock()
		if err != nil && (errors.Is(err, lambdafn.ErrUnknownEvent) || errors.Is(err, lambdafn.ErrBadImage)) && after != before {
			t.Fatalf("a refused payload invoked %d consumers", after-before)
		}
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid result %q", out)
		}
	})
}

// TestLogMaterializer: a commit whose appender stopped before writing its index entry
// (the entry is missing) is made readable from its sequencer state.
func TestLogMaterializer(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	api := lambdafn.NewAPI(rt.Handler(), nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	invoke(t, api, fixture(t, "apigw-v2-append.json"))
	id, err := rt.Log().TopicID(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Meta().Sequencer(ctx, id, 0)
	if err != nil || st.Last == nil {
		t.Fatalf("sequencer state %+v, %v", st, err)
	}
	if err := rt.Meta().DeleteIndexEntry(ctx, id, 0, st.Last.Entry.BaseOffset); err != nil {
		t.Fatal(err)
	}
	c := dispatch.Commit{Topic: "orders", Partition: 0, HighWatermark: st.NextOffset, Payload: st}
	m := lambdafn.LogMaterializer{Log: rt.Log()}
	for range 2 { // idempotent
		if err := m.Materialize(ctx, []dispatch.Commit{c}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := rt.Meta().IndexEntries(ctx, id, 0, st.Last.Entry.BaseOffset, 10)
	if err != nil || len(es) != 1 || es[0].ObjectKey != st.Last.Entry.ObjectKey {
		t.Fatalf("index after materialising: %+v, %v", es, err)
	}
	if err := m.Materialize(ctx, []dispatch.Commit{{Topic: "orders", Payload: "not a state"}}); err == nil {
		t.Error("a commit without a sequencer state was accepted")
	}
}

// TestDispatchScheduleEmitsTimeToDataLoss: with health on, a scheduled sweep emits the
// subscribed group's lag and time to data loss per {group, topic} (the dimensions the
// stack's alarms read): a group stalled at offset 0 has about the topic's retention left.
func TestDispatchScheduleEmitsTimeToDataLoss(t *testing.T) {
	ctx := context.Background()
	h, _, rt, sink := newDispatch(t, nil)
	l, err := rt.Coordinator().Acquire(ctx, "billing", "orders", 0, "m", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Coordinator().Commit(ctx, "billing", "orders", 0, "m", l.Generation, 0); err != nil {
		t.Fatal(err)
	}
	ret, err := rt.Log().Retention(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WithHealth(rt.Coordinator()).Invoke(ctx, fixture(t, "scheduled-event.json")); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	found := false
	for _, line := range sink.lines {
		var doc map[string]any
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatal(err)
		}
		v, ok := doc[emf.ConsumerSecondsToLoss].(float64)
		if !ok {
			continue
		}
		found = true
		if doc["group"] != "billing" || doc["topic"] != "orders" {
			t.Errorf("line %s: want dimensions group billing, topic orders", line)
		}
		if v > ret.Seconds() || v < ret.Seconds()-600 {
			t.Errorf("%s = %v, want about the retention %v", emf.ConsumerSecondsToLoss, v, ret.Seconds())
		}
		if _, ok := doc[emf.ConsumerLagSeconds].(float64); !ok {
			t.Errorf("line %s carries no %s", line, emf.ConsumerLagSeconds)
		}
	}
	if !found {
		t.Fatalf("no EMF line carries %s", emf.ConsumerSecondsToLoss)
	}
}

// TestDispatchScheduleEmitsParkedKeys: a scheduled sweep emits the subscribed group's
// parked keys per {group, topic}, the datum the subscription's parked-keys alarm reads.
func TestDispatchScheduleEmitsParkedKeys(t *testing.T) {
	ctx := context.Background()
	h, _, rt, sink := newDispatch(t, nil)
	l, err := rt.Coordinator().Acquire(ctx, "billing", "orders", 1, "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	row := group.Parked{Group: "billing", Topic: "orders", Partition: 1, Key: []byte("order-7"), Records: 1,
		Error: "declined", Attempts: 3, ParkedAt: time.UnixMilli(1e12), ParkOffset: -1}
	if err := rt.Coordinator().PutParked(ctx, row, "m", l.Generation); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WithHealth(rt.Coordinator()).Invoke(ctx, fixture(t, "scheduled-event.json")); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var got []float64
	for _, line := range sink.lines {
		var doc map[string]any
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatal(err)
		}
		if v, ok := doc[emf.ConsumerParkedKeys].(float64); ok && doc["group"] == "billing" && doc["topic"] == "orders" {
			got = append(got, v)
		}
	}
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("%s of billing/orders = %v, want one datum of 1", emf.ConsumerParkedKeys, got)
	}
}

// TestRetentionTopicPass: with WithTopicPass the retention function takes a
// RetentionTopicEvent as one topic's pass and still a scheduled event as the scheduled
// pass; a topic event naming no valid topic, or any other event, is refused with
// nothing run.
func TestRetentionTopicPass(t *testing.T) {
	var scheduled int
	var topics []string
	h := lambdafn.NewRetention(func(context.Context) (retention.Stats, error) {
		scheduled++
		return retention.Stats{}, nil
	}, nil).WithTopicPass(func(_ context.Context, name string) (retention.Stats, error) {
		topics = append(topics, name)
		return retention.Stats{RecordsExpired: 3}, nil
	})
	out, err := h.Invoke(context.Background(), []byte(`{"strata_retention_topic":"orders"}`))
	if err != nil {
		t.Fatal(err)
	}
	var st retention.Stats
	if err := json.Unmarshal(out, &st); err != nil || st.RecordsExpired != 3 {
		t.Errorf("answer %s (%v), want the topic pass's stats", out, err)
	}
	if _, err := h.Invoke(context.Background(), fixture(t, "scheduled-event.json")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"strata_retention_topic":"../x"}`, `{"strata_retention_topic":""}`, `{"other":1}`, `not json`} {
		if _, err := h.Invoke(context.Background(), []byte(bad)); !errors.Is(err, lambdafn.ErrUnknownEvent) {
			t.Errorf("%s: %v, want ErrUnknownEvent", bad, err)
		}
	}
	if scheduled != 1 || len(topics) != 1 || topics[0] != "orders" {
		t.Errorf("%d scheduled passes and topic passes %q, want 1 and [orders]", scheduled, topics)
	}
}

// FuzzRetentionInvoke: any payload is an error or a pass, never a panic; a refused
// payload runs no pass, and a topic pass only ever gets a valid topic name.
func FuzzRetentionInvoke(f *testing.F) {
	f.Add(fixture(f, "scheduled-event.json"))
	f.Add([]byte(`{"strata_retention_topic":"orders"}`))
	f.Add([]byte(`{"strata_retention_topic":"a/b","source":"aws.events"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		runs := 0
		h := lambdafn.NewRetention(func(context.Context) (retention.Stats, error) {
			runs++
			return retention.Stats{}, nil
		}, nil).WithTopicPass(func(_ context.Context, name string) (retention.Stats, error) {
			runs++
			if !log.ValidName(name) {
				t.Fatalf("topic pass of %q", name)
			}
			return retention.Stats{}, nil
		})
		if _, err := h.Invoke(context.Background(), payload); err != nil && runs != 0 {
			t.Fatalf("a refused payload ran %d passes: %v", runs, err)
		}
	})
}
