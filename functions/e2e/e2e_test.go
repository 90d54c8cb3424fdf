package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// caller is the IAM principal of the api fixture's events (pkg/lambdafn/testdata).
var caller = apigwtest.Principal{AccessKeyID: "ASIAXAMPLEKEYID", AccountID: "123456789012",
	ARN:      "arn:aws:sts::123456789012:assumed-role/billing-producer/billing-session",
	UserID:   "AROAEXAMPLEROLEID:billing-session",
	CallerID: "AROAEXAMPLEROLEID:billing-session"}

// httpEvent builds the API Gateway HTTP API v2 event (apigwtest.NewEvent, as the test
// front builds it) of a request from caller. A []byte body is sent as is (with the
// Content-Type of headers, so a binary one is base64 in the event); another non-nil body
// as JSON.
func httpEvent(t *testing.T, method, path, query string, body any, headers map[string]string) []byte {
	t.Helper()
	var b []byte
	contentType := ""
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
		contentType = "application/json"
	}
	target := "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com" + path
	if query != "" {
		target += "?" + query
	}
	r := httptest.NewRequest(method, target, bytes.NewReader(b))
	r.Header.Set("Accept", "application/json")
	r.Header.Set("User-Agent", "strata-e2e")
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	out, err := json.Marshal(apigwtest.NewEvent(r, b, apigwtest.EventContext{APIID: "a1b2c3d4e5", AccountID: caller.AccountID, Caller: &caller}))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// call invokes the api function and decodes the HTTP answer's body into out; it fails
// the test on a status other than want.
func call(t *testing.T, api *rie, want int, payload []byte, out any) {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	api.mustInvoke(t, payload, &resp)
	if resp.StatusCode != want {
		t.Fatalf("api answered %d %s, want %d", resp.StatusCode, resp.Body, want)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(resp.Body), out); err != nil {
			t.Fatalf("api body %s: %v", resp.Body, err)
		}
	}
}

type order struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// appendOrders appends batches of orders through the api function; each append has its
// own Idempotency-Key.
func appendOrders(t *testing.T, api *rie, first, batches, perBatch int) int {
	t.Helper()
	n := first
	for b := range batches {
		var recs []map[string]any
		for range perBatch {
			v, _ := json.Marshal(order{OrderID: fmt.Sprintf("o-%d", n), Amount: float64(n) + 0.5})
			recs = append(recs, map[string]any{
				"key":   base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "customer-%d", n%5)),
				"value": base64.StdEncoding.EncodeToString(v),
			})
			n++
		}
		call(t, api, 200, httpEvent(t, "POST", "/v1/topics/orders/records", "", map[string]any{"records": recs},
			map[string]string{"idempotency-key": fmt.Sprintf("batch-%d-%d", first, b)}), nil)
	}
	return n - first
}

// streamBatch reads every record of the sequencer table's stream from the emulator and
// shapes it as the Lambda event a stream trigger delivers.
func (d *deployment) streamBatch(t *testing.T) []byte {
	t.Helper()
	ctx := context.Background()
	table := d.cfg.TableName(dynamo.SequencerTable)
	desc, err := d.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if desc.Table.LatestStreamArn == nil {
		t.Fatalf("table %s has no stream", table)
	}
	sc := dynamodbstreams.NewFromConfig(awstest.Config(ctx, t))
	sd, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: desc.Table.LatestStreamArn})
	if err != nil {
		t.Fatalf("describe stream: %v", err)
	}
	var recs []events.DynamoDBEventRecord
	for _, sh := range sd.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: desc.Table.LatestStreamArn, ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatalf("shard iterator: %v", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatalf("get records: %v", err)
			}
			for _, r := range out.Records {
				recs = append(recs, lambdaRecord(t, r, aws.ToString(desc.Table.LatestStreamArn)))
			}
			if len(out.Records) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	if len(recs) == 0 {
		t.Fatal("the sequencer table's stream holds no records")
	}
	b, err := json.Marshal(events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lambdaRecord(t *testing.T, r streamtypes.Record, arn string) events.DynamoDBEventRecord {
	t.Helper()
	rec := events.DynamoDBEventRecord{
		AWSRegion: awstest.Region, EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
		EventSource: "aws:dynamodb", EventVersion: "1.1", EventSourceArn: arn,
	}
	if r.Dynamodb != nil {
		rec.Change = events.DynamoDBStreamRecord{
			Keys: stackrun.ConvertImage(r.Dynamodb.Keys), NewImage: stackrun.ConvertImage(r.Dynamodb.NewImage),
			SequenceNumber: aws.ToString(r.Dynamodb.SequenceNumber), StreamViewType: string(r.Dynamodb.StreamViewType),
		}
	}
	return rec
}

type groupInfo struct {
	Partitions []struct {
		Topic           string `json:"topic"`
		Partition       int32  `json:"partition"`
		CommittedOffset *int64 `json:"committed_offset"`
		HighWatermark   int64  `json:"high_watermark"`
	} `json:"partitions"`
}

// businessItems scans the business table: id → order id.
func (d *deployment) businessItems(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(d.ddb, &dynamodb.ScanInput{TableName: aws.String(d.business), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			id := attrS(it, deploy.BusinessKey)
			if strings.HasPrefix(id, "strata-applied#") {
				// The marker of a record applied through the fenced store: it expires by
				// the table's TTL once the record can no longer be redelivered.
				if ttl, ok := it[deploy.BusinessTTLAttribute].(*types.AttributeValueMemberN); !ok || ttl.Value == "" {
					t.Errorf("marker %s has no %s (TTL) attribute: %v", id, deploy.BusinessTTLAttribute, it)
				}
				continue
			}
			v, _ := it["value"].(*types.AttributeValueMemberB)
			var o struct {
				OrderID string `json:"order_id"`
			}
			if id == "" || v == nil || json.Unmarshal(v.Value, &o) != nil || o.OrderID == "" {
				t.Errorf("business item %v lacks id or an order value", it)
				continue
			}
			out[id] = o.OrderID
		}
	}
	return out
}

func attrS(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// checkExactlyOnce: every order appended is in the business table once, at its own
// topic/partition/offset, and the group's commit equals the high watermark everywhere.
func checkExactlyOnce(t *testing.T, d *deployment, api *rie, orders int) {
	t.Helper()
	items := d.businessItems(t)
	seen := map[string]string{}
	for id, oid := range items {
		if prev, dup := seen[oid]; dup {
			t.Errorf("order %s applied twice: %s and %s", oid, prev, id)
		}
		seen[oid] = id
	}
	if len(items) != orders || len(seen) != orders {
		t.Errorf("business table holds %d items (%d distinct orders), want %d", len(items), len(seen), orders)
	}
	var g groupInfo
	call(t, api, 200, httpEvent(t, "GET", "/v1/groups/billing", "", nil, nil), &g)
	if len(g.Partitions) == 0 {
		t.Fatal("the group has no partitions")
	}
	for _, p := range g.Partitions {
		if p.CommittedOffset == nil || *p.CommittedOffset != p.HighWatermark {
			t.Errorf("partition %d: committed %v, high watermark %d", p.Partition, p.CommittedOffset, p.HighWatermark)
		}
	}
}

// TestOrdersThroughFunctions: create a topic and append through api; give dispatch the
// stream records of those appends; run the consumers it asked for; the business table
// holds every order exactly once and the group's commit equals the high watermark.
func TestOrdersThroughFunctions(t *testing.T) {
	d := newDeployment(t)
	subs, err := deploy.EncodeSubscriptions([]deploy.Subscription{{Topic: "orders", Group: "billing", Function: "strata-consumer"}})
	if err != nil {
		t.Fatal(err)
	}
	api := startRIE(t, deploy.FunctionAPI, d.env())
	consumer := startRIE(t, deploy.FunctionConsumer, d.env(deploy.EnvTopic+"=orders", deploy.EnvGroup+"=billing"))
	lambdaSvc := newLambdaService(t, consumer)
	dispatchFn := startRIE(t, deploy.FunctionDispatch, d.env(deploy.EnvSubscriptions+"="+subs, "AWS_ENDPOINT_URL_LAMBDA="+lambdaSvc.srv.URL))

	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "orders", "partitions": 2}, nil), nil)
	orders := appendOrders(t, api, 0, 6, 4)

	batch := d.streamBatch(t)
	var res struct {
		Trigger string `json:"trigger"`
		Stats   struct {
			Commits, LeaseChecks, Invocations int
		} `json:"stats"`
	}
	dispatchFn.mustInvoke(t, batch, &res)
	evs, results, err := lambdaSvc.wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dispatch: %+v; consumer invocations: %+v; results: %+v", res, evs, results)
	if res.Trigger != "stream" || res.Stats.Invocations != 2 || len(evs) != 2 {
		t.Errorf("dispatch result %+v, invocations %v: want one per partition", res, evs)
	}
	var handled int64
	for _, r := range results {
		handled += r.Handled
	}
	if handled != int64(orders) {
		t.Errorf("consumers handled %d records, want %d", handled, orders)
	}
	checkExactlyOnce(t, d, api, orders)
	if !consumer.logged(`"strata_consumer_records_handled_total"`) {
		t.Error("the consumer wrote no EMF metrics")
	}

	// A sweep now finds nothing to do: every partition is caught up.
	var sweep struct {
		Trigger string                                  `json:"trigger"`
		Stats   struct{ Invocations, SkippedNoLag int } `json:"stats"`
	}
	dispatchFn.mustInvoke(t, mustRead(t, "scheduled-event.json"), &sweep)
	if sweep.Trigger != "schedule" || sweep.Stats.Invocations != 0 || sweep.Stats.SkippedNoLag != 2 {
		t.Errorf("sweep %+v", sweep)
	}
}

// TestDuplicateConsumerInvocation: two invocations of the consumer for one partition at
// once: one works, the other exits at once; nothing is applied twice.
func TestDuplicateConsumerInvocation(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, deploy.FunctionAPI, d.env())
	env := d.env(deploy.EnvTopic+"=orders", deploy.EnvGroup+"=billing")
	c1, c2 := startRIE(t, deploy.FunctionConsumer, env), startRIE(t, deploy.FunctionConsumer, env)
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "orders", "partitions": 1}, nil), nil)
	orders := appendOrders(t, api, 0, 3, 4)

	ev, _ := json.Marshal(deploy.ConsumerEvent{Topic: "orders", Partition: 0, Group: "billing"})
	type out struct {
		res  consumerResult
		err  error
		took time.Duration
		end  time.Time
	}
	run := func(r *rie, ch chan<- out) {
		start := time.Now()
		body, err := r.invoke(context.Background(), ev)
		var res consumerResult
		if err == nil {
			err = json.Unmarshal(body, &res)
		}
		ch <- out{res, err, time.Since(start), time.Now()}
	}
	first, second := make(chan out, 1), make(chan out, 1)
	go run(c1, first)
	// Start the second once the first holds the lease.
	waitForLease(t, d)
	go run(c2, second)
	b := <-second
	a := <-first
	if a.err != nil || b.err != nil {
		t.Fatalf("invocations failed: %v; %v", a.err, b.err)
	}
	t.Logf("working invocation: %+v in %s; duplicate: %+v in %s", a.res, a.took, b.res, b.took)
	if a.res.LeaseHeld || a.res.Handled != int64(orders) {
		t.Errorf("the first invocation %+v: want it to handle all %d", a.res, orders)
	}
	if !b.res.LeaseHeld || b.res.Handled != 0 || !b.end.Before(a.end) {
		t.Errorf("the duplicate %+v (ended before the first: %v): want lease_held at once", b.res, b.end.Before(a.end))
	}
	checkExactlyOnce(t, d, api, orders)
}

// TestConsumerDeadlineMidBatch: an invocation whose deadline arrives mid-batch commits
// its contiguous prefix and releases; the next invocation resumes exactly there.
func TestConsumerDeadlineMidBatch(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, deploy.FunctionAPI, d.env())
	// A 4 s function timeout leaves 1 s of work before the consumer's 3 s margin.
	short := startRIE(t, deploy.FunctionConsumer, d.env(deploy.EnvTopic+"=orders", deploy.EnvGroup+"=billing", "AWS_LAMBDA_FUNCTION_TIMEOUT=4"))
	long := startRIE(t, deploy.FunctionConsumer, d.env(deploy.EnvTopic+"=orders", deploy.EnvGroup+"=billing"))
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "orders", "partitions": 1}, nil), nil)
	// Enough records that one second of work cannot handle them all (each is a
	// transaction through the serialised emulator), few enough that the business table
	// the emulator copies inside each transaction stays small.
	orders := appendOrders(t, api, 0, 4, 250)

	ev, _ := json.Marshal(deploy.ConsumerEvent{Topic: "orders", Partition: 0, Group: "billing"})
	// On a loaded machine one second of work may end before the first commit (or even
	// before the group's settings are read): such an invocation must still stop at its
	// deadline and release, and the next one tries again, as the dispatcher would.
	var first consumerResult
	for try := 1; ; try++ {
		first = consumerResult{}
		err := short.tryInvoke(ev, &first)
		if err == nil && (first.Committed > 0 || !first.StoppedAtDeadline) || try == 5 {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		t.Logf("invocation %d ended at its deadline before its first commit (a loaded machine): %+v %v; invoking again", try, first, err)
	}
	if !first.StoppedAtDeadline || first.Committed <= 0 || first.Committed >= int64(orders) {
		t.Fatalf("first invocation %+v: want it stopped by its deadline mid-batch", first)
	}
	a, err := leases(d).GetAssignment(context.Background(), "billing", "orders", 0)
	if err != nil || a.Owner != "" {
		t.Errorf("after the deadline the lease is %+v (%v), want released", a, err)
	}
	// The next invocation resumes at the commit; on a loaded machine it may reach its own
	// deadline too, and the one after resumes at its commit in turn. An emulator too
	// loaded to take the last commit within the margin makes an invocation fail, its
	// lease kept until it expires: invocations go on, as Lambda's retries and the
	// dispatcher's next stream records would, until one ends before its deadline.
	var second consumerResult
	giveUp := time.Now().Add(4 * time.Minute)
	for try := 1; ; try++ {
		second = consumerResult{} // a field the answer omits (false, zero) must not stay
		err := long.tryInvoke(ev, &second)
		t.Logf("first invocation: %+v; resuming invocation %d: %+v %v", first, try, second, err)
		if err == nil && !second.LeaseHeld && !second.StoppedAtDeadline {
			// What the first completed above its commit is remembered, not handled again.
			if try == 1 && second.Handled+second.Remembered != int64(orders)-first.Committed {
				t.Errorf("second invocation %+v: want it to resume at %d and handle or remember the remaining %d", second, first.Committed, int64(orders)-first.Committed)
			}
			break
		}
		if time.Now().After(giveUp) {
			t.Fatalf("no invocation caught up in 4 minutes; the last: %+v %v", second, err)
		}
		if err != nil || second.LeaseHeld {
			time.Sleep(time.Second)
		}
	}
	if second.Committed != int64(orders) {
		t.Errorf("last invocation %+v: want every one of the %d records committed", second, orders)
	}
	checkExactlyOnce(t, d, api, orders)
}

// leases reads the deployment's leases as the coordinator keeps them: under the topic's
// live incarnation.
func leases(d *deployment) group.Store {
	meta := dynamo.New(d.ddb, d.cfg)
	return group.ByIncarnation(meta, group.TopicsOf(meta))
}

// waitForLease waits until some member holds a live lease on orders/0 for billing.
func waitForLease(t *testing.T, d *deployment) {
	t.Helper()
	meta := leases(d)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		a, err := meta.GetAssignment(context.Background(), "billing", "orders", 0)
		if err == nil && a.Live(time.Now()) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no invocation took the lease")
}

// TestRetentionOnSchedule: the retention function, invoked with a scheduled event,
// removes expired data; a lagging group then gets its reset policy at its next
// invocation, and the loss is counted (result and EMF).
func TestRetentionOnSchedule(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, deploy.FunctionAPI, d.env())
	retentionFn := startRIE(t, deploy.FunctionRetention, d.env())
	consumer := startRIE(t, deploy.FunctionConsumer, d.env(deploy.EnvTopic+"=orders", deploy.EnvGroup+"=billing"))
	// The retention is long enough that the newest append below is not expired by the
	// time the pass runs, even on a loaded machine; the pass runs warm (a first,
	// empty pass started the function) so that its own cold start does not count.
	const retentionMS = 4000
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "orders", "partitions": 1, "retention_ms": retentionMS}, nil), nil)
	retentionFn.mustInvoke(t, mustRead(t, "scheduled-event.json"), nil)
	appendOrders(t, api, 0, 3, 2)
	// The group reads the first 2 records, commits and stops.
	var lease struct {
		Generation int64 `json:"generation"`
	}
	leasePath := "/v1/groups/billing/topics/orders/partitions/0/lease"
	call(t, api, 200, httpEvent(t, "POST", leasePath, "", map[string]any{"member": "old", "ttl_ms": 60000}, nil), &lease)
	call(t, api, 200, httpEvent(t, "POST", "/v1/groups/billing/topics/orders/partitions/0/commit", "",
		map[string]any{"member": "old", "generation": lease.Generation, "next_offset": 2}, nil), nil)
	call(t, api, 204, httpEvent(t, "DELETE", leasePath, "", map[string]any{"member": "old", "generation": lease.Generation}, nil), nil)

	time.Sleep(retentionMS*time.Millisecond + 500*time.Millisecond) // the appends' entries are now past the topic's retention
	appendOrders(t, api, 100, 1, 2)                                 // the newest entry: not expired

	var st struct {
		RecordsExpired  int64
		PartitionsMoved int
	}
	retentionFn.mustInvoke(t, mustRead(t, "scheduled-event.json"), &st)
	if st.RecordsExpired != 6 || st.PartitionsMoved != 1 {
		t.Errorf("retention pass %+v: want the 6 expired records moved out", st)
	}
	if !retentionFn.logged(`"strata_retention_records_expired_total":6`) {
		t.Errorf("the retention function's EMF lines lack the expired records:\n%s", retentionFn.log.String())
	}
	var topic struct {
		PartitionInfo []struct {
			LogStartOffset int64 `json:"log_start_offset"`
			HighWatermark  int64 `json:"high_watermark"`
		} `json:"partition_info"`
	}
	call(t, api, 200, httpEvent(t, "GET", "/v1/topics/orders", "", nil, nil), &topic)
	if len(topic.PartitionInfo) != 1 || topic.PartitionInfo[0].LogStartOffset != 6 || topic.PartitionInfo[0].HighWatermark != 8 {
		t.Fatalf("topic after retention: %+v", topic)
	}

	// The pass sampled the group's lag into the history the api serves (issue 21): no
	// api host lives long enough to keep it.
	var hist struct {
		Partitions []struct {
			Samples []struct {
				LagRecords int64 `json:"lag_records"`
			} `json:"samples"`
		} `json:"partitions"`
	}
	call(t, api, 200, httpEvent(t, "GET", "/v1/groups/billing/lag-history", "", nil, nil), &hist)
	if len(hist.Partitions) != 1 || len(hist.Partitions[0].Samples) != 1 || hist.Partitions[0].Samples[0].LagRecords != 6 {
		t.Errorf("lag history after the pass: %+v, want one sample of 6 records (committed 2, high watermark 8)", hist)
	}

	var res consumerResult
	ev, _ := json.Marshal(deploy.ConsumerEvent{Topic: "orders", Partition: 0, Group: "billing"})
	consumer.mustInvoke(t, ev, &res)
	if res.Lost != 4 || res.Handled != 2 || res.Committed != 8 {
		t.Errorf("consumer after retention %+v: want 4 records lost (2 → 6 by the earliest reset), 2 handled, committed 8", res)
	}
	if !consumer.logged(`"strata_consumer_records_lost_total":4`) {
		t.Errorf("the consumer's EMF lines lack the loss:\n%s", consumer.log.String())
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "pkg", "lambdafn", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
