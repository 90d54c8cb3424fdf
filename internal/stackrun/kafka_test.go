package stackrun_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/deploy"
)

// TestKafkaGatewayOnTheSynthesizedStack: the stack synthesized with
// strata:kafkaGateway=true has one ECS task definition whose container runs here as
// the gateway binary of its image asset, with the container's command and environment
// from the template (the harness overriding only the listen and advertised address and
// the AWS endpoint, through a proxy enforcing the task role's statements). A franz-go
// client creates a topic, produces keyed records with headers and consumes them back
// through that process; the task role is enough for all of it (no denial), and the
// records are in the stack's own tables and bucket (a second gateway process would
// see them: the gateway holds no state).
func TestKafkaGatewayOnTheSynthesizedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("the synthesized stack takes minutes: not in -short")
	}
	st := stackrun.Start(t, stackrun.Options{
		Context:   map[string]string{"strata:kafkaGateway": "true"},
		Instances: 1,
	})
	defer func() { t.Logf("stack run summary:\n%s", st.Summary()) }()
	if len(st.Gateways) != 1 {
		t.Fatalf("gateways %v, want one", st.Gateways)
	}
	var g *stackrun.Gateway
	for _, one := range st.Gateways {
		g = one
	}
	if !slices.Contains(g.Args, "--backend") || !slices.Contains(g.Args, "--emf") {
		t.Errorf("gateway arguments %q: want the template's command", g.Args)
	}
	if g.Env[deploy.EnvBucket] == "" || !strings.HasPrefix(g.Env[deploy.EnvTablePrefix], st.Name) {
		t.Errorf("gateway environment %v: want the stack's bucket and tables", g.Env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.Addr), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DefaultProduceTopic("orders-kafka"), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders-kafka"); err != nil {
		t.Fatalf("create topic through the gateway: %v", err)
	}
	const n = 20
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("customer-%d", i%4)), Value: []byte(fmt.Sprintf("order-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("stackrun")}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce through the gateway: %v", err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(g.Addr), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeTopics("orders-kafka"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := map[string][]string{} // key → values in offset order
	seen := 0
	for seen < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v\n%s", seen, n, err, g.Logs())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			if len(r.Headers) != 1 || r.Headers[0].Key != "source" || string(r.Headers[0].Value) != "stackrun" {
				t.Errorf("record %s: headers %v", r.Value, r.Headers)
			}
			got[string(r.Key)] = append(got[string(r.Key)], string(r.Value))
		})
	}
	for i := range 4 {
		key := fmt.Sprintf("customer-%d", i)
		var want []string
		for j := i; j < n; j += 4 {
			want = append(want, fmt.Sprintf("order-%d", j))
		}
		if !slices.Equal(got[key], want) {
			t.Errorf("key %s: consumed %v, want %v (one key's records in order)", key, got[key], want)
		}
	}
	if ds := stackrun.DistinctDenials(st.Denials()); len(ds) > 0 {
		t.Errorf("the task role refused the gateway's requests: %v", ds)
	}
	if c := g.Proxy.Counts(); len(c) == 0 {
		t.Errorf("the gateway made no AWS request through its proxy")
	}
}
