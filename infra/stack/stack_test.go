package stack_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/internal/assets"
	"github.com/stratalog/strata/infra/internal/tmpl"
	"github.com/stratalog/strata/infra/stack"
	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// The stack is synthesized once (jsii synthesis takes seconds) and every test reads the
// same template; gwTpl is the stack with the Kafka gateway (kafka_test.go).
var tpl, gwTpl *tmpl.Template

func TestMain(m *testing.M) {
	err := synth()
	if err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func synth() error {
	dir, err := assets.Placeholders()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out, err := os.MkdirTemp("", "strata-cdk-out-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	for _, c := range []struct {
		into    **tmpl.Template
		context map[string]any
		export  string
	}{
		{&tpl, nil, "stack-default"},
		{&gwTpl, gatewayContext, "stack-kafka-gateway"},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), Context: &c.context})
		cfg, err := stack.FromContext(app.Node(), dir)
		if err != nil {
			return err
		}
		st, err := stack.New(app, cfg)
		if err != nil {
			return err
		}
		if *c.into, err = tmpl.New(assertions.Template_FromStack(st.Stack, nil)); err != nil {
			return err
		}
		if err := (*c.into).Export(c.export); err != nil {
			return err
		}
	}
	return nil
}

// table returns the logical id of the Strata table with suffix.
func table(t *testing.T, suffix string) string {
	t.Helper()
	id, _, err := tpl.Find("AWS::DynamoDB::Table", "TableName", "Strata-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// function returns the logical id and properties of the function with description desc.
func function(t *testing.T, desc string) (string, map[string]any) {
	t.Helper()
	id, r, err := tpl.Find("AWS::Lambda::Function", "Description", desc)
	if err != nil {
		t.Fatal(err)
	}
	return id, r.Properties
}

func bucket(t *testing.T) string {
	t.Helper()
	ids := tpl.OfType("AWS::S3::Bucket")
	if len(ids) != 1 {
		t.Fatalf("buckets: %v, want one", ids)
	}
	return ids[0]
}

func TestBucket(t *testing.T) {
	b := bucket(t)
	tmpl.Check(t, "bucket", func() {
		tpl.A.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}}},
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
			"LifecycleConfiguration": map[string]any{"Rules": []any{
				// the longest retention (7 days) plus a day: the retention function's backstop,
				// on the objects tagged as those of topics that delete by time only
				map[string]any{"Id": "retention-backstop", "Prefix": deploy.SegmentKeyPrefix, "ExpirationInDays": 8, "Status": "Enabled",
					"TagFilters": []any{map[string]any{"Key": store.ExpiryTagKey, "Value": store.ExpiryTagValue}}},
				map[string]any{"Id": "abort-incomplete-uploads", "AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1}, "Status": "Enabled"},
			}},
		})
	})
	// The bucket policy denies every request without TLS, to the bucket and its objects.
	if _, _, err := tpl.Find("AWS::S3::BucketPolicy", "Bucket", map[string]any{"Ref": b}); err != nil {
		t.Fatal(err)
	}
	all, err := tpl.AllStatements()
	if err != nil {
		t.Fatal(err)
	}
	var denies int
	for id, sts := range all {
		if tpl.Resources[id].Type != "AWS::S3::BucketPolicy" {
			continue
		}
		for _, st := range sts {
			if st.Effect == "Deny" && slices.Equal(st.Actions, []string{"s3:*"}) &&
				reflect.DeepEqual(st.Condition, map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}) &&
				len(st.Resources) == 2 && tmpl.Join(st.Resources[0]) == "<GetAtt:"+b+".Arn>" && tmpl.Join(st.Resources[1]) == "<GetAtt:"+b+".Arn>/*" {
				denies++
			}
		}
	}
	if denies != 1 {
		t.Errorf("bucket policy: %d statements denying non-TLS access to the bucket and its objects, want 1", denies)
	}
}

func TestTables(t *testing.T) {
	tmpl.Check(t, "table count", func() {
		// Strata's tables and the example consumer's business table.
		tpl.A.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(float64(len(dynamo.Tables())+1)))
	})
	for _, ts := range dynamo.Tables() {
		t.Run(ts.Suffix, func(t *testing.T) {
			p := tpl.Resources[table(t, ts.Suffix)].Properties
			keys := []any{map[string]any{"AttributeName": ts.PartitionKey.Name, "KeyType": "HASH"}}
			attrs := []any{map[string]any{"AttributeName": ts.PartitionKey.Name, "AttributeType": string(ts.PartitionKey.Type)}}
			if ts.SortKey.Name != "" {
				keys = append(keys, map[string]any{"AttributeName": ts.SortKey.Name, "KeyType": "RANGE"})
				attrs = append(attrs, map[string]any{"AttributeName": ts.SortKey.Name, "AttributeType": string(ts.SortKey.Type)})
			}
			want := map[string]any{
				"KeySchema":                        keys,
				"AttributeDefinitions":             attrs,
				"BillingMode":                      "PAY_PER_REQUEST",
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": ts.PointInTimeRecovery},
			}
			if ts.TTLAttribute != "" {
				want["TimeToLiveSpecification"] = map[string]any{"AttributeName": ts.TTLAttribute, "Enabled": true}
			}
			if ts.Stream != "" {
				want["StreamSpecification"] = map[string]any{"StreamViewType": string(ts.Stream)}
			}
			for k, v := range want {
				if got := p[k]; !jsonEqual(got, v) {
					t.Errorf("%s = %s, want %s", k, js(got), js(v))
				}
			}
			for _, k := range []string{"TimeToLiveSpecification", "StreamSpecification", "ProvisionedThroughput"} {
				if _, wanted := want[k]; !wanted && p[k] != nil {
					t.Errorf("%s = %s, want none", k, js(p[k]))
				}
			}
		})
	}
}

func TestFunctions(t *testing.T) {
	tmpl.Check(t, "function count", func() {
		tpl.A.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(5))
	})
	b := bucket(t)
	for _, name := range []string{deploy.FunctionAPI, deploy.FunctionDispatch, deploy.FunctionRetention, deploy.FunctionCompact} {
		_, p := function(t, "Strata "+name)
		for k, want := range map[string]any{
			"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap",
		} {
			if !jsonEqual(p[k], want) {
				t.Errorf("%s: %s = %s, want %s", name, k, js(p[k]), js(want))
			}
		}
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got := tmpl.Join(env[deploy.EnvBucket]); got != "<Ref:"+b+">" {
			t.Errorf("%s: %s = %s", name, deploy.EnvBucket, got)
		}
		if got := env[deploy.EnvTablePrefix]; got != "Strata-" {
			t.Errorf("%s: %s = %v", name, deploy.EnvTablePrefix, got)
		}
	}
	_, api := function(t, "Strata api")
	env := api["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k, want := range map[string]string{
		deploy.EnvDefaultPartitions: "4", deploy.EnvDefaultRetentionMS: "86400000", deploy.EnvMaxRetentionMS: "604800000",
	} {
		if env[k] != want {
			t.Errorf("api: %s = %v, want %s", k, env[k], want)
		}
	}
	if api["CapacityProviderConfig"] != nil {
		t.Error("api runs on a capacity provider by default; want on-demand")
	}
	tmpl.Check(t, "no capacity provider by default", func() {
		tpl.A.ResourceCountIs(jsii.String("AWS::Lambda::CapacityProvider"), jsii.Number(0))
		tpl.A.ResourceCountIs(jsii.String("AWS::EC2::VPC"), jsii.Number(0))
	})
}

func TestHTTPAPI(t *testing.T) {
	apiFn, _ := function(t, "Strata api")
	integrations := tpl.OfType("AWS::ApiGatewayV2::Integration")
	if len(integrations) != 1 {
		t.Fatalf("integrations %v, want one", integrations)
	}
	ip := tpl.Resources[integrations[0]].Properties
	if ip["IntegrationType"] != "AWS_PROXY" || ip["PayloadFormatVersion"] != "2.0" ||
		tmpl.Join(ip["IntegrationUri"]) != "<GetAtt:"+apiFn+".Arn>" {
		t.Errorf("integration %s: want AWS_PROXY, payload 2.0, the api function", js(ip))
	}
	routes := map[string]string{}
	for _, id := range tpl.OfType("AWS::ApiGatewayV2::Route") {
		p := tpl.Resources[id].Properties
		routes[p["RouteKey"].(string)] = fmt.Sprint(p["AuthorizationType"])
	}
	want := map[string]string{
		"POST /v1/topics":                 "AWS_IAM",
		"GET /v1/topics":                  "AWS_IAM",
		"GET /v1/topics/{topic}":          "AWS_IAM",
		"POST /v1/topics/{topic}/records": "AWS_IAM",
		"GET /v1/topics/{topic}/partitions/{partition}/records":                 "AWS_IAM",
		"POST /v1/groups/{group}/topics/{topic}/partitions/{partition}/lease":   "AWS_IAM",
		"DELETE /v1/groups/{group}/topics/{topic}/partitions/{partition}/lease": "AWS_IAM",
		"POST /v1/groups/{group}/topics/{topic}/partitions/{partition}/commit":  "AWS_IAM",
		"GET /v1/groups/{group}":                       "AWS_IAM",
		"POST /v1/groups/{group}/topics/{topic}/reset": "AWS_IAM",
		"$default":       "AWS_IAM", // unknown routes reach the api's own 404/405, still signed
		"GET /v1/health": "NONE",
	}
	if !reflect.DeepEqual(routes, want) {
		t.Errorf("routes:\n got %v\nwant %v", routes, want)
	}
}

func TestStreamMapping(t *testing.T) {
	dispatch, _ := function(t, "Strata dispatch")
	seq := table(t, dynamo.SequencerTable)
	ids := tpl.OfType("AWS::Lambda::EventSourceMapping")
	if len(ids) != 1 {
		t.Fatalf("event source mappings %v, want one", ids)
	}
	p := tpl.Resources[ids[0]].Properties
	queues := tpl.OfType("AWS::SQS::Queue")
	if len(queues) != 1 {
		t.Fatalf("queues %v, want one", queues)
	}
	want := map[string]any{
		"FunctionName":               map[string]any{"Ref": dispatch},
		"EventSourceArn":             map[string]any{"Fn::GetAtt": []any{seq, "StreamArn"}},
		"StartingPosition":           "TRIM_HORIZON",
		"BatchSize":                  100,
		"BisectBatchOnFunctionError": true,
		"MaximumRetryAttempts":       5,
		"MaximumRecordAgeInSeconds":  3600,
		"ParallelizationFactor":      1,
		// The default: dispatch runs for every stream batch (strata:consumerBatchingWindowSeconds).
		"MaximumBatchingWindowInSeconds": 0,
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{
			"Destination": map[string]any{"Fn::GetAtt": []any{queues[0], "Arn"}}}},
	}
	for k, v := range want {
		if !jsonEqual(p[k], v) {
			t.Errorf("%s = %s, want %s", k, js(p[k]), js(v))
		}
	}
}

func TestSchedules(t *testing.T) {
	dispatch, _ := function(t, "Strata dispatch")
	retention, _ := function(t, "Strata retention")
	compactFn, _ := function(t, "Strata compact")
	got := map[string]string{}
	for _, id := range tpl.OfType("AWS::Events::Rule") {
		p := tpl.Resources[id].Properties
		targets := p["Targets"].([]any)
		if len(targets) != 1 {
			t.Fatalf("rule %s: %d targets", id, len(targets))
		}
		fn, _ := tmpl.GetAtt(targets[0].(map[string]any)["Arn"], "Arn")
		got[fn] = fmt.Sprint(p["ScheduleExpression"])
	}
	want := map[string]string{dispatch: "rate(1 minute)", retention: "rate(5 minutes)", compactFn: "rate(5 minutes)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schedules %v, want %v", got, want)
	}
}

// TestSubscription: the example consumer subscribed through the construct is in
// dispatch's subscriptions, dispatch may invoke it, and it gets its environment.
func TestSubscription(t *testing.T) {
	consumer, cp := function(t, "Strata example order consumer (functions/consumer)")
	_, dp := function(t, "Strata dispatch")
	env := dp["Environment"].(map[string]any)["Variables"].(map[string]any)
	raw := tmpl.Join(env[deploy.EnvSubscriptions])
	subs, err := deploy.ParseSubscriptions(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	want := []deploy.Subscription{{Topic: "orders", Group: "order-consumer", Function: "<Ref:" + consumer + ">"}}
	if !reflect.DeepEqual(subs, want) {
		t.Errorf("subscriptions %v, want %v", subs, want)
	}
	cenv := cp["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k, v := range map[string]string{deploy.EnvTopic: "orders", deploy.EnvGroup: "order-consumer", deploy.EnvTablePrefix: "Strata-"} {
		if cenv[k] != v {
			t.Errorf("consumer %s = %v, want %s", k, cenv[k], v)
		}
	}
	if cenv[deploy.EnvBusinessTable] == nil || cenv[deploy.EnvBucket] == nil {
		t.Errorf("consumer environment %s lacks the business table or bucket", js(cenv))
	}
	if got := cp["Architectures"]; !jsonEqual(got, []any{"arm64"}) {
		t.Errorf("consumer architectures %v", got)
	}
}

// TestBusinessTableExpiresMarkers: the example consumer's business table (the one its
// environment names) has DynamoDB's TTL on the fenced effect markers' expiry attribute,
// so markers of records no longer retained go (issue 22 item 2).
func TestBusinessTableExpiresMarkers(t *testing.T) {
	if deploy.BusinessTTLAttribute != dynamo.EffectTTLAttribute {
		t.Fatalf("the business table's TTL attribute %q is not the markers' %q", deploy.BusinessTTLAttribute, dynamo.EffectTTLAttribute)
	}
	_, cp := function(t, "Strata example order consumer (functions/consumer)")
	ref := tmpl.Join(cp["Environment"].(map[string]any)["Variables"].(map[string]any)[deploy.EnvBusinessTable])
	id := strings.TrimSuffix(strings.TrimPrefix(ref, "<Ref:"), ">")
	r, ok := tpl.Resources[id]
	if !ok || r.Type != "AWS::DynamoDB::Table" {
		t.Fatalf("the consumer's business table %s is not a table of the template", ref)
	}
	want := map[string]any{"AttributeName": deploy.BusinessTTLAttribute, "Enabled": true}
	if got := r.Properties["TimeToLiveSpecification"]; !jsonEqual(got, want) {
		t.Errorf("business table TimeToLiveSpecification = %s, want %s", js(got), js(want))
	}
}

// roleOf returns the role logical id of the function with description desc.
func roleOf(t *testing.T, desc string) string {
	t.Helper()
	_, p := function(t, desc)
	role, ok := tmpl.GetAtt(p["Role"], "Arn")
	if !ok {
		t.Fatalf("%s: role %v", desc, p["Role"])
	}
	return role
}

// TestStrataRoles: each of Strata's functions has its own role, which reaches exactly
// the tables and actions TableAccess lists for it, its own log group, and the bucket
// prefixes and other resources it uses — nothing else.
func TestStrataRoles(t *testing.T) {
	b := bucket(t)
	consumer, _ := function(t, "Strata example order consumer (functions/consumer)")
	retentionFn, _ := function(t, "Strata retention")
	compactFn, _ := function(t, "Strata compact")
	queue := tpl.OfType("AWS::SQS::Queue")[0]
	tableIDs := map[string]string{}
	for _, ts := range dynamo.Tables() {
		tableIDs[table(t, ts.Suffix)] = ts.Suffix
	}
	objects := "<GetAtt:" + b + ".Arn>/" + deploy.SegmentKeyPrefix + "*"
	bucketArn := "<GetAtt:" + b + ".Arn>"
	prefixOnly := map[string]any{"StringLike": map[string]any{"s3:prefix": []any{deploy.SegmentKeyPrefix + "*"}}}
	others := map[string][]string{ // "actions on resources [condition]" beyond tables and logs
		deploy.FunctionAPI: {
			// the dirty-ratio trigger asks the compaction function for a pass
			"lambda:InvokeFunction on <GetAtt:" + compactFn + ".Arn>",
			"s3:GetObject,s3:PutObject,s3:PutObjectTagging on " + objects,
			"s3:ListBucket on " + bucketArn + " " + js(prefixOnly),
		},
		deploy.FunctionDispatch: {
			"dynamodb:DescribeStream,dynamodb:GetRecords,dynamodb:GetShardIterator on <GetAtt:" + table(t, dynamo.SequencerTable) + ".StreamArn>",
			"dynamodb:ListStreams on *", // ListStreams has no resource-level permissions
			"lambda:InvokeFunction on <GetAtt:" + consumer + ".Arn>",
			"sqs:GetQueueAttributes,sqs:GetQueueUrl,sqs:SendMessage on <GetAtt:" + queue + ".Arn>",
			// the subscriptions other apps attach: the deployment's path only
			"ssm:GetParametersByPath on arn:<Ref:AWS::Partition>:ssm:<Ref:AWS::Region>:<Ref:AWS::AccountId>:parameter/strata/Strata-subscriptions",
			// the members table of a commit whose appender stopped (materialising)
			"s3:GetObject on " + objects,
			"s3:ListBucket on " + bucketArn + " " + js(prefixOnly),
		},
		deploy.FunctionRetention: {
			// the scheduled pass invokes the function itself once per topic (fan-out)
			"lambda:InvokeFunction on <GetAtt:" + retentionFn + ".Arn>",
			// retention's deletes (the compaction function compacts)
			"s3:DeleteObject on " + objects,
			"s3:ListBucket on " + bucketArn + " " + js(prefixOnly),
		},
		deploy.FunctionCompact: {
			// the scheduled pass invokes the function itself once per partition (fan-out)
			"lambda:InvokeFunction on <GetAtt:" + compactFn + ".Arn>",
			// the pass's reads, rewrites (tagged) and garbage markers, the retagging of a
			// topic altered to compact, and deletes of what they replaced
			"s3:DeleteObject,s3:GetObject,s3:PutObject,s3:PutObjectTagging on " + objects,
			"s3:ListBucket on " + bucketArn + " " + js(prefixOnly),
		},
	}
	roles := map[string]bool{}
	for name, access := range strata.TableAccess() {
		t.Run(name, func(t *testing.T) {
			role := roleOf(t, "Strata "+name)
			roles[role] = true
			sts, managed, err := tpl.RoleStatements(role)
			if err != nil {
				t.Fatal(err)
			}
			if len(managed) > 0 {
				t.Errorf("managed policies %v, want none", managed)
			}
			gotTables := map[string][]string{}
			var gotOthers []string
			logs := 0
			for _, st := range sts {
				if st.Effect != "Allow" {
					t.Errorf("statement %+v: want Allow only", st)
				}
				if len(st.Resources) == 1 {
					if id, ok := tmpl.GetAtt(st.Resources[0], "Arn"); ok {
						if suffix, isTable := tableIDs[id]; isTable {
							if st.Condition != nil {
								t.Errorf("table %s: condition %v", suffix, st.Condition)
							}
							gotTables[suffix] = append(gotTables[suffix], st.Actions...)
							continue
						}
						if tpl.Resources[id].Type == "AWS::Logs::LogGroup" && slices.Equal(st.Actions, []string{"logs:CreateLogStream", "logs:PutLogEvents"}) {
							_, fp := function(t, "Strata "+name)
							lg, _ := fp["LoggingConfig"].(map[string]any)
							if !jsonEqual(lg["LogGroup"], map[string]any{"Ref": id}) {
								t.Errorf("log statement on %s, which is not the function's log group", id)
							}
							logs++
							continue
						}
					}
				}
				acts := slices.Clone(st.Actions)
				sort.Strings(acts)
				var res []string
				for _, r := range st.Resources {
					res = append(res, tmpl.Join(r))
				}
				s := strings.Join(acts, ",") + " on " + strings.Join(res, ",")
				if st.Condition != nil {
					s += " " + js(st.Condition)
				}
				gotOthers = append(gotOthers, s)
			}
			if logs != 1 {
				t.Errorf("%d statements on the function's own log group, want 1", logs)
			}
			wantTables := map[string][]string{}
			for suffix, a := range access {
				wantTables[suffix] = accessActions(a)
			}
			for suffix := range gotTables {
				sort.Strings(gotTables[suffix])
			}
			if !reflect.DeepEqual(gotTables, wantTables) {
				t.Errorf("table rights:\n got %v\nwant %v", gotTables, wantTables)
			}
			sort.Strings(gotOthers)
			want := slices.Clone(others[name])
			sort.Strings(want)
			if !slices.Equal(gotOthers, want) {
				t.Errorf("other rights:\n got %q\nwant %q", gotOthers, want)
			}
		})
	}
	if len(roles) != 4 {
		t.Errorf("roles %v: want one per function", roles)
	}
}

func accessActions(a strata.Access) []string {
	var out []string
	if a.Read {
		out = append(out, "dynamodb:GetItem", "dynamodb:Query")
	}
	if a.Scan {
		out = append(out, "dynamodb:Scan")
	}
	if a.Write {
		out = append(out, "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
	}
	sort.Strings(out)
	return out
}

// TestConsumerRights: a user function subscribed through the construct gets exactly the
// rights the consumer library needs for its topic and group, confined to their rows.
func TestConsumerRights(t *testing.T) {
	b := bucket(t)
	role := roleOf(t, "Strata example order consumer (functions/consumer)")
	sts, managed, err := tpl.RoleStatements(role)
	if err != nil {
		t.Fatal(err)
	}
	if len(managed) > 0 {
		t.Errorf("managed policies %v", managed)
	}
	lead := func(keys ...string) string {
		l := make([]any, len(keys))
		for i, k := range keys {
			l[i] = k
		}
		return js(map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": l}})
	}
	tbl := func(suffix string) string { return "<GetAtt:" + table(t, suffix) + ".Arn>" }
	want := []string{
		"ConsumerTopic: dynamodb:GetItem on " + tbl(dynamo.TopicsTable) + " " + lead("orders", "order-consumer.parked"),
		"ConsumerSequencer: dynamodb:GetItem,dynamodb:Query on " + tbl(dynamo.SequencerTable) + " " + lead("orders#*"),
		"ConsumerIndex: dynamodb:GetItem,dynamodb:Query on " + tbl(dynamo.IndexTable) + " " + lead("orders#*"),
		"ConsumerPartitions: dynamodb:GetItem,dynamodb:Query on " + tbl(dynamo.PartitionsTable) + " " + lead("orders"),
		"ConsumerLeases: dynamodb:ConditionCheckItem,dynamodb:GetItem,dynamodb:Query,dynamodb:UpdateItem on " + tbl(dynamo.AssignmentsTable) + " " + lead("order-consumer#orders"),
		"ConsumerCommits: dynamodb:GetItem,dynamodb:Query,dynamodb:UpdateItem on " + tbl(dynamo.CommitsTable) + " " + lead("order-consumer#orders"),
		"ConsumerGroup: dynamodb:GetItem,dynamodb:PutItem on " + tbl(dynamo.GroupsTable) + " " + lead("order-consumer"),
		// the topic's segments, and the parking topic's for a released key's replay
		"ConsumerSegments: s3:GetObject on <GetAtt:" + b + ".Arn>/v1/orders/*,<GetAtt:" + b + ".Arn>/v1/order-consumer.parked/*",
		// Parking rights are granted whatever the group's settings say (they can change
		// at run time): the parked rows, and appends to <group>.parked.
		"ConsumerParked: dynamodb:DeleteItem,dynamodb:GetItem,dynamodb:Query,dynamodb:UpdateItem on " + tbl(dynamo.ParkedTable) + " " + lead("order-consumer#orders"),
		"ParkingIdempotency: dynamodb:GetItem,dynamodb:PutItem on " + tbl(dynamo.IdempotencyTable) + " " + lead("order-consumer.parked#*"),
		"ParkingIndex: dynamodb:GetItem,dynamodb:PutItem,dynamodb:Query on " + tbl(dynamo.IndexTable) + " " + lead("order-consumer.parked#*"),
		"ParkingSegments: s3:PutObject on <GetAtt:" + b + ".Arn>/v1/order-consumer.parked/* " + js(map[string]any{"Null": map[string]any{"s3:if-none-match": "false"}}),
		"ParkingSequencer: dynamodb:GetItem,dynamodb:PutItem,dynamodb:UpdateItem on " + tbl(dynamo.SequencerTable) + " " + lead("order-consumer.parked#*"),
	}
	var got []string
	for _, st := range sts {
		if st.Sid == "OwnLogs" || st.Sid == "BusinessTable" { // the user's own, not the construct's
			continue
		}
		acts := slices.Clone(st.Actions)
		sort.Strings(acts)
		var res []string
		for _, r := range st.Resources {
			res = append(res, tmpl.Join(r))
		}
		s := st.Sid + ": " + strings.Join(acts, ",") + " on " + strings.Join(res, ",")
		if st.Condition != nil {
			s += " " + js(st.Condition)
		}
		got = append(got, s)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("consumer rights:\n got %q\nwant %q", got, want)
	}
	for _, st := range sts {
		if slices.Contains(st.Actions, "dynamodb:Scan") {
			t.Errorf("%s grants Scan, which dynamodb:LeadingKeys cannot confine", st.Sid)
		}
	}
}

// TestNoWildcardActions: no Allow statement anywhere in the template has a wildcard
// action. (The bucket and queue policies deny s3:* and sqs:* without TLS: a Deny.)
func TestNoWildcardActions(t *testing.T) {
	all, err := tpl.AllStatements()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for id, sts := range all {
		for _, st := range sts {
			n++
			if st.Effect != "Allow" {
				continue
			}
			for _, a := range st.Actions {
				if strings.ContainsAny(a, "*?") {
					t.Errorf("%s: statement %q allows wildcard action %s", id, st.Sid, a)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no statements found")
	}
	for _, id := range tpl.OfType("AWS::IAM::Role") {
		if m := tpl.Resources[id].Properties["ManagedPolicyArns"]; m != nil {
			t.Errorf("role %s has managed policies %v", id, m)
		}
	}
}

func TestAlarmsAndDashboard(t *testing.T) {
	type alarm struct{ metric, stat, dims string }
	got := map[alarm]float64{}
	for _, id := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[id].Properties
		if ms, ok := p["Metrics"].([]any); ok { // a labelled metric: one MetricStat
			if len(ms) != 1 {
				t.Fatalf("alarm %s: %d metrics", id, len(ms))
			}
			stat := ms[0].(map[string]any)["MetricStat"].(map[string]any)
			m := stat["Metric"].(map[string]any)
			p = map[string]any{"Statistic": stat["Stat"], "Namespace": m["Namespace"], "MetricName": m["MetricName"],
				"Dimensions": m["Dimensions"], "Threshold": p["Threshold"],
				"TreatMissingData": p["TreatMissingData"], "ComparisonOperator": p["ComparisonOperator"]}
		}
		stat := fmt.Sprint(p["Statistic"])
		if p["ExtendedStatistic"] != nil {
			stat = fmt.Sprint(p["ExtendedStatistic"])
		}
		op := "GreaterThanOrEqualToThreshold"
		if p["MetricName"] == strata.MetricSecondsToDataLoss {
			op = "LessThanThreshold" // fires as the time left falls under the threshold
		}
		if p["TreatMissingData"] != "notBreaching" || p["ComparisonOperator"] != op {
			t.Errorf("alarm %s: %v %v, want notBreaching %s", id, p["TreatMissingData"], p["ComparisonOperator"], op)
		}
		var dims []string
		for _, d := range asList(p["Dimensions"]) {
			m := d.(map[string]any)
			dims = append(dims, fmt.Sprintf("%v=%s", m["Name"], tmpl.Join(m["Value"])))
		}
		sort.Strings(dims)
		got[alarm{fmt.Sprint(p["Namespace"]) + "/" + fmt.Sprint(p["MetricName"]), stat, strings.Join(dims, ",")}] = p["Threshold"].(float64)
	}
	fn := func(desc string) string { id, _ := function(t, desc); return "FunctionName=<Ref:" + id + ">" }
	queue := tpl.OfType("AWS::SQS::Queue")[0]
	qname := "QueueName=<GetAtt:" + queue + ".QueueName>"
	sub := "group=order-consumer,topic=orders"
	want := map[alarm]float64{
		{"Strata/" + strata.MetricLagSeconds, "Maximum", sub}:            300,
		{"Strata/" + strata.MetricDeadLettered, "Sum", sub}:              1,
		{"Strata/" + strata.MetricSecondsToDataLoss, "Minimum", sub}:     3600, // strata:dataLossAlarmMinutes default
		{"Strata/" + strata.MetricParkedKeys, "Maximum", sub}:            1,    // strata:parkedKeysAlarm default: any key parked
		{"AWS/Lambda/IteratorAge", "Maximum", fn("Strata dispatch")}:     300000,
		{"Strata/" + strata.MetricAppendLatency, "p99", ""}:              1,
		{"AWS/SQS/ApproximateNumberOfMessagesVisible", "Maximum", qname}: 1,
		// consumers a stream batch could not invoke (counted, not failing the batch)
		{"Strata/" + deploy.MetricDispatchInvokeErrors, "Sum", "trigger=stream"}: 1,
	}
	for _, d := range []string{"Strata api", "Strata dispatch", "Strata retention", "Strata compact", "Strata example order consumer (functions/consumer)"} {
		want[alarm{"AWS/Lambda/Errors", "Sum", fn(d)}] = 1
		want[alarm{"AWS/Lambda/Throttles", "Sum", fn(d)}] = 1
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("alarms:\n got %v\nwant %v", got, want)
	}
	tmpl.Check(t, "dashboard", func() {
		tpl.A.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1))
	})
	body := tmpl.Join(tpl.Resources[tpl.OfType("AWS::CloudWatch::Dashboard")[0]].Properties["DashboardBody"])
	for _, w := range []string{strata.MetricLagSeconds, strata.MetricDeadLettered, strata.MetricSecondsToDataLoss, strata.MetricParkedKeys, "IteratorAge", strata.MetricAppendLatency, "Errors", "Throttles", "p99"} {
		if !strings.Contains(body, w) {
			t.Errorf("dashboard lacks %s", w)
		}
	}
}

func TestFromContext(t *testing.T) {
	for _, tc := range []struct {
		ctx     map[string]any
		wantErr string
	}{
		{map[string]any{"strata:removal": "delete"}, "strata:removal"},
		{map[string]any{"strata:managedInstances": "yes"}, "strata:managedInstances"},
		{map[string]any{"strata:defaultPartitions": "many"}, "strata:defaultPartitions"},
		{map[string]any{"strata:apiMemory": -1}, "strata:apiMemory"},
		{map[string]any{"strata:defaultPartitions": 8, "strata:managedInstances": true, "strata:removal": "destroy"}, ""},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &tc.ctx})
		cfg, err := stack.FromContext(app.Node(), "/assets")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.ctx, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: error %v, want one naming %s", tc.ctx, err, tc.wantErr)
		case tc.wantErr == "":
			if cfg.Props.DefaultPartitions != 8 || cfg.Props.ManagedInstances == nil || cfg.Props.RemovalPolicy != awscdk.RemovalPolicy_DESTROY || cfg.Props.AssetDir != "/assets" {
				t.Errorf("%v: config %+v", tc.ctx, cfg.Props)
			}
		}
	}
}

// TestFromContextFrontDoorAndAppendTier (issue 20 items 3, 5): the front door and the
// group commit's window and budget come from context; 0 turns the window off.
func TestFromContextFrontDoorAndAppendTier(t *testing.T) {
	for _, tc := range []struct {
		ctx    map[string]any
		door   strata.FrontDoor
		window time.Duration
		budget int
	}{
		{map[string]any{}, strata.FrontDoorAPIGateway, 0, 0},
		{map[string]any{"strata:frontDoor": "function-url", "strata:groupCommitWindowMs": 250, "strata:groupCommitBudgetBytes": 16777216},
			strata.FrontDoorFunctionURL, 250 * time.Millisecond, 16 << 20},
		{map[string]any{"strata:frontDoor": "both", "strata:groupCommitWindowMs": "0"}, strata.FrontDoorBoth, -1, 0},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &tc.ctx})
		cfg, err := stack.FromContext(app.Node(), "/assets")
		if err != nil {
			t.Fatalf("%v: %v", tc.ctx, err)
		}
		p := cfg.Props
		if p.FrontDoor != tc.door || p.GroupCommitWindow != tc.window || p.GroupCommitBudget != tc.budget {
			t.Errorf("%v: front door %q, window %v, budget %d; want %q, %v, %d", tc.ctx, p.FrontDoor, p.GroupCommitWindow, p.GroupCommitBudget, tc.door, tc.window, tc.budget)
		}
	}
}

// TestFromContextAuthorization: the deployed stack can be given the api's grants or made
// every-principal-admin from context, so a fresh deployment can create its first topic.
func TestFromContextAuthorization(t *testing.T) {
	const grants = `[{"principal":"arn:aws:sts::123456789012:assumed-role/admin/*","name":"admin","allow":[{"resource":"topic:*","ops":["create"]}]}]`
	for _, tc := range []struct {
		ctx       map[string]any
		grants    string
		admin     bool
		wantError bool
	}{
		{map[string]any{}, "", false, false},
		{map[string]any{"strata:apiGrants": grants}, grants, false, false},
		{map[string]any{"strata:apiGrants": []any{map[string]any{"principal": "p", "name": "n", "allow": []any{}}}},
			`[{"allow":[],"name":"n","principal":"p"}]`, false, false},
		{map[string]any{"strata:everyPrincipalAdmin": "true"}, "", true, false},
		{map[string]any{"strata:everyPrincipalAdmin": true}, "", true, false},
		{map[string]any{"strata:everyPrincipalAdmin": "yes"}, "", false, true},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &tc.ctx})
		cfg, err := stack.FromContext(app.Node(), "/assets")
		if (err != nil) != tc.wantError || (err == nil && (cfg.Props.APIGrants != tc.grants || cfg.Props.EveryPrincipalAdmin != tc.admin)) {
			t.Errorf("%v: grants %q admin %v err %v", tc.ctx, cfg.Props.APIGrants, cfg.Props.EveryPrincipalAdmin, err)
		}
	}
}

// TestContextKeysDocumented: every setting the app reads is in infra/README.md.
func TestContextKeysDocumented(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for k := range stack.ContextKeys() {
		if !strings.Contains(string(readme), "`"+k+"`") {
			t.Errorf("context key %s is not in infra/README.md", k)
		}
	}
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonEqual compares after a JSON round trip, so 100 equals float64(100).
func jsonEqual(a, b any) bool {
	var x, y any
	_ = json.Unmarshal([]byte(js(a)), &x)
	_ = json.Unmarshal([]byte(js(b)), &y)
	return reflect.DeepEqual(x, y)
}

// TestExportsForAttach: the stack exports, under its name, every attribute
// strata.ImportAttributes imports, with the deployment's values.
func TestExportsForAttach(t *testing.T) {
	got := map[string]string{}
	for _, o := range tpl.Outputs {
		if o.Export != nil {
			got[o.Export.Name] = tmpl.Join(o.Value)
		}
	}
	for _, name := range strata.ExportNames("Strata") {
		if _, ok := got[name]; !ok {
			t.Errorf("no export %s (have %v)", name, got)
		}
	}
	if got["Strata:TablePrefix"] != "Strata-" || got["Strata:SubscriptionsPath"] != "/strata/Strata-subscriptions" ||
		!strings.HasPrefix(got["Strata:DispatchRoleArn"], "<GetAtt:StrataFndispatchRole") {
		t.Errorf("exports %v", got)
	}
}

// TestEveryStrataVariableIsRead: every STRATA_* variable the synthesized stack sets on
// any function is a field of deploy.Settings, the one definition pkg/node parses (its
// tests check that node.FromEnv reads every field and that each one changes the node's
// configuration). A variable the stack writes and no code reads fails here.
func TestEveryStrataVariableIsRead(t *testing.T) {
	read := map[string]bool{}
	for _, name := range deploy.SettingNames() {
		read[name] = true
	}
	functions := tpl.OfType("AWS::Lambda::Function")
	seen := 0
	for _, id := range functions {
		env, _ := tpl.Resources[id].Properties["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for name := range vars {
			if !strings.HasPrefix(name, "STRATA_") {
				continue
			}
			seen++
			if !read[name] {
				t.Errorf("function %s: the stack sets %s, which no code reads (not a field of deploy.Settings)", id, name)
			}
		}
	}
	if len(functions) == 0 || seen == 0 {
		t.Fatalf("%d functions, %d STRATA_* variables: the template was not read", len(functions), seen)
	}
}

// TestFromContextDataLossAlarms: the time to data loss and stream iterator age alarm
// thresholds are stack context settings (the synthesized defaults: TestAlarmsAndDashboard).
func TestFromContextDataLossAlarms(t *testing.T) {
	ctx := map[string]any{"strata:dataLossAlarmMinutes": 30, "strata:iteratorAgeAlarmSeconds": "60", "strata:parkedKeysAlarm": 5}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	cfg, err := stack.FromContext(app.Node(), "/assets")
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Props.Alarms; a.TimeToDataLoss != 30*time.Minute || a.StreamIteratorAge != time.Minute || a.ParkedKeys != 5 {
		t.Fatalf("alarms %+v: want time to data loss 30m, iterator age 1m, parked keys 5", a)
	}
}

// TestConsumerBatchingWindowFromContext (issue 20): strata:consumerBatchingWindowSeconds
// is the stream mapping's MaximumBatchingWindowInSeconds in the synthesized template
// (the default 0: TestStreamMapping); a value Lambda does not take is refused.
func TestConsumerBatchingWindowFromContext(t *testing.T) {
	dir, err := assets.Placeholders()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, tc := range []struct {
		window any
		want   float64
		bad    bool
	}{{1, 1, false}, {"30", 30, false}, {301, 0, true}, {0.5, 0, true}} {
		_, tp, err := synthContext(t, dir, map[string]any{"strata:consumerBatchingWindowSeconds": tc.window})
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "ConsumerBatchingWindow") {
				t.Errorf("window %v: %v, want an error naming ConsumerBatchingWindow", tc.window, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("window %v: %v", tc.window, err)
		}
		ids := tp.OfType("AWS::Lambda::EventSourceMapping")
		if len(ids) != 1 {
			t.Fatalf("event source mappings %v, want one", ids)
		}
		if got := tp.Resources[ids[0]].Properties["MaximumBatchingWindowInSeconds"]; !jsonEqual(got, tc.want) {
			t.Errorf("window %v: MaximumBatchingWindowInSeconds = %s, want %v", tc.window, js(got), tc.want)
		}
	}
}

// TestManagedInstancesSizedFromRequestRate: on managed instances the api function's
// execution environments are sized from strata:expectedRequestsPerSecond (default
// 1,000: the 1,000-producer cell) — twice the invocations in flight, each held the
// group commit window plus deploy.APIInvocationBound, over 32 per environment — and
// the capacity provider's vCPUs fit them. The README's configuration (500 ms window)
// at the default rate: 1,000 × 0.6 s = 600 in flight, 38 environments, where the
// fixed 4 × 32 = 128 refused or queued most of them. A burst of aligned producers'
// requests (strata:expectedBurstRequests) is all in flight at once.
func TestManagedInstancesSizedFromRequestRate(t *testing.T) {
	dir, err := assets.Placeholders()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, tc := range []struct {
		ctx            map[string]any
		envs, vcpus    float64
		inFlightAtRate float64
	}{
		{map[string]any{"strata:groupCommitWindowMs": 500}, 38, 38, 600},
		{map[string]any{"strata:groupCommitWindowMs": 250, "strata:expectedRequestsPerSecond": 100}, 4, 16, 35},
		{map[string]any{"strata:groupCommitWindowMs": 250, "strata:expectedRequestsPerSecond": "5000"}, 110, 110, 1750},
		// 100 producers aligned to the clock in one slot: their 100 requests a second
		// arrive at once, all in flight together (2 × 100 / 32 → 7 environments), where
		// the rate alone has 13 in flight.
		{map[string]any{"strata:groupCommitWindowMs": 30, "strata:expectedRequestsPerSecond": 100, "strata:expectedBurstRequests": 100}, 7, 16, 13},
	} {
		tc.ctx["strata:managedInstances"] = true
		cfg, tp, err := synthContext(t, dir, tc.ctx)
		if err != nil {
			t.Fatalf("%v: %v", tc.ctx, err)
		}
		_, api, err := tp.Find("AWS::Lambda::Function", "Description", "Strata api")
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := api.Properties["FunctionScalingConfig"].(map[string]any)
		cp := tp.Resources[tp.OfType("AWS::Lambda::CapacityProvider")[0]].Properties
		scaling, _ := cp["CapacityProviderScalingConfig"].(map[string]any)
		if sc["MaxExecutionEnvironments"] != tc.envs || scaling["MaxVCpuCount"] != tc.vcpus {
			t.Errorf("%v: function scaling %v, provider scaling %v; want %v environments, %v vCPUs", tc.ctx, sc, scaling, tc.envs, tc.vcpus)
		}
		rate := cfg.Props.ManagedInstances.ExpectedRequestsPerSecond
		inFlight := deploy.APIInFlight(rate, cfg.Props.GroupCommitWindow)
		if math.Abs(inFlight-tc.inFlightAtRate) > 1e-6 || tc.envs*32 < inFlight {
			t.Errorf("%v: %v in flight at %v requests/s, want %v within %v × 32", tc.ctx, inFlight, rate, tc.inFlightAtRate, tc.envs)
		}
	}
}

// synthContext synthesizes the stack from context ctx with the placeholder assets in dir:
// its configuration and template, or the error of reading or building it.
func synthContext(t *testing.T, dir string, ctx map[string]any) (stack.Config, *tmpl.Template, error) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	cfg, err := stack.FromContext(app.Node(), dir)
	if err != nil {
		return cfg, nil, err
	}
	st, err := stack.New(app, cfg)
	if err != nil {
		return cfg, nil, err
	}
	tp, err := tmpl.New(assertions.Template_FromStack(st.Stack, nil))
	return cfg, tp, err
}

// TestSystemLogLevelOnEveryFunction: every function of the template carries the
// stack's system log level (WARN unless strata:systemLogLevel says otherwise), in the
// JSON log format the level needs; a level Lambda does not accept is refused at synth.
func TestSystemLogLevelOnEveryFunction(t *testing.T) {
	dir, err := assets.Placeholders()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	check := func(name string, tp *tmpl.Template, want string) {
		t.Helper()
		fns := tp.OfType("AWS::Lambda::Function")
		if len(fns) == 0 {
			t.Fatalf("%s: no functions in the template", name)
		}
		for _, id := range fns {
			lc, _ := tp.Resources[id].Properties["LoggingConfig"].(map[string]any)
			if lc["SystemLogLevel"] != want || lc["LogFormat"] != "JSON" {
				t.Errorf("%s: function %s logging config %v, want SystemLogLevel %s in the JSON format", name, id, lc, want)
			}
		}
	}
	check("default", tpl, "WARN")
	for _, level := range []string{"INFO", "DEBUG", "WARN"} {
		ctx := map[string]any{"strata:systemLogLevel": level, "strata:managedInstances": true}
		_, tp, err := synthContext(t, dir, ctx)
		if err != nil {
			t.Fatalf("%v: %v", ctx, err)
		}
		check(level, tp, level)
	}
	if _, _, err := synthContext(t, dir, map[string]any{"strata:systemLogLevel": "ERROR"}); err == nil || !strings.Contains(err.Error(), "SystemLogLevel") {
		t.Errorf("strata:systemLogLevel ERROR: error %v, want one naming SystemLogLevel", err)
	}
}
