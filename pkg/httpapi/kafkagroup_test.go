package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/kgroup"
	"github.com/stratalog/strata/pkg/store"
)

// TestStrataMemberInKafkaGroupIs409: a lease or a first heartbeat in a group whose
// barrier row holds a live Kafka member is 409 kafka_group and leaves no lease or
// member; once that member's session has ended, the same lease is granted.
func TestStrataMemberInKafkaGroupIs409(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	ctx := context.Background()
	ens, ok := e.meta.MetaStore.(interface {
		EnsureGroup(context.Context, store.GroupConfig) (store.GroupConfig, error)
	})
	if !ok {
		t.Fatalf("%T cannot create a group", e.meta.MetaStore)
	}
	if _, err := ens.EnsureGroup(ctx, store.GroupConfig{Name: "g", ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	st := kgroup.State{Generation: 1, Phase: kgroup.Stable, ProtocolType: "consumer", Protocol: "range", Leader: "k-1",
		Members: []kgroup.Member{{ID: "k-1", Protos: []kgroup.Protocol{{Name: "range"}}, Session: 10 * time.Second,
			Rebalance: 10 * time.Second, Deadline: e.clock.Now().Add(10 * time.Second)}}}
	if _, err := e.meta.SwapBarrier(ctx, "g", 0, st.Encode()); err != nil {
		t.Fatal(err)
	}
	e.call("POST", gp+"0/lease", lease("m-1")).want(t, 409, "kafka_group")
	e.call("POST", "/v1/groups/g/topics/t/heartbeat", map[string]any{"member": "m-1"}).want(t, 409, "kafka_group")
	r := e.call("GET", "/v1/groups/g/members", nil).want(t, 200)
	if ms, _ := r.body["members"].([]any); len(ms) != 0 {
		t.Fatalf("members after the refusals: %s", r.raw)
	}
	e.clock.Advance(11 * time.Second)
	e.call("POST", gp+"0/lease", lease("m-1")).want(t, 200)
}
