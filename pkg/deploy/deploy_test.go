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
