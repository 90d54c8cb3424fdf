package deploy_test

import (
	"testing"

	"github.com/stratalog/strata/pkg/deploy"
)

func TestSubscriptionParameterRoundTrip(t *testing.T) {
	sub := deploy.Subscription{Topic: "orders", Group: "billing", Function: "arn:aws:lambda:us-east-1:1:function:bill"}
	for _, path := range []string{"/strata/Strata-/subscriptions", "/strata/Strata-/subscriptions/"} {
		name := deploy.SubscriptionParameterName(path, sub.Topic, sub.Group)
		if name != "/strata/Strata-/subscriptions/orders/billing" {
			t.Fatalf("name %q", name)
		}
		v, err := deploy.EncodeSubscriptionParameter(sub)
		if err != nil {
			t.Fatal(err)
		}
		got, err := deploy.ParseSubscriptionParameter(path, name, v)
		if err != nil || got != sub {
			t.Fatalf("%+v, %v", got, err)
		}
	}
}

// TestParseSubscriptionParameterRefuses: every malformed parameter is an error, so
// dispatch skips it instead of invoking anything.
func TestParseSubscriptionParameterRefuses(t *testing.T) {
	const path = "/p"
	for _, c := range []struct{ what, name, value string }{
		{"not JSON", "/p/orders/billing", `{`},
		{"unknown field", "/p/orders/billing", `{"topic":"orders","group":"billing","function":"f","x":1}`},
		{"trailing data", "/p/orders/billing", `{"topic":"orders","group":"billing","function":"f"} {}`},
		{"no function", "/p/orders/billing", `{"topic":"orders","group":"billing"}`},
		{"bad topic", "/p/or ders/billing", `{"topic":"or ders","group":"billing","function":"f"}`},
		{"name of another subscription", "/p/orders/billing", `{"topic":"payments","group":"billing","function":"f"}`},
		{"outside the path", "/q/orders/billing", `{"topic":"orders","group":"billing","function":"f"}`},
		{"a list", "/p/orders/billing", `[]`},
	} {
		if s, err := deploy.ParseSubscriptionParameter(path, c.name, c.value); err == nil {
			t.Errorf("%s: accepted as %+v", c.what, s)
		}
	}
}

func FuzzParseSubscriptionParameter(f *testing.F) {
	f.Add("/p/orders/billing", `{"topic":"orders","group":"billing","function":"f"}`)
	f.Add("/p/a/b", `{"topic":"a","group":"b","function":"arn:aws:lambda:us-east-1:1:function:x"}`)
	f.Fuzz(func(t *testing.T, name, value string) {
		s, err := deploy.ParseSubscriptionParameter("/p", name, value)
		if err != nil {
			return
		}
		if deploy.SubscriptionParameterName("/p", s.Topic, s.Group) != name {
			t.Fatalf("%q accepted for %+v", name, s)
		}
		enc, err := deploy.EncodeSubscriptionParameter(s)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := deploy.ParseSubscriptionParameter("/p", name, enc); err != nil || again != s {
			t.Fatalf("re-parse of %s: %+v, %v", enc, again, err)
		}
	})
}
