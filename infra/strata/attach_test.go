package strata_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/internal/tmpl"
	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
)

// attachApps synthesizes two apps as a user has them: the deployment's (strata.New,
// exported under "Dep") and a consumer's, which attaches from the exports and subscribes
// its own function with a dead-letter topic. It returns both templates and the
// deployment. The deployment's app also subscribes a function of its own to the same
// topic and group (strata.Subscribe): the reference the attached rights must equal.
func attachApps(t *testing.T) (dep, sub *tmpl.Template, s *strata.Strata) {
	t.Helper()
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	depStack := awscdk.NewStack(app, jsii.String("Dep"), nil)
	s, err := strata.New(depStack, "Strata", strata.Props{AssetDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Export("Dep"); err != nil {
		t.Fatal(err)
	}
	inAppFn := userFunction(depStack, "InApp")
	if err := s.Subscribe(inAppFn, "orders", "billing", &strata.SubscribeOptions{DeadLetterTopic: "orders-dlq"}); err != nil {
		t.Fatal(err)
	}

	other := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	subStack := awscdk.NewStack(other, jsii.String("Billing"), nil)
	a, err := strata.Attach(subStack, "Strata", strata.ImportAttributes("Dep"))
	if err != nil {
		t.Fatal(err)
	}
	fn := userFunction(subStack, "Bill")
	if err := a.Subscribe(fn, "orders", "billing", &strata.SubscribeOptions{DeadLetterTopic: "orders-dlq"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscribe(fn, "orders", "billing", nil); err == nil || !strings.Contains(err.Error(), "already subscribed") {
		t.Errorf("second subscription of orders/billing: %v", err)
	}
	if err := a.Subscribe(fn, "refunds", "billing", nil); err != nil { // the same function twice: one permission
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tpl  **tmpl.Template
		st   awscdk.Stack
		name string
	}{{&dep, depStack, "attach-deployment"}, {&sub, subStack, "attach-subscriber"}} {
		if *tt.tpl, err = tmpl.New(assertions.Template_FromStack(tt.st, nil)); err != nil {
			t.Fatal(err)
		}
	}
	return dep, sub, s
}

func userFunction(scope awscdk.Stack, id string) awslambda.Function {
	role := awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	return awslambda.NewFunction(scope, jsii.String(id+"Fn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"), Role: role,
		Code: awslambda.Code_FromAsset(jsii.String(dir+"/"+deploy.FunctionConsumer), nil),
	})
}

// roleOf returns the logical id of the role whose id starts with prefix.
func roleOf(t *testing.T, tp *tmpl.Template, prefix string) string {
	t.Helper()
	for _, id := range tp.OfType("AWS::IAM::Role") {
		if strings.HasPrefix(id, prefix) {
			return id
		}
	}
	t.Fatalf("no role %s*", prefix)
	return ""
}

// TestAttachSubscribe: the consumer's app subscribes through the deployment's exports
// alone — a parameter under the path dispatch reads, a resource policy letting the
// deployment's dispatch role invoke the function, the consumer rights and environment —
// and changes nothing of the deployment.
func TestAttachSubscribe(t *testing.T) {
	dep, sub, s := attachApps(t)

	// Every import names an export of the deployment.
	exports := map[string]bool{}
	for _, o := range dep.Outputs {
		if o.Export != nil {
			exports[o.Export.Name] = true
		}
	}
	for _, name := range strata.ExportNames("Dep") {
		if !exports[name] {
			t.Errorf("deployment does not export %s (exports %v)", name, exports)
		}
	}
	raw, _ := json.Marshal(sub.A.ToJSON())
	for _, m := range strings.Split(string(raw), `{"Fn::ImportValue":"`)[1:] {
		name := m[:strings.Index(m, `"`)]
		if !exports[name] {
			t.Errorf("subscriber imports %s, which the deployment does not export", name)
		}
	}

	// The subscriber's stack holds its own things only: no policy on a role of the
	// deployment, nothing but the parameters, the permission, its function and role.
	types := map[string]int{}
	for _, r := range sub.Resources {
		types[r.Type]++
	}
	want := map[string]int{"AWS::SSM::Parameter": 2, "AWS::Lambda::Permission": 1, "AWS::Lambda::Function": 1, "AWS::IAM::Role": 1, "AWS::IAM::Policy": 1, "AWS::CloudWatch::Alarm": 8}
	if !jsonEq(types, want) {
		t.Errorf("subscriber resources %v, want %v", types, want)
	}
	_, pol, _ := sub.Find("AWS::IAM::Policy", "Roles", []any{map[string]any{"Ref": roleOf(t, sub, "BillRole")}})
	if pol.Type == "" {
		t.Error("the consumer rights are not on the subscriber's own role")
	}

	// The parameter: under the exported path, named and valued as dispatch decodes it.
	var id string
	var param tmpl.Resource
	for _, pid := range sub.OfType("AWS::SSM::Parameter") {
		if strings.HasSuffix(tmpl.Join(sub.Resources[pid].Properties["Name"]), "/orders/billing") {
			id, param = pid, sub.Resources[pid]
		}
	}
	name := tmpl.Join(param.Properties["Name"])
	if name != "<Import:Dep:SubscriptionsPath>/orders/billing" {
		t.Fatalf("parameter %s name %q", id, name)
	}
	fnID := sub.OfType("AWS::Lambda::Function")[0]
	value := tmpl.Join(param.Properties["Value"])
	// Resolved as CloudFormation would: the deployment's path, the function's ARN.
	arn := "arn:aws:lambda:us-east-1:123456789012:function:Billing-Bill"
	path := s.SubscriptionsPath()
	got, err := deploy.ParseSubscriptionParameter(path,
		strings.ReplaceAll(name, "<Import:Dep:SubscriptionsPath>", path),
		strings.ReplaceAll(value, "<GetAtt:"+fnID+".Arn>", arn))
	if err != nil || got != (deploy.Subscription{Topic: "orders", Group: "billing", Function: arn}) {
		t.Errorf("dispatch decodes the parameter %q as %+v, %v", value, got, err)
	}

	// The deployment's dispatch reads that path, with the right to.
	_, dp, err := dep.Find("AWS::Lambda::Function", "Description", "Strata dispatch")
	if err != nil {
		t.Fatal(err)
	}
	env := dp.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	if env[deploy.EnvSubscriptionsPath] != path || path != "/strata/Dep-subscriptions" {
		t.Errorf("dispatch %s = %v, want %s", deploy.EnvSubscriptionsPath, env[deploy.EnvSubscriptionsPath], path)
	}
	dispatchRole, _ := tmpl.GetAtt(dp.Properties["Role"], "Arn")
	sts, _, err := dep.RoleStatements(dispatchRole)
	if err != nil {
		t.Fatal(err)
	}
	var ssm []string
	for _, st := range sts {
		if slices.Contains(st.Actions, "ssm:GetParametersByPath") {
			for _, r := range st.Resources {
				ssm = append(ssm, tmpl.Join(r))
			}
		}
	}
	if !slices.Equal(ssm, []string{"arn:<Ref:AWS::Partition>:ssm:<Ref:AWS::Region>:<Ref:AWS::AccountId>:parameter" + path}) {
		t.Errorf("dispatch may read parameters %v, want the path %s only", ssm, path)
	}

	// The permission: the deployment's dispatch role may invoke the function.
	_, perm, _ := sub.Find("AWS::Lambda::Permission", "Action", "lambda:InvokeFunction")
	if tmpl.Join(perm.Properties["Principal"]) != "<Import:Dep:DispatchRoleArn>" ||
		tmpl.Join(perm.Properties["FunctionName"]) != "<GetAtt:"+fnID+".Arn>" {
		t.Errorf("permission %v", perm.Properties)
	}

	// The rights: what an in-app subscription of the same topic, group and dead-letter
	// topic gets, on the attached deployment's tables and bucket.
	rights := func(tp *tmpl.Template, role string) map[string]string {
		sts := roleStatements(t, tp, role)
		out := map[string]string{}
		for _, st := range sts {
			c, _ := json.Marshal(st.Condition)
			if strings.HasSuffix(st.Sid, "2") { // the second subscription of the function
				continue
			}
			out[st.Sid] = strings.Join(st.Actions, ",") + " " + string(c)
		}
		return out
	}
	if a, b := rights(sub, "BillRole"), rights(dep, "InAppRole"); !jsonEq(a, b) || len(a) != 18 { // 9 consumer, 4 parking, 5 dead-letter
		t.Errorf("attached rights\n %v\nin-app rights\n %v", a, b)
	}
	subSts, _, _ := sub.RoleStatements(roleOf(t, sub, "BillRole"))
	var res []string
	for _, st := range subSts {
		if st.Sid == "ConsumerSequencer" || st.Sid == "ConsumerSegments" || st.Sid == "ConsumerSegments2" {
			for _, r := range st.Resources {
				res = append(res, tmpl.Join(r))
			}
		}
	}
	sort.Strings(res)
	wantRes := []string{
		"arn:<Ref:AWS::Partition>:dynamodb:<Ref:AWS::Region>:<Ref:AWS::AccountId>:table/<Import:Dep:TablePrefix>sequencer",
		"arn:<Ref:AWS::Partition>:s3:::<Import:Dep:BucketName>/v1/orders/*",
		"arn:<Ref:AWS::Partition>:s3:::<Import:Dep:BucketName>/v1/refunds/*", // the second subscription's, its own id
		// the group's parking topic, read back by a replay (one group: in both)
		"arn:<Ref:AWS::Partition>:s3:::<Import:Dep:BucketName>/v1/billing.parked/*",
		"arn:<Ref:AWS::Partition>:s3:::<Import:Dep:BucketName>/v1/billing.parked/*",
	}
	sort.Strings(wantRes)
	if !slices.Equal(res, wantRes) {
		t.Errorf("resources %q, want %q", res, wantRes)
	}

	// The environment the consumer library reads.
	fenv := sub.Resources[fnID].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k, v := range map[string]string{
		deploy.EnvTablePrefix: "<Import:Dep:TablePrefix>", deploy.EnvBucket: "<Import:Dep:BucketName>",
		deploy.EnvTopic: "refunds", deploy.EnvGroup: "billing",
	} {
		if tmpl.Join(fenv[k]) != v {
			t.Errorf("function %s = %v, want %s", k, tmpl.Join(fenv[k]), v)
		}
	}
	if err := sub.Export("attach-subscriber"); err != nil {
		t.Fatal(err)
	}
}

func jsonEq(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestAttachRefuses: attributes a deployment cannot have, and bad subscriptions, are
// errors that add nothing.
func TestAttachRefuses(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st := awscdk.NewStack(app, jsii.String("S"), nil)
	good := strata.Attributes{TablePrefix: "Strata-", BucketName: "strata-segments-1", HTTPAPIID: "abc", APIFunctionArn: "arn:aws:lambda:us-east-1:1:function:api", DispatchRoleArn: "arn:aws:iam::1:role/d", SubscriptionsPath: "/strata/Strata-subscriptions"}
	for _, tc := range []struct {
		name string
		mod  func(*strata.Attributes)
		want string
	}{
		{"no table prefix", func(a *strata.Attributes) { a.TablePrefix = "" }, "TablePrefix is required"},
		{"no dispatch role", func(a *strata.Attributes) { a.DispatchRoleArn = "" }, "DispatchRoleArn is required"},
		{"bad bucket", func(a *strata.Attributes) { a.BucketName = "B" }, "not a bucket name"},
		{"bad table prefix", func(a *strata.Attributes) { a.TablePrefix = "a b" }, "not a table prefix"},
		{"relative path", func(a *strata.Attributes) { a.SubscriptionsPath = "strata/x" }, "not a Parameter Store path"},
		{"reserved path", func(a *strata.Attributes) { a.SubscriptionsPath = "/aws/x" }, "not a Parameter Store path"},
		{"wildcard object prefix", func(a *strata.Attributes) { a.ObjectPrefix = "p*" }, "ObjectPrefix"},
		{"token object prefix", func(a *strata.Attributes) { a.ObjectPrefix = *awscdk.Fn_ImportValue(jsii.String("x")) }, "literal"},
	} {
		a := good
		tc.mod(&a)
		if _, err := strata.Attach(st, tc.name, a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	a, err := strata.Attach(st, "Good", good)
	if err != nil {
		t.Fatal(err)
	}
	fn := userFunction(st, "F")
	imported := awslambda.Function_FromFunctionArn(st, jsii.String("Imported"), jsii.String("arn:aws:lambda:us-east-1:1:function:x"))
	for _, bad := range []func() error{
		func() error { return a.Subscribe(fn, "bad topic", "g", nil) },
		func() error { return a.Subscribe(fn, "t", "g", &strata.SubscribeOptions{DeadLetterTopic: "../x"}) },
		func() error { return a.Subscribe(imported, "t", "g", nil) },
	} {
		if err := bad(); err == nil {
			t.Error("accepted")
		}
	}
	tp, err := tmpl.New(assertions.Template_FromStack(st, nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tp.OfType("AWS::SSM::Parameter")) + len(tp.OfType("AWS::Lambda::Permission")); n != 0 {
		t.Errorf("%d parameters and permissions from refused subscriptions", n)
	}
	// Literal attributes: the parameter name is the literal path's.
	app2 := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st2 := awscdk.NewStack(app2, jsii.String("S2"), nil)
	a2, err := strata.Attach(st2, "Good", good)
	if err != nil {
		t.Fatal(err)
	}
	if err := a2.Subscribe(userFunction(st2, "F"), "orders", "g", nil); err != nil {
		t.Fatal(err)
	}
	tp, _ = tmpl.New(assertions.Template_FromStack(st2, nil))
	if _, _, err := tp.Find("AWS::SSM::Parameter", "Name", "/strata/Strata-subscriptions/orders/g"); err != nil {
		t.Error(err)
	}
}

// TestOneFunctionTwoSubscriptionsUniqueSids: a function subscribed to two topics (in
// the deployment's app or attached) gets one policy whose statement ids are unique;
// before, the second subscription repeated every id (cfn-lint E3510).
func TestOneFunctionTwoSubscriptionsUniqueSids(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st := awscdk.NewStack(app, jsii.String("Two"), nil)
	s, err := strata.New(st, "Strata", strata.Props{AssetDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fn := userFunction(st, "Both")
	for _, topic := range []string{"orders", "refunds"} {
		if err := s.Subscribe(fn, topic, "billing", nil); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := tmpl.New(assertions.Template_FromStack(st, nil))
	if err != nil {
		t.Fatal(err)
	}
	sts := roleStatements(t, tp, "BothRole")
	seen := map[string]bool{}
	for _, x := range sts {
		if x.Sid != "" && seen[x.Sid] {
			t.Errorf("statement id %s repeated", x.Sid)
		}
		seen[x.Sid] = true
	}
	if len(sts) != 26 {
		t.Errorf("%d statements, want 13 per subscription (9 consumer, 4 parking)", len(sts))
	}
}

// TestSubscriptionsWhoseNamesJoinAlike: topic "a-b" in group "c" and topic "a" in group
// "b-c" are two subscriptions (as are group "a-b" on topic "c" and group "a" on topic
// "b-c"); before, each pair joined to one construct id ("Subscription-a-b-c") and the
// second Subscribe panicked in jsii.
func TestSubscriptionsWhoseNamesJoinAlike(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st := awscdk.NewStack(app, jsii.String("Alike"), nil)
	s, err := strata.New(st, "Strata", strata.Props{AssetDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a, err := strata.Attach(st, "Attached", s.Attributes())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []strata.Deployment{s, a} {
		fn := userFunction(st, fmt.Sprintf("F%p", d))
		for _, tg := range [][2]string{{"a-b", "c"}, {"a", "b-c"}, {"c", "a-b"}, {"b-c", "a"}} {
			if err := d.Subscribe(fn, tg[0], tg[1], nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	tp, err := tmpl.New(assertions.Template_FromStack(st, nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tp.OfType("AWS::SSM::Parameter")); n != 4 {
		t.Errorf("%d parameters, want 4", n)
	}
}

// TestAttachedGrantsOnAFunctionURLDeployment: a deployment reached by its function URL
// alone exports its api function's ARN, and an attached app's GrantProduce and
// GrantConsume grant calling that URL (lambda:InvokeFunctionUrl with IAM auth, and
// lambda:InvokeFunction through the URL) on the imported ARN, beside the route grants
// (on the API id "none": a valid ARN granting nothing). Before, they were an error there:
// the export named no HTTP API and nothing else to grant on.
func TestAttachedGrantsOnAFunctionURLDeployment(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	depStack := awscdk.NewStack(app, jsii.String("UrlDep"), nil)
	s, err := strata.New(depStack, "Strata", strata.Props{AssetDir: dir, FrontDoor: strata.FrontDoorFunctionURL,
		APIGrants: `{"arn:aws:iam::123456789012:role/producer":[{"resource":"topic:orders","ops":["append"]}]}`})
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Attributes(); a.HTTPAPIID != strata.NoHTTPAPI || a.APIFunctionArn == "" {
		t.Fatalf("attributes %+v: want no HTTP API and the api function's ARN", a)
	}
	if err := s.Export("UrlDep"); err != nil {
		t.Fatal(err)
	}
	dep, err := tmpl.New(assertions.Template_FromStack(depStack, nil))
	if err != nil {
		t.Fatal(err)
	}
	exported := false
	for _, o := range dep.Outputs {
		exported = exported || (o.Export != nil && o.Export.Name == strata.ExportName("UrlDep", "ApiFunctionArn"))
	}
	if !exported {
		t.Fatal("the deployment does not export UrlFunctionArn")
	}

	other := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	subStack := awscdk.NewStack(other, jsii.String("Shop"), nil)
	a, err := strata.Attach(subStack, "Strata", strata.ImportAttributes("UrlDep"))
	if err != nil {
		t.Fatal(err)
	}
	producer := awsiam.NewRole(subStack, jsii.String("Producer"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountPrincipal(jsii.String("123456789012"))})
	if _, err := a.GrantProduce(producer, "orders"); err != nil {
		t.Fatalf("GrantProduce on a function-URL deployment: %v", err)
	}
	if _, err := a.GrantConsume(producer, "billing", "orders"); err != nil {
		t.Fatalf("GrantConsume on a function-URL deployment: %v", err)
	}
	sub, err := tmpl.New(assertions.Template_FromStack(subStack, nil))
	if err != nil {
		t.Fatal(err)
	}
	sts, _, err := sub.RoleStatements(roleOf(t, sub, "Producer"))
	if err != nil {
		t.Fatal(err)
	}
	urlGrants := 0
	for _, st := range sts {
		raw, _ := json.Marshal(st)
		onFunction := strings.Contains(string(raw), strata.ExportName("UrlDep", "ApiFunctionArn"))
		switch {
		case slices.Equal(st.Actions, []string{"execute-api:Invoke"}):
		case slices.Contains(st.Actions, "lambda:InvokeFunctionUrl") || slices.Contains(st.Actions, "lambda:InvokeFunction"):
			if !onFunction {
				t.Errorf("statement %s: not on the imported api function ARN", raw)
			}
			urlGrants++
		default:
			t.Errorf("unexpected statement %s", raw)
		}
	}
	if urlGrants != 2 { // InvokeFunctionUrl and InvokeFunction (produce's and consume's are one)
		t.Errorf("%d function URL statements, want 2: %+v", urlGrants, sts)
	}
}
