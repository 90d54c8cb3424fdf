package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/internal/tmpl"
	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
)

// TestSynthesizedSubscriber: the example's template subscribes its function through
// the Strata stack's exports alone, with exactly the consumer's rights: a parameter
// under the path dispatch reads that decodes to its subscription, a resource policy
// for the deployment's dispatch role, the consumer and dead-letter statements on the
// deployment's tables and bucket, the consumer library's environment.
func TestSynthesizedSubscriber(t *testing.T) {
	asset := t.TempDir()
	if err := os.WriteFile(filepath.Join(asset, "bootstrap"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer jsii.Close()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st, err := newStack(app, "Strata", asset)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tmpl.New(assertions.Template_FromStack(st, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Export("example-subscriber"); err != nil {
		t.Fatal(err)
	}

	// Only the deployment's exports are imported.
	raw, _ := json.Marshal(tp.A.ToJSON())
	exports := strata.ExportNames("Strata")
	for _, m := range strings.Split(string(raw), `{"Fn::ImportValue":"`)[1:] {
		if name := m[:strings.Index(m, `"`)]; !slices.Contains(exports, name) {
			t.Errorf("imports %s, not an export of the Strata stack %v", name, exports)
		}
	}

	fns := tp.OfType("AWS::Lambda::Function")
	if len(fns) != 1 {
		t.Fatalf("functions %v", fns)
	}
	fnArn := "<GetAtt:" + fns[0] + ".Arn>"

	_, param, err := tp.Find("AWS::SSM::Parameter", "Type", "String")
	if err != nil {
		t.Fatal(err)
	}
	const path = "/strata/Strata-subscriptions" // the deployment's, resolved
	const arn = "arn:aws:lambda:us-east-1:123456789012:function:Billing"
	name := strings.ReplaceAll(tmpl.Join(param.Properties["Name"]), "<Import:Strata:SubscriptionsPath>", path)
	value := strings.ReplaceAll(tmpl.Join(param.Properties["Value"]), fnArn, arn)
	if sub, err := deploy.ParseSubscriptionParameter(path, name, value); err != nil ||
		sub != (deploy.Subscription{Topic: "orders", Group: "billing", Function: arn}) {
		t.Errorf("dispatch reads parameter %s = %s as %+v, %v", name, value, sub, err)
	}

	_, perm, err := tp.Find("AWS::Lambda::Permission", "Action", "lambda:InvokeFunction")
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Join(perm.Properties["Principal"]) != "<Import:Strata:DispatchRoleArn>" || tmpl.Join(perm.Properties["FunctionName"]) != fnArn {
		t.Errorf("permission %v: want the deployment's dispatch role allowed to invoke the function", perm.Properties)
	}

	role, _ := tmpl.GetAtt(tp.Resources[fns[0]].Properties["Role"], "Arn")
	sts, _, err := tp.RoleStatements(role)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range sts {
		var res []string
		for _, r := range s.Resources {
			res = append(res, tmpl.Join(r))
		}
		c, _ := json.Marshal(s.Condition)
		got[s.Sid] = strings.Join(s.Actions, ",") + " " + strings.Join(res, ",") + " " + string(c)
	}
	for sid, want := range map[string][]string{
		"ConsumerTopic":      {"dynamodb:GetItem ", "table/<Import:Strata:TablePrefix>topics", `["orders","billing.parked"]`},
		"ConsumerLeases":     {"dynamodb:UpdateItem", "table/<Import:Strata:TablePrefix>assignments", `["billing#orders"]`},
		"ConsumerCommits":    {"dynamodb:UpdateItem", "table/<Import:Strata:TablePrefix>commits", `["billing#orders"]`},
		"ConsumerSegments":   {"s3:GetObject", "<Import:Strata:BucketName>/v1/orders/*"},
		"DeadLetterSegments": {"s3:PutObject", "<Import:Strata:BucketName>/v1/orders-dlq/*"},
	} {
		for _, w := range want {
			if !strings.Contains(got[sid], w) {
				t.Errorf("%s = %q, want it to contain %q", sid, got[sid], w)
			}
		}
	}
	for sid, s := range got {
		if strings.Contains(s, "dynamodb:Scan") || strings.Contains(s, `"*"`) {
			t.Errorf("%s grants more than the consumer's rows: %s", sid, s)
		}
	}

	env := tp.Resources[fns[0]].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k, v := range map[string]string{
		deploy.EnvTopic: "orders", deploy.EnvGroup: "billing",
		deploy.EnvTablePrefix: "<Import:Strata:TablePrefix>", deploy.EnvBucket: "<Import:Strata:BucketName>",
	} {
		if tmpl.Join(env[k]) != v {
			t.Errorf("environment %s = %s, want %s", k, tmpl.Join(env[k]), v)
		}
	}
	if p := tp.Resources[fns[0]].Properties; p["Architectures"] == nil {
		t.Errorf("function %v: want arm64", p)
	}
}
