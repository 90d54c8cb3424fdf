package stackrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/lambdarun"
	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// The stack's settings the story runs with: not the defaults, so that a setting the
// stack writes and no function reads shows up as a wrong answer.
const (
	defaultPartitions = 3
	maxRetentionDays  = 7
	exampleTopic      = "orders"
	exampleGroup      = "order-consumer"
	deadLetterTopic   = "orders.dlq"
)

// operatorGrants are the api's grants of the operator: every topic and group.
const operatorGrants = `[{"principal": "arn:aws:iam::` + stackrun.Account + `:user/operator", "name": "operator",
  "allow": [{"resource": "topic:*", "ops": ["create", "describe", "append", "read", "alter"]},
            {"resource": "topic:purged", "ops": ["delete"]},
            {"resource": "group:*", "ops": ["consume", "describe", "reset"]}]}]`

// pendingOn names the story's checks whose feature is on a branch not merged yet (check
// name → branch): such a check that fails is logged as PENDING instead of failing the
// story. Empty: every check counts. The story logs when a pending check passes.
var pendingOn = map[string]string{}

// check fails t with the message unless ok, or logs it when the check is pending.
func check(t *testing.T, name string, ok bool, format string, args ...any) {
	t.Helper()
	branch, pending := pendingOn[name]
	switch {
	case ok && pending:
		t.Logf("pending check %q passes now: delete it from pendingOn", name)
	case !ok && pending:
		t.Logf("PENDING on %s: %s", branch, fmt.Sprintf(format, args...))
	case !ok:
		t.Errorf(format, args...)
	}
}

var (
	// operator may call every route of the API (execute-api:Invoke on the API).
	operator = apigwtest.Principal{AccessKeyID: "AKIAOPERATOR", SecretAccessKey: "operator-secret",
		ARN: "arn:aws:iam::" + stackrun.Account + ":user/operator"}
	// stranger signs correctly but no policy lets it invoke the API.
	stranger = apigwtest.Principal{AccessKeyID: "AKIASTRANGER", SecretAccessKey: "stranger-secret",
		ARN: "arn:aws:iam::" + stackrun.Account + ":user/stranger"}
)

// TestUserStoryOnTheSynthesizedStack: the stack as `cdk synth` makes
// it, run here from its template. The CLI (signed) creates the topics and configures the
// group; the SDK's producer (signed) appends keyed orders and one poison record; the
// sequencer's stream drives dispatch through the template's event source mapping;
// dispatch invokes the subscribed example consumer asynchronously; the consumer writes
// each order to the business table exactly once and dead-letters the poison record as
// the group's settings say; the retention schedule expires a short topic's records; a
// delete topic's objects carry the lifecycle backstop's tag, which a scheduled compaction
// pass takes off once the topic is altered to compact; a
// topic asking for more than the stack's maximum retention is refused, and one lengthened
// to it stays within the bucket's lifecycle rule; unsigned,
// tampered and unauthorized requests are refused. Every AWS request of every function is
// checked against its role in the template: a denial fails the story.
func TestUserStoryOnTheSynthesizedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("the synthesized stack takes minutes: not in -short")
	}
	st := stackrun.Start(t, stackrun.Options{
		Context: map[string]string{
			"strata:defaultPartitions": fmt.Sprint(defaultPartitions),
			"strata:maxRetentionDays":  fmt.Sprint(maxRetentionDays),
			"strata:exampleTopic":      exampleTopic,
			"strata:exampleGroup":      exampleGroup,
			"strata:exampleDeadLetter": deadLetterTopic,
			// The api denies by default: the operator's grants (STRATA_GRANTS).
			"strata:apiGrants": operatorGrants,
		},
		Callers: []stackrun.Caller{
			{Principal: operator, Statements: []stackrun.Statement{{Effect: "Allow",
				Actions: []string{"execute-api:Invoke"}, Resources: []string{"{api}/*"}}}},
			{Principal: stranger},
		},
	})
	ctx := context.Background()
	var (
		ordersWritten, deadLettered       int
		refusedByFront, refusedByAPI      int
		retentionExpired, defaultPartsGot int32
	)
	defer func() {
		t.Logf("user story counts: orders written %d, dead-lettered %d, refused requests %d (front 403: %d, api 400: %d), records expired by the retention schedule %d, default partitions %d",
			ordersWritten, deadLettered, refusedByFront+refusedByAPI, refusedByFront, refusedByAPI, retentionExpired, defaultPartsGot)
		t.Logf("stack run summary:\n%s", st.Summary())
	}()

	// The CLI, signed (--aws) with the operator's credentials.
	cli := newCLI(t, st.APIURL)
	cli.run(t, "topics", "create", exampleTopic, "--partitions", "2")
	cli.run(t, "topics", "create", deadLetterTopic, "--partitions", "1")
	cli.run(t, "groups", "settings", exampleGroup, "--max-attempts", "3", "--dead-letter-topic", deadLetterTopic)

	// The SDK, signed (pkg/client/awsauth) with the operator's credentials.
	c := sdk(t, st.APIURL, signed(operator, nil))
	const orders = 24
	p, err := client.NewProducer(ctx, c, exampleTopic, client.ProducerConfig{Linger: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var futures []*client.Future
	for i := range orders {
		v, _ := json.Marshal(map[string]any{"order_id": fmt.Sprintf("o-%d", i), "amount": float64(i) + 0.5})
		f, err := p.Send(ctx, client.Record{Key: fmt.Appendf(nil, "customer-%d", i%5), Value: v})
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	poison, err := p.Send(ctx, client.Record{Key: []byte("customer-poison"), Value: []byte("this is not an order")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("producer: %v", err)
	}
	for i, f := range append(futures, poison) {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}

	// The stream, dispatch and the consumer do the rest: wait until the group has
	// committed everything (the poison record dead-lettered or dropped).
	business := businessTable(t, st)
	ddb := awstest.DynamoDBClient(ctx, t)
	st.WaitFor(ctx, func() bool {
		g, err := c.DescribeGroup(ctx, exampleGroup)
		if err != nil || len(g.Partitions) != 2 {
			return false
		}
		for _, gp := range g.Partitions {
			if gp.CommittedOffset == nil || *gp.CommittedOffset != gp.HighWatermark {
				return false
			}
		}
		return true
	}, 3*time.Minute, "the group commits every record of "+exampleTopic)
	items := scanOrders(t, ddb, business)
	seen := map[string]string{}
	for id, oid := range items {
		if prev, dup := seen[oid]; dup {
			t.Errorf("order %s written twice: %s and %s", oid, prev, id)
		}
		seen[oid] = id
	}
	ordersWritten = len(seen)
	if len(items) != orders || len(seen) != orders {
		t.Errorf("business table holds %d items (%d distinct orders), want each of the %d orders once", len(items), len(seen), orders)
	}
	dlq, err := c.DescribeTopic(ctx, deadLetterTopic)
	if err != nil {
		t.Fatal(err)
	}
	deadLettered = int(dlq.PartitionInfo[0].HighWatermark)
	if deadLettered != 1 {
		t.Errorf("the dead-letter topic %s holds %d records, want the poison record (the group's settings: 3 attempts, dead-letter to %s)", deadLetterTopic, deadLettered, deadLetterTopic)
	}

	// An api host that dies after an idempotent append's commit, before its entry and
	// claim: dispatch indexes the commit from the stream (reading the batch object's
	// members table under its own role), and the record becomes readable.
	crashed := crashedAppender(ctx, t, st, c)
	// A deleted topic's purge, under the retention function's role.
	purgedByRetentionRole(ctx, t, st, c)
	st.WaitFor(ctx, func() bool {
		res, err := c.Poll(ctx, crashed, 0, 0, client.PollOptions{MaxRecords: 10})
		return err == nil && len(res.Records) == 1
	}, 2*time.Minute, "dispatch indexes the crashed appender's commit")

	// A topic created without a partition count gets the stack's default.
	top, err := c.CreateTopic(ctx, "defaults", client.TopicConfig{})
	if err == nil {
		defaultPartsGot = top.Partitions
	}
	check(t, "default partitions", err == nil && top.Partitions == defaultPartitions,
		"a topic created without a partition count: %+v, %v; want the stack's STRATA_DEFAULT_PARTITIONS %d", top, err, defaultPartitions)

	// More than the stack's maximum retention is refused, naming the maximum.
	_, err = c.CreateTopic(ctx, "too-long", client.TopicConfig{Partitions: 1, Retention: 30 * 24 * time.Hour})
	var apiErr *client.APIError
	refused := errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest
	if refused {
		refusedByAPI++
	}
	check(t, "maximum retention", refused && (strings.Contains(err.Error(), "604800000") || strings.Contains(err.Error(), "7 days") || strings.Contains(err.Error(), "168h")),
		"a 30-day topic on a %d-day stack: %v, want 400 naming the maximum", maxRetentionDays, err)

	// Retention runs on its schedule: a topic with a 1 s retention loses its old
	// records at the next scheduled pass.
	if _, err := c.CreateTopic(ctx, "audit", client.TopicConfig{Partitions: 1, Retention: time.Second}); err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	for i := range 3 {
		if _, err := c.Append(ctx, "audit", []client.Record{{Value: fmt.Appendf(nil, "a-%d", i), Partition: &zero}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // past the topic's retention
	if _, err := c.Append(ctx, "audit", []client.Record{{Value: []byte("newest"), Partition: &zero}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	st.WaitFor(ctx, func() bool {
		tp, err := c.DescribeTopic(ctx, "audit")
		if err != nil || len(tp.PartitionInfo) != 1 {
			return false
		}
		retentionExpired = int32(tp.PartitionInfo[0].LogStartOffset)
		return retentionExpired >= 3
	}, 2*time.Minute, "the retention schedule expires audit's first 3 records")
	// The scheduled pass fans out: audit's pass ran in an asynchronous invocation of the
	// retention function itself (its right to invoke itself checked by the harness's IAM).
	// An asynchronous invocation's result is recorded once it has returned, which may be
	// just after the log start it moved was read above: wait for it.
	retentionFn := st.Function("Strata retention").Name
	fannedOut := func() bool {
		for _, r := range st.AsyncResults() {
			if r.Function == retentionFn && r.Err == nil && strings.Contains(string(r.Payload), `"strata_retention_topic":"audit"`) {
				return true
			}
		}
		return false
	}
	st.WaitFor(ctx, fannedOut, 30*time.Second, "an asynchronous invocation of the retention function passes audit (the scheduled pass fans out per topic)")

	// Compaction runs in its own function on its own schedule: its scheduled pass fans
	// out one asynchronous invocation of the function itself per partition of each
	// compacted topic, each that partition's pass (its right to invoke itself and every
	// store call of the pass checked by the harness's IAM).
	if _, err := c.CreateTopic(ctx, "settings", client.TopicConfig{Partitions: 2, Cleanup: client.CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	// Overwrites past the dirty ratio (the second record of the key supersedes the
	// first: 1 of 2) make the api's trigger invoke the compaction function for the
	// key's partition (its right to invoke it checked by the harness's IAM).
	for _, v := range []string{"on", "off"} {
		if _, err := c.Append(ctx, "settings", []client.Record{{Key: []byte("mode"), Value: []byte(v)}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	compactFn := st.Function("Strata compact").Name
	triggered := func() bool {
		for _, r := range st.AsyncResults() {
			if r.Function == compactFn && r.Err == nil && strings.Contains(string(r.Payload), `"strata_compact_trigger":"dirty"`) {
				return true
			}
		}
		return false
	}
	st.WaitFor(ctx, triggered, 30*time.Second, "an overwrite past the dirty ratio makes the api invoke the compaction function for its partition")
	compactedParts := func() bool {
		passed := map[string]bool{}
		for _, r := range st.AsyncResults() {
			if pl := string(r.Payload); r.Function == compactFn && r.Err == nil && strings.Contains(pl, `"strata_compact_topic":"settings"`) && strings.Contains(pl, `"strata_compact_trigger":"fanout"`) {
				passed[pl] = true
			}
		}
		return len(passed) == 2 // one per partition
	}
	st.WaitFor(ctx, compactedParts, time.Minute, "asynchronous invocations of the compaction function pass both partitions of settings (the scheduled pass fans out per partition)")

	// A delete topic's objects carry the backstop's tag; altered to compact, a scheduled
	// compaction pass takes it off every object its entries refer to (the compaction
	// function's PutObjectTagging checked by the harness's IAM), so the backstop never takes them.
	if _, err := c.CreateTopic(ctx, "altered", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := c.Append(ctx, "altered", []client.Record{{Key: []byte("k"), Value: fmt.Appendf(nil, "v-%d", i), Partition: &zero}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s3c := awstest.S3Client(ctx, t)
	bucket := aws.String(st.Function("Strata api").Env[deploy.EnvBucket])
	tagged := func() (objects, expiring int) {
		p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: bucket, Prefix: aws.String(deploy.SegmentKeyPrefix + "altered/")})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				if strings.Contains(aws.ToString(o.Key), "/compact/") {
					continue // a garbage marker, never tagged
				}
				objects++
				tags, err := s3c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: bucket, Key: o.Key})
				if err != nil {
					t.Fatal(err)
				}
				for _, tg := range tags.TagSet {
					if aws.ToString(tg.Key) == store.ExpiryTagKey && aws.ToString(tg.Value) == store.ExpiryTagValue {
						expiring++
					}
				}
			}
		}
		return objects, expiring
	}
	objs, expiring := tagged()
	check(t, "backstop tag", objs == 2 && expiring == 2, "a delete topic's %d objects, %d tagged %s=%s: want 2 and 2", objs, expiring, store.ExpiryTagKey, store.ExpiryTagValue)
	if _, err := c.SetCleanup(ctx, "altered", client.CleanupChange{Cleanup: client.CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	st.WaitFor(ctx, func() bool {
		objs, expiring = tagged()
		return objs > 0 && expiring == 0
	}, 2*time.Minute, "a scheduled compaction pass untags the objects of a topic altered to compact")

	// Lengthened, a topic's retention stays within the bucket's lifecycle backstop: the
	// api accepts up to the stack's maximum (strata:maxRetentionDays) and refuses more,
	// for ever included, naming that setting; the lifecycle rule the stack gave the
	// bucket expires a segment object only a day past the longest retention accepted.
	cli.run(t, "topics", "alter", "audit", "--retention", fmt.Sprintf("%dd", maxRetentionDays))
	var longest time.Duration
	st.WaitFor(ctx, func() bool { // every api host within its topic cache's 5 s
		if tp, err := c.DescribeTopic(ctx, "audit"); err == nil {
			longest = tp.Retention
		}
		return longest == maxRetentionDays*24*time.Hour
	}, 30*time.Second, "every api host sees audit's lengthened retention")
	for _, r := range []time.Duration{client.RetentionForever, (maxRetentionDays + 1) * 24 * time.Hour} {
		_, err := c.SetRetention(ctx, "audit", r)
		refused := errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest && strings.Contains(err.Error(), "strata:maxRetentionDays")
		if refused {
			refusedByAPI++
		}
		check(t, "retention beyond the maximum", refused, "retention %s on a %d-day stack: %v, want 400 naming strata:maxRetentionDays", r, maxRetentionDays, err)
	}
	lc, err := s3c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	// The rule takes only the objects tagged as those of topics that delete by time
	// (store.Expiry): a prefix and the tag, S3's And filter.
	var backstop time.Duration
	for _, r := range lc.Rules {
		if r.Filter == nil || r.Filter.And == nil || aws.ToString(r.Filter.And.Prefix) != deploy.SegmentKeyPrefix || r.Expiration == nil {
			continue
		}
		if len(r.Filter.And.Tags) == 1 && aws.ToString(r.Filter.And.Tags[0].Key) == store.ExpiryTagKey && aws.ToString(r.Filter.And.Tags[0].Value) == store.ExpiryTagValue {
			backstop = time.Duration(aws.ToInt32(r.Expiration.Days)) * 24 * time.Hour
		}
	}
	check(t, "lifecycle backstop", longest > 0 && backstop >= longest+24*time.Hour,
		"the bucket's lifecycle rule on %s tagged %s=%s expires objects after %s, want at least a day past the longest retention %s",
		deploy.SegmentKeyPrefix, store.ExpiryTagKey, store.ExpiryTagValue, backstop, longest)

	// Refused at the front: unsigned, tampered, and signed by a principal without
	// execute-api:Invoke.
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"unsigned", http.DefaultTransport},
		{"bad signature", signed(operator, func(r *http.Request) {
			h := r.Header.Get("Authorization")
			flip := "0"
			if strings.HasSuffix(h, "0") {
				flip = "1"
			}
			r.Header.Set("Authorization", h[:len(h)-1]+flip)
		})},
		{"tampered path", signed(operator, func(r *http.Request) { r.URL.Path = "/v1/topics/" + deadLetterTopic })},
		{"no execute-api:Invoke", signed(stranger, nil)},
	} {
		_, err := sdk(t, st.APIURL, tc.rt).DescribeTopic(ctx, exampleTopic)
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
			t.Errorf("%s request: %v, want 403", tc.name, err)
			continue
		}
		refusedByFront++
	}
	if got := int(st.Front.Stats().Refused); got != refusedByFront {
		t.Errorf("the front refused %d requests, the story counted %d", got, refusedByFront)
	}

	for _, d := range stackrun.DistinctDenials(st.Denials()) {
		t.Errorf("IAM denied a function's request: %s", d)
	}
	for _, f := range st.StreamFailures() {
		t.Errorf("stream batch given up: %s", f)
	}
	for _, r := range st.AsyncResults() {
		if r.Err != nil {
			t.Errorf("asynchronous invocation of %s failed: %v", r.Function, r.Err)
		}
	}
	for id, r := range st.ScheduleRuns() {
		if r[1] != "0" {
			t.Errorf("schedule %s: %s of %s runs failed: %s", id, r[1], r[0], r[2])
		}
	}
}

// businessTable is the example consumer's business table, as its environment names it.
func businessTable(t *testing.T, st *stackrun.Stack) string {
	t.Helper()
	name := st.Function("Strata example order consumer (functions/consumer)").Env[deploy.EnvBusinessTable]
	for _, id := range st.Template.OfType("AWS::DynamoDB::Table") {
		if st.Template.Name(id) == name {
			return name
		}
	}
	t.Fatalf("the consumer's %s %q is no table of the stack", deploy.EnvBusinessTable, name)
	return ""
}

func sdk(t *testing.T, url string, rt http.RoundTripper) *client.Client {
	t.Helper()
	c, err := client.New(url, client.WithHTTPClient(&http.Client{Transport: rt, Timeout: 2 * time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scanOrders reads the business table: id → order id, from each business item's value
// (the order event), leaving out the fenced store's per-record markers.
func scanOrders(t *testing.T, ddb *dynamodb.Client, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			id, _ := it[deploy.BusinessKey].(*types.AttributeValueMemberS)
			if id != nil && strings.HasPrefix(id.Value, "strata-applied#") {
				continue // the marker of a record applied through the fenced store
			}
			v, _ := it["value"].(*types.AttributeValueMemberB)
			var o struct {
				OrderID string `json:"order_id"`
			}
			if id == nil || v == nil || json.Unmarshal(v.Value, &o) != nil || o.OrderID == "" {
				t.Errorf("business item %v lacks id or an order value", it)
				continue
			}
			out[id.Value] = o.OrderID
		}
	}
	return out
}

// cli is the strata CLI built from cmd/strata, run against the API as a user would.
type cli struct {
	bin, url string
	env      []string
	flags    []string // before the command, after --url and --aws
}

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

func newCLI(t *testing.T, apiURL string) *cli {
	t.Helper()
	cliOnce.Do(func() {
		root := lambdarun.Built(t).Root
		cliBin = filepath.Join(root, "build", "e2e", "bin", "strata")
		cmd := exec.Command("go", "build", "-o", cliBin, "./cmd/strata")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("build the CLI: %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	// The CLI signs with the operator's credentials from the environment (--aws: the
	// front's URL is a loopback one, not an execute-api host).
	return &cli{bin: cliBin, url: apiURL, env: []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"AWS_ACCESS_KEY_ID=" + operator.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + operator.SecretAccessKey,
		"AWS_REGION=" + stackrun.Region, "AWS_EC2_METADATA_DISABLED=true"}}
}

func (c *cli) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(c.bin, append(append([]string{"--url", c.url, "--aws"}, c.flags...), args...)...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("$ strata %s\n%s", strings.Join(args, " "), out.String())
	if err != nil {
		t.Fatalf("strata %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}
