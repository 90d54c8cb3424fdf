package strata_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/internal/assets"
	"github.com/stratalog/strata/infra/internal/tmpl"
	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// One synthesis of a construct with every option a user may set (managed instances, a
// dead-letter topic, produce and consume grants), shared by the tests; the default
// deployment is tested through the app's stack in infra/stack.
var (
	tpl      *tmpl.Template
	setupErr []string // errors the construct returned for bad input, by case
	dir      string
)

func TestMain(m *testing.M) {
	var err error
	if dir, err = assets.Placeholders(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = synth()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
	} else {
		code = m.Run()
	}
	jsii.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func synth() error {
	out, err := os.MkdirTemp("", "strata-cdk-out-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	st := awscdk.NewStack(app, jsii.String("T"), nil)
	s, err := strata.New(st, "Log", strata.Props{
		AssetDir:     dir,
		TablePrefix:  "t-",
		APIGrants:    `{"arn:aws:iam::123456789012:role/billing-*":[{"resource":"topic:orders","ops":["read"]}]}`,
		ObjectPrefix: "p/",
		FrontDoor:    strata.FrontDoorBoth,
		// The append tier's wide window and budget (issue 20 item 5).
		GroupCommitWindow: 250 * time.Millisecond,
		GroupCommitBudget: 16 << 20,
		ManagedInstances: &strata.ManagedInstances{
			TargetCPUUtilization: 60, PerEnvironmentMaxConcurrency: 64, MaxVCPUs: 32, MinEnvironments: 2, MaxEnvironments: 8,
		},
	})
	if err != nil {
		return err
	}
	userRole := awsiam.NewRole(st, jsii.String("UserRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	fn := awslambda.NewFunction(st, jsii.String("UserFn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"), Role: userRole,
		Code: awslambda.Code_FromAsset(jsii.String(dir+"/"+deploy.FunctionConsumer), nil),
	})
	if err := s.Subscribe(fn, "payments", "ledger", &strata.SubscribeOptions{DeadLetterTopic: "payments-dlq"}); err != nil {
		return err
	}
	// Bad input: each is an error and changes nothing.
	imported := awslambda.Function_FromFunctionArn(st, jsii.String("Imported"),
		jsii.String("arn:aws:lambda:us-east-1:123456789012:function:other"))
	for _, bad := range []func() error{
		func() error { return s.Subscribe(fn, "payments", "ledger", nil) },
		func() error { return s.Subscribe(fn, "bad topic", "ledger", nil) },
		func() error { return s.Subscribe(fn, "payments", "", nil) },
		func() error {
			return s.Subscribe(fn, "refunds", "ledger", &strata.SubscribeOptions{DeadLetterTopic: "../x"})
		},
		func() error { return s.Subscribe(imported, "refunds", "ledger", nil) },
		func() error { _, err := s.GrantProduce(userRole); return err },
		func() error { _, err := s.GrantProduce(userRole, "a/b"); return err },
		func() error { _, err := s.GrantConsume(userRole, "g*", "orders"); return err },
		func() error {
			_, err := strata.New(st, "Bad", strata.Props{AssetDir: dir, DefaultPartitions: 2000})
			return err
		},
	} {
		if err := bad(); err != nil {
			setupErr = append(setupErr, err.Error())
		} else {
			setupErr = append(setupErr, "")
		}
	}
	producer := awsiam.NewRole(st, jsii.String("Producer"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewAccountPrincipal(jsii.String("123456789012")),
	})
	if _, err := s.GrantProduce(producer, "orders", "payments"); err != nil {
		return err
	}
	consumer := awsiam.NewRole(st, jsii.String("Consumer"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewAccountPrincipal(jsii.String("123456789012")),
	})
	if _, err := s.GrantConsume(consumer, "billing", "orders"); err != nil {
		return err
	}
	if tpl, err = tmpl.New(assertions.Template_FromStack(st, nil)); err != nil {
		return err
	}
	return tpl.Export("construct-all-options")
}

func TestBadInputIsAnError(t *testing.T) {
	want := []string{
		"already subscribed", "topic", "group", "dead-letter", "no role",
		"no topic", "not a valid name", "not a valid name", "DefaultPartitions",
	}
	if len(setupErr) != len(want) {
		t.Fatalf("errors %q", setupErr)
	}
	for i, w := range want {
		if !strings.Contains(setupErr[i], w) {
			t.Errorf("case %d: error %q, want one mentioning %q", i, setupErr[i], w)
		}
	}
	// Nothing of the refused calls reached the template: one deployment, one
	// subscription, the dispatch function's environment lists only it.
	if n := len(tpl.OfType("AWS::S3::Bucket")); n != 1 {
		t.Errorf("%d buckets: the refused New added resources", n)
	}
	_, dp, err := tpl.Find("AWS::Lambda::Function", "Description", "Strata dispatch")
	if err != nil {
		t.Fatal(err)
	}
	subs, err := deploy.ParseSubscriptions(tmpl.Join(dp.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)[deploy.EnvSubscriptions]))
	if err != nil || len(subs) != 1 || subs[0].Topic != "payments" || subs[0].Group != "ledger" {
		t.Errorf("subscriptions %v, %v", subs, err)
	}
}

func TestPropsValidation(t *testing.T) {
	// strata.New validates before it creates anything, so no scope is needed.
	for _, tc := range []struct {
		name string
		p    strata.Props
		want string
	}{
		{"no assets", strata.Props{}, "AssetDir"},
		{"partitions", strata.Props{AssetDir: "x", DefaultPartitions: -1}, "DefaultPartitions"},
		{"retention above max", strata.Props{AssetDir: "x", DefaultRetention: 10 * 24 * time.Hour}, "exceeds MaxRetention"},
		{"sweep below a minute", strata.Props{AssetDir: "x", SweepInterval: time.Second}, "SweepInterval"},
		{"sweep not whole minutes", strata.Props{AssetDir: "x", SweepInterval: 90 * time.Second}, "whole number of minutes"},
		{"record age", strata.Props{AssetDir: "x", StreamMaxRecordAge: 8 * 24 * time.Hour}, "StreamMaxRecordAge"},
		{"memory", strata.Props{AssetDir: "x", APIMemoryMiB: 64}, "APIMemoryMiB"},
		{"negative threshold", strata.Props{AssetDir: "x", Alarms: strata.AlarmThresholds{LagSeconds: -1}}, "negative"},
		{"instance memory", strata.Props{AssetDir: "x", ManagedInstances: &strata.ManagedInstances{MemoryGiBPerVCPU: 1}}, "MemoryGiBPerVCPU"},
		{"environments", strata.Props{AssetDir: "x", ManagedInstances: &strata.ManagedInstances{MinEnvironments: 5, MaxEnvironments: 2}}, "MinEnvironments"},
		{"grants", strata.Props{AssetDir: "x", APIGrants: "{"}, "APIGrants"},
		{"grants and every principal an admin", strata.Props{AssetDir: "x", APIGrants: "[]", EveryPrincipalAdmin: true}, "exclude each other"},
		{"table prefix", strata.Props{AssetDir: "x", TablePrefix: "a b"}, "TablePrefix"},
		{"object prefix", strata.Props{AssetDir: "x", ObjectPrefix: "a*"}, "ObjectPrefix"},
		{"cpu target", strata.Props{AssetDir: "x", ManagedInstances: &strata.ManagedInstances{TargetCPUUtilization: 120}}, "TargetCPUUtilization"},
		{"front door", strata.Props{AssetDir: "x", FrontDoor: "cloudfront"}, "FrontDoor"},
		{"function URL grant without an account", strata.Props{AssetDir: "x", FrontDoor: strata.FrontDoorFunctionURL,
			APIGrants: `{"arn:aws:iam::*:role/x":[{"resource":"topic:*","ops":["read"]}]}`}, "12-digit account"},
		{"group commit budget", strata.Props{AssetDir: "x", GroupCommitBudget: -1}, "GroupCommitBudget"},
		{"group commit budget above the log's", strata.Props{AssetDir: "x", GroupCommitBudget: 64<<20 + 1}, "GroupCommitBudget"},
		{"group commit window above a second", strata.Props{AssetDir: "x", GroupCommitWindow: 2 * time.Second}, "GroupCommitWindow"},
		{"consumer batching window above Lambda's 300 s", strata.Props{AssetDir: "x", ConsumerBatchingWindow: 301 * time.Second}, "ConsumerBatchingWindow"},
		{"consumer batching window not whole seconds", strata.Props{AssetDir: "x", ConsumerBatchingWindow: 1500 * time.Millisecond}, "ConsumerBatchingWindow"},
		{"negative consumer batching window", strata.Props{AssetDir: "x", ConsumerBatchingWindow: -time.Second}, "ConsumerBatchingWindow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := strata.New(nil, "X", tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %s", err, tc.want)
			}
		})
	}
}

// TestAPIAuthorizationDefaultDeny (issue 19, item 7): the synthesized api function,
// without APIGrants, is configured to refuse every call (neither STRATA_GRANTS nor
// STRATA_EVERY_PRINCIPAL_ADMIN, which deploy.APIAuthorization reads as deny-all); with
// Props.EveryPrincipalAdmin it gets the explicit opt-out.
func TestAPIAuthorizationDefaultDeny(t *testing.T) {
	for _, tc := range []struct {
		name       string
		props      strata.Props
		everyAdmin bool
	}{
		{"Default", strata.Props{AssetDir: dir}, false},
		{"Open", strata.Props{AssetDir: dir, EveryPrincipalAdmin: true}, true},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		st := awscdk.NewStack(app, jsii.String(tc.name), nil)
		if _, err := strata.New(st, "Log", tc.props); err != nil {
			t.Fatal(err)
		}
		tp, err := tmpl.New(assertions.Template_FromStack(st, nil))
		if err != nil {
			t.Fatal(err)
		}
		_, api, err := tp.Find("AWS::Lambda::Function", "Description", "Strata api")
		if err != nil {
			t.Fatal(err)
		}
		env := api.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		getenv := func(k string) string { v, _ := env[k].(string); return v }
		grants, everyAdmin, err := deploy.APIAuthorization(getenv)
		if err != nil || len(grants) != 0 || everyAdmin != tc.everyAdmin {
			t.Errorf("%s: the api function reads grants %v, every principal an admin %v (%v), want none and %v; env %v",
				tc.name, grants, everyAdmin, err, tc.everyAdmin, env)
		}
	}
}

func TestTablePrefixAndObjectPrefix(t *testing.T) {
	for _, ts := range dynamo.Tables() {
		if _, _, err := tpl.Find("AWS::DynamoDB::Table", "TableName", "t-"+ts.Suffix); err != nil {
			t.Error(err)
		}
	}
	_, api, err := tpl.Find("AWS::Lambda::Function", "Description", "Strata api")
	if err != nil {
		t.Fatal(err)
	}
	env := api.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	if env[deploy.EnvTablePrefix] != "t-" || env[deploy.EnvObjectPrefix] != "p/" || !strings.Contains(fmt.Sprint(env[deploy.EnvGrants]), "billing-*") {
		t.Errorf("api environment %v", env)
	}
	_, b, _ := tpl.Find("AWS::S3::Bucket", "OwnershipControls", map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}})
	rules, _ := json.Marshal(b.Properties["LifecycleConfiguration"])
	if !strings.Contains(string(rules), `"Prefix":"p/v1/"`) {
		t.Errorf("lifecycle %s: want the backstop on p/v1/", rules)
	}
}

// TestBackstopRuleTakesOnlyTaggedObjects: the synthesized retention-backstop rule
// expires objects under the segment prefix that carry the expiry tag of topics deleting
// by time, and nothing else (CloudFormation's Prefix and TagFilters are S3's And
// filter), so a compact-only topic's untagged objects are never the backstop's.
func TestBackstopRuleTakesOnlyTaggedObjects(t *testing.T) {
	_, b, err := tpl.Find("AWS::S3::Bucket", "OwnershipControls", map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(b.Properties["LifecycleConfiguration"])
	var lc struct {
		Rules []map[string]any
	}
	if err := json.Unmarshal(raw, &lc); err != nil {
		t.Fatal(err)
	}
	var found int
	for _, r := range lc.Rules {
		if r["ExpirationInDays"] == nil {
			continue
		}
		found++
		want := map[string]any{"Id": "retention-backstop", "Prefix": "p/" + deploy.SegmentKeyPrefix, "ExpirationInDays": float64(8), "Status": "Enabled",
			"TagFilters": []any{map[string]any{"Key": store.ExpiryTagKey, "Value": store.ExpiryTagValue}}}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("expiring rule %v, want %v", r, want)
		}
	}
	if found != 1 {
		t.Errorf("%d rules expire objects, want the backstop alone: %s", found, raw)
	}
}

func TestManagedInstances(t *testing.T) {
	cps := tpl.OfType("AWS::Lambda::CapacityProvider")
	if len(cps) != 1 {
		t.Fatalf("capacity providers %v", cps)
	}
	cp := tpl.Resources[cps[0]].Properties
	if got, _ := json.Marshal(cp["CapacityProviderScalingConfig"]); !strings.Contains(string(got), `"MaxVCpuCount":32`) ||
		!strings.Contains(string(got), `"ScalingMode":"Manual"`) || !strings.Contains(string(got), `60`) {
		t.Errorf("scaling %s", got)
	}
	if got, _ := json.Marshal(cp["InstanceRequirements"]); string(got) != `{"Architectures":["arm64"]}` {
		t.Errorf("instance requirements %s", got)
	}
	_, api, err := tpl.Find("AWS::Lambda::Function", "Description", "Strata api")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(api.Properties["CapacityProviderConfig"])
	for _, w := range []string{cps[0], `"PerExecutionEnvironmentMaxConcurrency":64`, `"ExecutionEnvironmentMemoryGiBPerVCpu":2`} {
		if !strings.Contains(string(cfg), w) {
			t.Errorf("api capacity provider config %s lacks %s", cfg, w)
		}
	}
	if got, _ := json.Marshal(api.Properties["FunctionScalingConfig"]); string(got) != `{"MaxExecutionEnvironments":8,"MinExecutionEnvironments":2}` {
		t.Errorf("function scaling %s", got)
	}
	if api.Properties["MemorySize"] != float64(2048) {
		t.Errorf("api memory %v, want 2048 on managed instances", api.Properties["MemorySize"])
	}
	// Only the api moves: dispatch and retention stay on demand.
	for _, d := range []string{"Strata dispatch", "Strata retention"} {
		_, r, _ := tpl.Find("AWS::Lambda::Function", "Description", d)
		if r.Properties["CapacityProviderConfig"] != nil {
			t.Errorf("%s on the capacity provider", d)
		}
	}
	// A VPC of isolated subnets with gateway endpoints for S3 and DynamoDB and an
	// interface endpoint for CloudWatch Logs; no NAT.
	var endpoints []string
	for _, id := range tpl.OfType("AWS::EC2::VPCEndpoint") {
		p := tpl.Resources[id].Properties
		name := tmpl.Join(p["ServiceName"])
		endpoints = append(endpoints, fmt.Sprintf("%s %v", name[strings.LastIndex(name, ".")+1:], p["VpcEndpointType"]))
	}
	sort.Strings(endpoints)
	if want := []string{"dynamodb Gateway", "logs Interface", "s3 Gateway"}; !slices.Equal(endpoints, want) {
		t.Errorf("endpoints %v, want %v", endpoints, want)
	}
	tmpl.Check(t, "vpc", func() {
		tpl.A.ResourceCountIs(jsii.String("AWS::EC2::VPC"), jsii.Number(1))
		tpl.A.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(0))
		tpl.A.ResourceCountIs(jsii.String("AWS::EC2::InternetGateway"), jsii.Number(0))
	})
}

// roleStatements returns the statements of the role of tp whose logical id starts with
// prefix (roleOf).
func roleStatements(t *testing.T, tp *tmpl.Template, prefix string) []tmpl.Statement {
	t.Helper()
	sts, _, err := tp.RoleStatements(roleOf(t, tp, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return sts
}

// routeArns returns, for the role with logical id prefix, the execute-api routes it may
// invoke as "METHOD /path", and fails on any other statement.
func routeArns(t *testing.T, role string) []string {
	t.Helper()
	sts := roleStatements(t, tpl, role)
	var out []string
	for _, st := range sts {
		if slices.Equal(st.Actions, []string{"lambda:InvokeFunctionUrl"}) || slices.Equal(st.Actions, []string{"lambda:InvokeFunction"}) {
			continue // the function URL's grants (TestFunctionURL)
		}
		if !slices.Equal(st.Actions, []string{"execute-api:Invoke"}) {
			t.Errorf("%s: statement %v", role, st.Actions)
			continue
		}
		for _, r := range st.Resources {
			arn := tmpl.Join(r)
			// arn:<partition>:execute-api:<region>:<account>:<api id>/<stage>/<METHOD>/<path>
			i := strings.Index(arn, "/*/")
			if i < 0 {
				t.Errorf("arn %s: want every stage", arn)
				continue
			}
			rest := arn[i+3:]
			j := strings.Index(rest, "/")
			out = append(out, rest[:j]+" "+rest[j:])
		}
	}
	sort.Strings(out)
	return out
}

func TestGrantProduce(t *testing.T) {
	want := []string{
		"GET /v1/topics/orders", "GET /v1/topics/payments",
		"POST /v1/topics/orders/records", "POST /v1/topics/payments/records",
	}
	if got := routeArns(t, "Producer"); !slices.Equal(got, want) {
		t.Errorf("produce routes:\n got %q\nwant %q", got, want)
	}
}

// TestGrantConsume: every route a group member over HTTP calls (pkg/httpconsumer): its
// topic's describe and polls, leases and commits, the member routes (heartbeat, leave),
// the member side of parking (the partitions' parked rows, the group's parking topic's
// appends, describe and polls for a replay), the group's describe and settings; and no
// other (no reset, no listing or releasing of parked keys, no other topic or group).
func TestGrantConsume(t *testing.T) {
	want := []string{
		"DELETE /v1/groups/billing/members",
		"DELETE /v1/groups/billing/topics/orders/partitions/*/lease",
		"GET /v1/groups/billing",
		"GET /v1/groups/billing/settings",
		"GET /v1/groups/billing/topics/orders/partitions/*/parked",
		"GET /v1/topics/billing.parked",
		"GET /v1/topics/billing.parked/partitions/*/records",
		"GET /v1/topics/orders",
		"GET /v1/topics/orders/partitions/*/records",
		"POST /v1/groups/billing/topics/orders/heartbeat",
		"POST /v1/groups/billing/topics/orders/partitions/*/commit",
		"POST /v1/groups/billing/topics/orders/partitions/*/lease",
		"POST /v1/groups/billing/topics/orders/partitions/*/parked/unpark",
		"POST /v1/topics/billing.parked/records",
		"PUT /v1/groups/billing/topics/orders/partitions/*/parked",
	}
	if got := routeArns(t, "Consumer"); !slices.Equal(got, want) {
		t.Errorf("consume routes:\n got %q\nwant %q", got, want)
	}
}

// TestDeadLetterRights: a subscription with a dead-letter topic may append to it (and
// only to it) on top of the consumer rights.
func TestDeadLetterRights(t *testing.T) {
	sts := roleStatements(t, tpl, "UserRole")
	got := map[string]string{}
	for _, st := range sts {
		var res []string
		for _, r := range st.Resources {
			res = append(res, tmpl.Join(r))
		}
		c, _ := json.Marshal(st.Condition)
		got[st.Sid] = strings.Join(st.Actions, ",") + " " + strings.Join(res, ",") + " " + string(c)
	}
	for sid, want := range map[string][]string{
		// and a released key's replay reads its parking topic's objects back
		"ConsumerSegments":    {"s3:GetObject", "/p/v1/payments/*", "/p/v1/ledger.parked/*"},
		"ConsumerLeases":      {`"ledger#payments"`},
		"DeadLetterTopic":     {"dynamodb:GetItem ", `"payments-dlq"`},
		"DeadLetterSequencer": {"dynamodb:PutItem", `"payments-dlq#*"`},
		"DeadLetterIndex":     {"dynamodb:PutItem", `"payments-dlq#*"`},
		"DeadLetterSegments":  {"s3:PutObject", "/p/v1/payments-dlq/*"},
		"ConsumerParked":      {"dynamodb:DeleteItem", `"ledger#payments"`},
		"ParkingSegments":     {"s3:PutObject", "/p/v1/ledger.parked/*"},
	} {
		for _, w := range want {
			if !strings.Contains(got[sid], w) {
				t.Errorf("%s = %q, want it to contain %q", sid, got[sid], w)
			}
		}
	}
	if len(got) != 18 {
		t.Errorf("%d statements %v, want 9 consumer, 4 parking and 5 dead-letter", len(got), got)
	}
}

// TestDeadLetterGrantIsWhatAnAppendCalls (issue 19, item 6): the dead-letter statements
// grant exactly the calls an append makes on S3 and DynamoDB — no DeleteItem, no
// ConditionCheckItem, and segment puts only with If-None-Match (never an overwrite).
func TestDeadLetterGrantIsWhatAnAppendCalls(t *testing.T) {
	sts := roleStatements(t, tpl, "UserRole")
	want := map[string]string{
		"DeadLetterTopic":       "dynamodb:GetItem",
		"DeadLetterSequencer":   "dynamodb:GetItem dynamodb:PutItem dynamodb:UpdateItem",
		"DeadLetterIndex":       "dynamodb:GetItem dynamodb:PutItem dynamodb:Query",
		"DeadLetterIdempotency": "dynamodb:GetItem dynamodb:PutItem",
		"DeadLetterSegments":    "s3:PutObject",
	}
	seen := 0
	for _, st := range sts {
		w, ok := want[st.Sid]
		if !ok {
			continue
		}
		seen++
		acts := slices.Clone(st.Actions)
		sort.Strings(acts)
		if got := strings.Join(acts, " "); got != w {
			t.Errorf("%s allows %q, want exactly %q", st.Sid, got, w)
		}
		if st.Sid == "DeadLetterSegments" {
			c, _ := json.Marshal(st.Condition)
			if string(c) != `{"Null":{"s3:if-none-match":"false"}}` {
				t.Errorf("DeadLetterSegments condition %s, want PutObject only with If-None-Match", c)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d dead-letter statements, want %d", seen, len(want))
	}
}

// TestFunctionURL (issue 20 item 3): with FrontDoorBoth the api function gets a URL
// with IAM authorization beside the HTTP API; the account of the grants' principal
// pattern may invoke it through its resource policy (lambda:InvokeFunctionUrl for
// AWS_IAM, and lambda:InvokeFunction via the URL only, which AWS requires beside it);
// GrantProduce and GrantConsume give their principals both actions on the function,
// under the same conditions.
func TestFunctionURL(t *testing.T) {
	apiFn, _, err := tpl.Find("AWS::Lambda::Function", "Description", "Strata api")
	if err != nil {
		t.Fatal(err)
	}
	urls := tpl.OfType("AWS::Lambda::Url")
	if len(urls) != 1 {
		t.Fatalf("function URLs %v, want one", urls)
	}
	up := tpl.Resources[urls[0]].Properties
	if up["AuthType"] != "AWS_IAM" || tmpl.Join(up["TargetFunctionArn"]) != "<GetAtt:"+apiFn+".Arn>" {
		t.Errorf("function URL %v: want AWS_IAM on the api function", up)
	}
	if n := len(tpl.OfType("AWS::ApiGatewayV2::Api")); n != 1 {
		t.Errorf("%d HTTP APIs, want the HTTP API beside the URL", n)
	}
	perms := map[string]bool{}
	for _, id := range tpl.OfType("AWS::Lambda::Permission") {
		p := tpl.Resources[id].Properties
		if tmpl.Join(p["FunctionName"]) != "<GetAtt:"+apiFn+".Arn>" {
			continue
		}
		perms[fmt.Sprintf("%v %v %v %v", p["Action"], tmpl.Join(p["Principal"]), p["FunctionUrlAuthType"], p["InvokedViaFunctionUrl"])] = true
	}
	for _, want := range []string{"lambda:InvokeFunctionUrl 123456789012 AWS_IAM <nil>", "lambda:InvokeFunction 123456789012 <nil> true"} {
		if !perms[want] {
			t.Errorf("api function permissions %v lack %q", perms, want)
		}
	}
	for _, role := range []string{"Producer", "Consumer"} {
		sts := roleStatements(t, tpl, role)
		got := map[string]string{}
		for _, st := range sts {
			if len(st.Actions) == 1 && strings.HasPrefix(st.Actions[0], "lambda:") {
				if len(st.Resources) != 1 || tmpl.Join(st.Resources[0]) != "<GetAtt:"+apiFn+".Arn>" {
					t.Errorf("%s: %s on %v, want the api function", role, st.Actions[0], st.Resources)
				}
				got[st.Actions[0]] = fmt.Sprint(st.Condition)
			}
		}
		want := map[string]string{
			"lambda:InvokeFunctionUrl": "map[StringEquals:map[lambda:FunctionUrlAuthType:AWS_IAM]]",
			"lambda:InvokeFunction":    "map[Bool:map[lambda:InvokedViaFunctionUrl:true]]",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: function URL statements %v, want %v", role, got, want)
		}
	}
}

// TestGroupCommitSettings (issue 20 item 5): the append tier's window and budget reach
// the api function's environment, and only its.
func TestGroupCommitSettings(t *testing.T) {
	for desc, want := range map[string][2]any{
		"Strata api":      {"250ms", "16777216"},
		"Strata dispatch": {nil, nil},
	} {
		_, r, err := tpl.Find("AWS::Lambda::Function", "Description", desc)
		if err != nil {
			t.Fatal(err)
		}
		vars := r.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got := [2]any{vars["STRATA_GROUP_COMMIT_WINDOW"], vars[deploy.EnvGroupCommitBudget]}; got != want {
			t.Errorf("%s: window and budget %v, want %v", desc, got, want)
		}
	}
}

// TestFunctionURLAlone: FrontDoorFunctionURL creates no HTTP API; the deployment exports
// NoHTTPAPI as its API id, and GrantProduce grants the URL only.
func TestFunctionURLAlone(t *testing.T) {
	app := awscdk.NewApp(nil)
	st := awscdk.NewStack(app, jsii.String("U"), nil)
	s, err := strata.New(st, "Log", strata.Props{AssetDir: dir, FrontDoor: strata.FrontDoorFunctionURL,
		APIGrants: `{"arn:aws:iam::123456789012:role/producer":[{"resource":"topic:orders","ops":["append"]}]}`})
	if err != nil {
		t.Fatal(err)
	}
	producer := awsiam.NewRole(st, jsii.String("Producer"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountPrincipal(jsii.String("123456789012"))})
	if _, err := s.GrantProduce(producer, "orders"); err != nil {
		t.Fatal(err)
	}
	if s.API != nil || s.FunctionURL == nil || s.Attributes().HTTPAPIID != strata.NoHTTPAPI {
		t.Errorf("API %v, URL %v, exported API id %q", s.API, s.FunctionURL, s.Attributes().HTTPAPIID)
	}
	u, err := tmpl.New(assertions.Template_FromStack(st, nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(u.OfType("AWS::ApiGatewayV2::Api")); n != 0 {
		t.Errorf("%d HTTP APIs, want none", n)
	}
	var principals []string
	for _, id := range u.OfType("AWS::Lambda::Permission") {
		if p := tmpl.Join(u.Resources[id].Properties["Principal"]); p != "events.amazonaws.com" { // the schedules
			principals = append(principals, p)
		}
	}
	// The exact role of the grant, for both actions (no account-wide permission).
	if want := []string{"arn:aws:iam::123456789012:role/producer", "arn:aws:iam::123456789012:role/producer"}; !slices.Equal(principals, want) {
		t.Errorf("permission principals %q, want %q", principals, want)
	}
	sts := roleStatements(t, u, "Producer")
	var actions []string
	for _, st := range sts {
		actions = append(actions, st.Actions...)
	}
	if want := []string{"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}; !slices.Equal(actions, want) {
		t.Errorf("producer actions %q, want %q", actions, want)
	}
}

// TestFunctionURLRefusesEveryPrincipalAdmin: a function URL has no routes, so with
// EveryPrincipalAdmin every principal a GrantProduce or GrantConsume lets call it would be
// an admin (delete any topic, reset any group): New refuses the combination, naming both
// settings, for either front door with a URL; the HTTP API alone keeps its route grants.
func TestFunctionURLRefusesEveryPrincipalAdmin(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	for _, fd := range []strata.FrontDoor{strata.FrontDoorFunctionURL, strata.FrontDoorBoth} {
		st := awscdk.NewStack(app, jsii.String("Refused-"+string(fd)), nil)
		_, err := strata.New(st, "Log", strata.Props{AssetDir: dir, FrontDoor: fd, EveryPrincipalAdmin: true})
		if err == nil || !strings.Contains(err.Error(), "EveryPrincipalAdmin") || !strings.Contains(err.Error(), "FrontDoor") {
			t.Errorf("front door %s with every principal an admin: %v, want an error naming Props.EveryPrincipalAdmin and Props.FrontDoor", fd, err)
		}
	}
	st := awscdk.NewStack(app, jsii.String("Open"), nil)
	if _, err := strata.New(st, "Log", strata.Props{AssetDir: dir, FrontDoor: strata.FrontDoorAPIGateway, EveryPrincipalAdmin: true}); err != nil {
		t.Errorf("the HTTP API with every principal an admin: %v", err)
	}
}

// TestManagedInstancesEgressOnlyToEndpoints: the managed instances' security group lets
// HTTPS out to the VPC endpoints alone (the S3 and DynamoDB prefix lists, the CloudWatch
// Logs endpoint's security group), never to 0.0.0.0/0 or ::/0; the endpoint's group lets
// HTTPS in from the instances only.
func TestManagedInstancesEgressOnlyToEndpoints(t *testing.T) {
	rules := map[string][]map[string]any{} // security group logical id → egress rules
	ingress := map[string][]map[string]any{}
	for _, id := range tpl.OfType("AWS::EC2::SecurityGroup") {
		p := tpl.Resources[id].Properties
		for key, into := range map[string]map[string][]map[string]any{"SecurityGroupEgress": rules, "SecurityGroupIngress": ingress} {
			list, _ := p[key].([]any)
			for _, r := range list {
				m, _ := r.(map[string]any)
				into[id] = append(into[id], m)
			}
		}
	}
	for typ, into := range map[string]map[string][]map[string]any{"AWS::EC2::SecurityGroupEgress": rules, "AWS::EC2::SecurityGroupIngress": ingress} {
		for _, id := range tpl.OfType(typ) {
			p := tpl.Resources[id].Properties
			group := tmpl.Join(p["GroupId"])
			into[group] = append(into[group], p)
		}
	}
	var instances, endpointGroup string
	for id := range rules {
		if strings.Contains(id, "Instances") {
			instances = id
		}
	}
	if _, ep, err := tpl.Find("AWS::EC2::VPCEndpoint", "VpcEndpointType", "Interface"); err != nil {
		t.Error(err)
	} else if gs, _ := ep.Properties["SecurityGroupIds"].([]any); len(gs) == 1 {
		endpointGroup = tmpl.Join(gs[0])
	}
	var got []string
	for group, rs := range rules {
		for _, r := range rs {
			c4, c6 := tmpl.Join(r["CidrIp"]), tmpl.Join(r["CidrIpv6"])
			if c4 == "0.0.0.0/0" || c6 == "::/0" {
				t.Errorf("security group %s: egress %v open to the internet", group, r)
			}
			if c4 == "255.255.255.255/32" {
				continue // CDK's "no egress" placeholder rule
			}
			if strings.Contains(group, "Instances") {
				to := tmpl.Join(r["DestinationPrefixListId"]) + tmpl.Join(r["DestinationSecurityGroupId"]) + c4 + c6
				switch {
				case strings.Contains(to, "PrefixLists3"):
					to = "s3"
				case strings.Contains(to, "PrefixListdynamodb"):
					to = "dynamodb"
				case strings.Contains(to, "Endpoints"):
					to = "endpoints"
				}
				got = append(got, fmt.Sprintf("%s %v-%v %v", to, r["FromPort"], r["ToPort"], r["IpProtocol"]))
			}
		}
	}
	sort.Strings(got)
	if want := []string{"dynamodb 443-443 tcp", "endpoints 443-443 tcp", "s3 443-443 tcp"}; instances == "" || !slices.Equal(got, want) {
		t.Errorf("instances' security group %q egress %q, want %q", instances, got, want)
	}
	var in []string
	for group, rs := range ingress {
		if !strings.Contains(endpointGroup, group) {
			continue
		}
		for _, r := range rs {
			in = append(in, fmt.Sprintf("%s %v-%v", tmpl.Join(r["SourceSecurityGroupId"]), r["FromPort"], r["ToPort"]))
		}
	}
	if len(in) != 1 || !strings.Contains(in[0], "Instances") || !strings.HasSuffix(in[0], " 443-443") {
		t.Errorf("the logs endpoint's security group %s lets in %q, want HTTPS from the instances alone", endpointGroup, in)
	}
}

// TestCompactFunction: the compaction function is Strata's own function with its own
// role, 1024 MiB and 5 minutes, fans out (STRATA_COMPACT_FANOUT), runs on its own
// schedule at CompactInterval, may invoke itself and reads, writes and deletes segment
// objects under the deployment's prefix; the retention function no longer may write
// segment objects (it does not compact).
func TestCompactFunction(t *testing.T) {
	app := awscdk.NewApp(nil)
	st := awscdk.NewStack(app, jsii.String("C"), nil)
	if _, err := strata.New(st, "Log", strata.Props{AssetDir: dir, CompactInterval: 10 * time.Minute, CompactMemoryMiB: 2048}); err != nil {
		t.Fatal(err)
	}
	c, err := tmpl.New(assertions.Template_FromStack(st, nil))
	if err != nil {
		t.Fatal(err)
	}
	id, fn, err := c.Find("AWS::Lambda::Function", "Description", "Strata compact")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Properties["MemorySize"] != float64(2048) || fn.Properties["Timeout"] != float64(300) {
		t.Errorf("memory %v, timeout %v: want 2048 and 300", fn.Properties["MemorySize"], fn.Properties["Timeout"])
	}
	vars := fn.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	if vars[deploy.EnvCompactFanout] != "1" {
		t.Errorf("%s = %v, want 1", deploy.EnvCompactFanout, vars[deploy.EnvCompactFanout])
	}
	var rules []string
	for _, rid := range c.OfType("AWS::Events::Rule") {
		p := c.Resources[rid].Properties
		if target, _ := tmpl.GetAtt(p["Targets"].([]any)[0].(map[string]any)["Arn"], "Arn"); target == id {
			rules = append(rules, fmt.Sprint(p["ScheduleExpression"]))
		}
	}
	if fmt.Sprint(rules) != "[rate(10 minutes)]" {
		t.Errorf("schedules of the compaction function %v, want [rate(10 minutes)]", rules)
	}
	role, _ := tmpl.GetAtt(fn.Properties["Role"], "Arn")
	sts, _, err := c.RoleStatements(role)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sts {
		for _, r := range s.Resources {
			got = append(got, strings.Join(s.Actions, ",")+" on "+tmpl.Join(r))
		}
	}
	for _, want := range []string{
		"lambda:InvokeFunction on <GetAtt:" + id + ".Arn>",
		"s3:GetObject,s3:PutObject,s3:PutObjectTagging,s3:DeleteObject on <GetAtt:",
		"dynamodb:GetItem,dynamodb:Query,dynamodb:PutItem,dynamodb:UpdateItem,dynamodb:DeleteItem,dynamodb:ConditionCheckItem,dynamodb:BatchWriteItem on <GetAtt:LogTableindex",
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("the compaction role lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	_, api, err := c.Find("AWS::Lambda::Function", "Description", "Strata api")
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Join(api.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)[deploy.EnvCompactFunction]); got != "<Ref:"+id+">" {
		t.Errorf("the api's %s = %s, want the compaction function's name", deploy.EnvCompactFunction, got)
	}
	arole, _ := tmpl.GetAtt(api.Properties["Role"], "Arn")
	asts, _, err := c.RoleStatements(arole)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(asts, func(s tmpl.Statement) bool {
		return slices.Equal(s.Actions, []string{"lambda:InvokeFunction"}) && len(s.Resources) == 1 && tmpl.Join(s.Resources[0]) == "<GetAtt:"+id+".Arn>"
	}) {
		t.Errorf("the api role may not invoke the compaction function (the dirty-ratio trigger): %+v", asts)
	}
	_, ret, err := c.Find("AWS::Lambda::Function", "Description", "Strata retention")
	if err != nil {
		t.Fatal(err)
	}
	rrole, _ := tmpl.GetAtt(ret.Properties["Role"], "Arn")
	rsts, _, err := c.RoleStatements(rrole)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rsts {
		if slices.Contains(s.Actions, "s3:PutObject") {
			t.Errorf("the retention role may put segment objects (%v): it does not compact", s.Actions)
		}
	}
}
