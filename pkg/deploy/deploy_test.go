package deploy_test

import (
	"reflect"
	"testing"

	"github.com/stratalog/strata/pkg/deploy"
)

func TestGrantsRoundTrip(t *testing.T) {
	gs := []deploy.Grant{{Principal: "arn:aws:sts::1:assumed-role/billing-*", Name: "billing",
		Allow: []deploy.GrantAllow{{Resource: "topic:orders", Ops: []string{"append"}}}}}
	raw, err := deploy.EncodeGrants(gs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := deploy.ParseGrants(raw)
	if err != nil || !reflect.DeepEqual(got, gs) {
		t.Fatalf("%+v, %v", got, err)
	}
}

// TestGrantsShortForm: the map form infra documents, most specific pattern first.
func TestGrantsShortForm(t *testing.T) {
	gs, err := deploy.ParseGrants(`{"arn:aws:iam::1:role/*":[{"resource":"topic:*","ops":["describe"]}],
		"arn:aws:iam::1:role/billing-*":[{"resource":"topic:orders","ops":["read"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []deploy.Grant{
		{Principal: "arn:aws:iam::1:role/billing-*", Name: "arn:aws:iam::1:role/billing-*", Allow: []deploy.GrantAllow{{Resource: "topic:orders", Ops: []string{"read"}}}},
		{Principal: "arn:aws:iam::1:role/*", Name: "arn:aws:iam::1:role/*", Allow: []deploy.GrantAllow{{Resource: "topic:*", Ops: []string{"describe"}}}},
	}
	if !reflect.DeepEqual(gs, want) {
		t.Errorf("%+v", gs)
	}
	for _, raw := range []string{`{"":[]}`, `{"a":[{"resource":"topic:x","ops":["read"],"x":1}]}`, `{"a":{}}`, `{"a":[]} {}`} {
		if _, err := deploy.ParseGrants(raw); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

func TestParseGrantsRefuses(t *testing.T) {
	for _, raw := range []string{
		`{`, `[{"principal":"*","name":"x","allow":[]}] []`, `[{"principal":"","name":"x"}]`,
		`[{"principal":"*","name":""}]`, `[{"principal":"*","name":"x","extra":1}]`, `{"principal":"*"}`,
	} {
		if _, err := deploy.ParseGrants(raw); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
	if gs, err := deploy.ParseGrants("  "); err != nil || gs != nil {
		t.Errorf("empty: %v, %v", gs, err)
	}
}

func TestBusinessID(t *testing.T) {
	if got := deploy.BusinessID("orders", 3, 41); got != "orders/3/41" {
		t.Errorf("%q", got)
	}
}

func FuzzParseGrants(f *testing.F) {
	f.Add(`[{"principal":"arn:aws:iam::1:user/*","name":"x","allow":[{"resource":"topic:*","ops":["read"]}]}]`)
	f.Add(`[]`)
	f.Add(`{"arn:aws:iam::123456789012:role/billing-*":[{"resource":"topic:orders","ops":["read"]}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		gs, err := deploy.ParseGrants(raw)
		if err != nil {
			return
		}
		enc, err := deploy.EncodeGrants(gs)
		if err != nil {
			t.Fatal(err)
		}
		again, err := deploy.ParseGrants(enc)
		if err != nil || len(again) != len(gs) {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
	})
}

// TestAPIAuthorization (issue 19, item 7): neither setting is deny-all (no grants, not
// every principal an admin); "1" is the opt-out; both, or another value, is an error.
func TestAPIAuthorization(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		grants     int
		everyAdmin bool
		err        bool
	}{
		{map[string]string{}, 0, false, false},
		{map[string]string{deploy.EnvEveryPrincipalAdmin: "0"}, 0, false, false},
		{map[string]string{deploy.EnvEveryPrincipalAdmin: "1"}, 0, true, false},
		{map[string]string{deploy.EnvGrants: `{"arn:aws:iam::1:user/a": []}`}, 1, false, false},
		{map[string]string{deploy.EnvGrants: `{"arn:aws:iam::1:user/a": []}`, deploy.EnvEveryPrincipalAdmin: "1"}, 0, false, true},
		{map[string]string{deploy.EnvEveryPrincipalAdmin: "true"}, 0, false, true},
		{map[string]string{deploy.EnvEveryPrincipalAdmin: "yes"}, 0, false, true},
	} {
		grants, everyAdmin, err := deploy.APIAuthorization(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.err || len(grants) != tc.grants || everyAdmin != tc.everyAdmin {
			t.Errorf("%v: %d grants, every admin %v, error %v", tc.env, len(grants), everyAdmin, err)
		}
	}
}
