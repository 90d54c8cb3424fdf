package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newAPI assembles the api function's handler as functions/api does, on the embedded
// backend.
// No grants stands for the explicit opt-out, every principal an admin; newAPIEnv
// assembles from the environment itself.
func newAPI(t testing.TB, grants []deploy.Grant) *lambdafn.API {
	t.Helper()
	env := map[string]string{deploy.EnvEveryPrincipalAdmin: "1"}
	if grants != nil {
		raw, err := deploy.EncodeGrants(grants)
		if err != nil {
			t.Fatal(err)
		}
		env = map[string]string{deploy.EnvGrants: raw}
	}
	return newAPIEnv(t, env)
}

// newAPIEnv assembles the api function's handler from its environment as functions/api
// does, on the embedded backend.
func newAPIEnv(t testing.TB, env map[string]string) *lambdafn.API {
	t.Helper()
	p, err := lambdafn.PrincipalsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}, Auth: p.Authorizer()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return lambdafn.NewAPI(rt.Handler(), p)
}

func invoke(t testing.TB, api *lambdafn.API, payload []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	out, err := api.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %q: %v", out, err)
	}
	return resp
}

func errorCode(t testing.TB, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &body)
	return body.Error.Code
}

// TestAPIFixtures replays real API Gateway HTTP API v2 requests (IAM request context)
// through the handler `strata dev` serves.
func TestAPIFixtures(t *testing.T) {
	billing := []deploy.Grant{{
		Principal: "arn:aws:sts::123456789012:assumed-role/billing-*/*",
		Name:      "billing",
		Allow: []deploy.GrantAllow{
			{Resource: "topic:orders", Ops: []string{"create", "describe", "append", "read"}},
		},
	}}
	shortForm, err := deploy.ParseGrants(`{"arn:aws:sts::123456789012:assumed-role/billing-*/*":
		[{"resource":"topic:orders","ops":["create","describe","append","read"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	// step is a fixture's event and the answer it must get: its status and, for a non-2xx
	// one, the error code.
	type step struct {
		fixture string
		status  int
		code    string
	}
	for _, tc := range []struct {
		name   string
		grants []deploy.Grant
		steps  []step
	}{
		{
			name: "every principal an admin (explicit): every admitted principal may do everything",
			steps: []step{
				{"apigw-v2-create-topic.json", 201, ""},
				{"apigw-v2-append.json", 200, ""},
				{"apigw-v2-append-base64.json", 200, ""},
				{"apigw-v2-append-other-principal.json", 200, ""},
				{"apigw-v2-poll.json", 200, ""},
				{"apigw-v2-describe-topic.json", 200, ""},
				{"apigw-v2-health-no-iam.json", 200, ""},
			},
		},
		{
			name:   "grants in the short form (by pattern)",
			grants: shortForm,
			steps: []step{
				{"apigw-v2-create-topic.json", 201, ""},
				{"apigw-v2-append.json", 200, ""},
				{"apigw-v2-append-other-principal.json", 403, "forbidden"},
			},
		},
		{
			name:   "grants by principal ARN pattern",
			grants: billing,
			steps: []step{
				{"apigw-v2-create-topic.json", 201, ""},
				{"apigw-v2-append.json", 200, ""},
				{"apigw-v2-append-other-principal.json", 403, "forbidden"},
				{"apigw-v2-poll.json", 200, ""},
				{"apigw-v2-health-no-iam.json", 200, ""},
				// The same caller through the function URL (issue 20 item 3): the event a
				// lambda-url delivers, signed for the service lambda.
				{"function-url-describe-topic.json", 200, ""},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newAPI(t, tc.grants)
			for _, s := range tc.steps {
				resp := invoke(t, api, fixture(t, s.fixture))
				if resp.StatusCode != s.status || (s.code != "" && errorCode(t, resp) != s.code) {
					t.Errorf("%s: %d %s, want %d %s", s.fixture, resp.StatusCode, resp.Body, s.status, s.code)
				}
			}
		})
	}
}

// TestAPIPollReturnsAppended: the records appended through the function come back.
func TestAPIPollReturnsAppended(t *testing.T) {
	api := newAPI(t, nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	if r := invoke(t, api, fixture(t, "apigw-v2-append.json")); r.StatusCode != 200 {
		t.Fatal(r.Body)
	}
	resp := invoke(t, api, fixture(t, "apigw-v2-poll.json"))
	var body struct {
		Records []struct {
			Offset int64  `json:"offset"`
			Key    []byte `json:"key"`
		} `json:"records"`
		HighWatermark int64 `json:"high_watermark"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Records) != 2 || body.HighWatermark != 2 || string(body.Records[0].Key) != "order-0" || string(body.Records[1].Key) != "order-2" {
		t.Errorf("poll answered %s", resp.Body)
	}
}

// TestAPIAnswersNoStore: the api function's answers, records and errors alike, say
// Cache-Control: no-store, so no cache between the caller and API Gateway keeps them.
func TestAPIAnswersNoStore(t *testing.T) {
	api := newAPI(t, nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	invoke(t, api, fixture(t, "apigw-v2-append.json"))
	for _, name := range []string{"apigw-v2-poll.json", "apigw-v2-append.json"} {
		if r := invoke(t, api, fixture(t, name)); r.Headers["Cache-Control"] != "no-store" {
			t.Errorf("%s: %d with Cache-Control %q, want no-store", name, r.StatusCode, r.Headers["Cache-Control"])
		}
	}
	missing := []byte(strings.ReplaceAll(string(fixture(t, "apigw-v2-poll.json")), "/v1/topics/", "/v1/topics/missing-"))
	if r := invoke(t, api, missing); r.StatusCode != 404 || r.Headers["Cache-Control"] != "no-store" {
		t.Errorf("a missing topic: %d with Cache-Control %q, want 404 and no-store", r.StatusCode, r.Headers["Cache-Control"])
	}
}

// TestAPIPayloadLimit: a body over what API Gateway and Lambda can carry gets a clear
// 413 in the contract's format, saying the limit (max_body_bytes); one just under
// passes to the handler. Every answer states the limit (wire.HeaderMaxBody), which the
// SDK's producer sizes its requests by.
func TestAPIPayloadLimit(t *testing.T) {
	api := newAPI(t, nil)
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, "apigw-v2-append.json"), &ev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		body   string
		b64    bool
		status int
	}{
		{"over the limit", strings.Repeat("x", deploy.MaxAPIBody+1), false, 413},
		{"over the limit, base64", base64.StdEncoding.EncodeToString(make([]byte, deploy.MaxAPIBody+3)), true, 413},
		{"at the limit reaches the handler (a bad body, 400)", strings.Repeat("x", deploy.MaxAPIBody), false, 400},
		{"bad base64", "%%%", true, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev.Body, ev.IsBase64Encoded = tc.body, tc.b64
			resp := api.Serve(context.Background(), ev)
			if resp.StatusCode != tc.status {
				t.Errorf("%d %.200s, want %d", resp.StatusCode, resp.Body, tc.status)
			}
			if tc.status == http.StatusRequestEntityTooLarge && errorCode(t, resp) != "payload_too_large" {
				t.Errorf("code %q", errorCode(t, resp))
			}
			if got := wire.ParseMaxBody(resp.Headers[wire.HeaderMaxBody]); got != deploy.MaxAPIBody {
				t.Errorf("%s: %q, want %d", wire.HeaderMaxBody, resp.Headers[wire.HeaderMaxBody], deploy.MaxAPIBody)
			}
			var extra struct {
				MaxBody int `json:"max_body_bytes"`
			}
			if tc.status == http.StatusRequestEntityTooLarge && (json.Unmarshal([]byte(resp.Body), &extra) != nil || extra.MaxBody != deploy.MaxAPIBody) {
				t.Errorf("413 body %s, want max_body_bytes %d", resp.Body, deploy.MaxAPIBody)
			}
		})
	}
}

// TestAPIIdempotencyKeyWithComma: the handler sees the header as the client sent it
// (the proxy would split it at the comma): a retry appends nothing twice.
func TestAPIIdempotencyKeyWithComma(t *testing.T) {
	api := newAPI(t, nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, "apigw-v2-append.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev.Headers["idempotency-key"] = "batch-7, retry-safe"
	var offsets []string
	for range 2 {
		resp := api.Serve(context.Background(), ev)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
		offsets = append(offsets, resp.Body)
	}
	if offsets[0] != offsets[1] {
		t.Errorf("the retry answered %s, the first %s", offsets[1], offsets[0])
	}
	ev.Headers["idempotency-key"] = "batch-7, other"
	if resp := api.Serve(context.Background(), ev); resp.StatusCode != 200 || resp.Body == offsets[0] {
		t.Errorf("another key answered %d %s", resp.StatusCode, resp.Body)
	}
}

func TestAPIRefusesOtherEvents(t *testing.T) {
	api := newAPI(t, nil)
	for _, name := range []string{"scheduled-event.json", "ddb-stream-sequencer.json"} {
		if _, err := api.Invoke(context.Background(), fixture(t, name)); err == nil {
			t.Errorf("%s: accepted as an HTTP request", name)
		}
	}
	if _, err := api.Invoke(context.Background(), []byte("not json")); err == nil {
		t.Error("garbage accepted")
	}
}

// TestAPIDefaultDeny (issue 19, item 7): without STRATA_GRANTS and without the explicit
// STRATA_EVERY_PRINCIPAL_ADMIN, every IAM principal API Gateway admits is refused
// everything (health aside); the opt-out lets them do all; both set, or a value other
// than 1 or 0, is a start-up error.
func TestAPIDefaultDeny(t *testing.T) {
	api := newAPIEnv(t, map[string]string{})
	for _, f := range []string{"apigw-v2-create-topic.json", "apigw-v2-append.json", "apigw-v2-poll.json", "apigw-v2-describe-topic.json", "function-url-describe-topic.json"} {
		if resp := invoke(t, api, fixture(t, f)); resp.StatusCode != 403 || errorCode(t, resp) != "forbidden" {
			t.Errorf("%s without grants: %d %s, want 403 forbidden", f, resp.StatusCode, resp.Body)
		}
	}
	if resp := invoke(t, api, fixture(t, "apigw-v2-health-no-iam.json")); resp.StatusCode != 200 {
		t.Errorf("health: %d", resp.StatusCode)
	}
	open := newAPIEnv(t, map[string]string{deploy.EnvEveryPrincipalAdmin: "1"})
	if resp := invoke(t, open, fixture(t, "apigw-v2-create-topic.json")); resp.StatusCode != 201 {
		t.Errorf("every principal an admin: create %d %s", resp.StatusCode, resp.Body)
	}
	for _, env := range []map[string]string{
		{deploy.EnvEveryPrincipalAdmin: "1", deploy.EnvGrants: `{"arn:aws:iam::1:user/a": [{"resource": "topic:*", "ops": ["read"]}]}`},
		{deploy.EnvEveryPrincipalAdmin: "yes"},
		{deploy.EnvEveryPrincipalAdmin: "true"},
	} {
		if _, err := lambdafn.PrincipalsFromEnv(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}

func TestMatchPrincipal(t *testing.T) {
	for _, tc := range []struct {
		pattern, arn string
		want         bool
	}{
		{"arn:aws:iam::1:user/alice", "arn:aws:iam::1:user/alice", true},
		{"arn:aws:iam::1:user/alice", "arn:aws:iam::1:user/alice2", false},
		{"arn:aws:sts::1:assumed-role/billing-*/*", "arn:aws:sts::1:assumed-role/billing-producer/s", true},
		{"arn:aws:sts::1:assumed-role/billing-*/*", "arn:aws:sts::1:assumed-role/audit/s", false},
		{"arn:aws:sts::1:assumed-role/billing-**", "arn:aws:sts::1:assumed-role/billing-producer/s", true},
		{"*", "anything", true},
		{"**", "arn:aws:iam::1:user/a/b", true},
		{"arn:aws:sts::*:assumed-role/*/ci", "arn:aws:sts::9:assumed-role/deploy/ci", true},
		{"arn:aws:sts::*:assumed-role/*/ci", "arn:aws:sts::9:assumed-role/deploy/cid", false},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		// Issue 19, item 9: a * does not cross "/", so a role-name wildcard cannot match
		// a role elsewhere in the path or a longer ARN.
		{"arn:aws:sts::1:assumed-role/billing-*", "arn:aws:sts::1:assumed-role/billing-producer/s", false},
		{"arn:aws:iam::1:role/app-*", "arn:aws:iam::1:role/app-x/../admin", false},
		{"arn:aws:iam::1:user/*", "arn:aws:iam::1:user/team/alice", false},
		{"arn:aws:iam::1:user/**", "arn:aws:iam::1:user/team/alice", true},
		{"*", "arn:aws:iam::1:user/alice", false},
	} {
		if got := lambdafn.MatchPrincipal(tc.pattern, tc.arn); got != tc.want {
			t.Errorf("MatchPrincipal(%q, %q) = %v", tc.pattern, tc.arn, got)
		}
	}
}

func TestNewPrincipalsRefusesBadGrants(t *testing.T) {
	for _, g := range [][]deploy.Grant{
		{{Principal: "*", Name: "x", Allow: []deploy.GrantAllow{{Resource: "queue:orders", Ops: []string{"read"}}}}},
		{{Principal: "*", Name: "x", Allow: []deploy.GrantAllow{{Resource: "topic:orders", Ops: []string{"drop"}}}}},
		{{Principal: "*", Name: "", Allow: nil}},
	} {
		if _, err := lambdafn.NewPrincipals(g); err == nil {
			t.Errorf("%+v accepted", g)
		}
	}
}

// FuzzAPIInvoke: any payload gets an error or an HTTP answer, never a panic (seeds
// include a producer request's retry with its Strata-Idempotency and
// Strata-Retry-Elapsed-Ms headers).
func FuzzAPIInvoke(f *testing.F) {
	for _, name := range []string{"apigw-v2-create-topic.json", "apigw-v2-append.json", "apigw-v2-poll.json", "apigw-v2-append-base64.json", "scheduled-event.json"} {
		f.Add(fixture(f, name))
	}
	// A producer request's retry (fenced idempotency's headers), well-formed and not.
	for _, elapsed := range []string{"1200", "0100"} {
		var ev map[string]any
		if err := json.Unmarshal(fixture(f, "apigw-v2-append.json"), &ev); err != nil {
			f.Fatal(err)
		}
		h := ev["headers"].(map[string]any)
		h["idempotency-key"], h["strata-idempotency"], h["strata-attempt"], h["strata-retry-elapsed-ms"] =
			"01JDQ3Z7W2V8X9Y0A1B2C3D4E5.3", wire.IdempotencyProducer, "1", elapsed
		seed, err := json.Marshal(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
	}
	api := newAPI(f, []deploy.Grant{{Principal: "arn:aws:sts::123456789012:assumed-role/billing-*/*", Name: "billing",
		Allow: []deploy.GrantAllow{{Resource: "topic:*", Ops: []string{"create", "append", "read", "describe"}}}}})
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := api.Invoke(context.Background(), payload)
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid response %q", out)
		}
	})
}

func FuzzMatchPrincipal(f *testing.F) {
	f.Add("arn:aws:sts::*:assumed-role/*/ci", "arn:aws:sts::9:assumed-role/deploy/ci")
	f.Add("a*a", "a")
	f.Fuzz(func(t *testing.T, pattern, arn string) {
		got := lambdafn.MatchPrincipal(pattern, arn)
		if !strings.Contains(pattern, "*") && got != (pattern == arn) {
			t.Fatalf("no wildcard: %q vs %q matched %v", pattern, arn, got)
		}
		if pattern == arn && !got {
			t.Fatalf("%q does not match itself", arn)
		}
	})
}

// TestAPIBinaryRecords: the binary append body arrives through API Gateway base64
// encoded, as it does for a binary media type, and the binary poll answer leaves the
// function base64 encoded when it is not UTF-8; both round-trip byte for byte.
func TestAPIBinaryRecords(t *testing.T) {
	api := newAPI(t, nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	block, err := segment.EncodeBlock([]segment.Record{{Timestamp: 1796092200000, Key: []byte("order-1"), Value: []byte{0xff, 0xfe, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, "apigw-v2-append.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev.Headers["content-type"] = wire.ContentTypeBlocks
	ev.Body = base64.StdEncoding.EncodeToString(wire.AppendRequest(nil, []wire.Frame{{Partition: 0, Block: block}}))
	ev.IsBase64Encoded = true
	payload, _ := json.Marshal(ev)
	if r := invoke(t, api, payload); r.StatusCode != 200 || !strings.Contains(r.Body, `"base_offset":0,"count":1`) {
		t.Fatalf("binary append: %d %s", r.StatusCode, r.Body)
	}

	if err := json.Unmarshal(fixture(t, "apigw-v2-poll.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev.Headers["accept"] = wire.ContentTypeBlocks
	payload, _ = json.Marshal(ev)
	r := invoke(t, api, payload)
	body := []byte(r.Body)
	if r.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(r.Body); err != nil {
			t.Fatal(err)
		}
	}
	if r.StatusCode != 200 || r.Headers["Content-Type"] != wire.ContentTypeBlocks {
		t.Fatalf("binary poll: %d %v %q", r.StatusCode, r.Headers, r.Body)
	}
	p, err := wire.DecodePoll(body)
	if err != nil || len(p.Ranges) != 1 || !bytes.Equal(p.Ranges[0].Data, block) {
		t.Fatalf("binary poll answer %+v, %v", p, err)
	}
}

// TestAPIProducerIdempotencyHeaders (issue 20): the api function passes a producer
// request's headers (Strata-Idempotency, Strata-Attempt, Strata-Retry-Elapsed-Ms) to
// the handler runtime.Handler() serves: a bad Strata-Retry-Elapsed-Ms on a retry, or a
// retry without one, is a 400 naming it that appends nothing, and the well-formed first
// attempt and retry are answered 200 with the same offsets, the records readable once.
func TestAPIProducerIdempotencyHeaders(t *testing.T) {
	api := newAPI(t, nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	hw := func() int64 {
		t.Helper()
		var body struct {
			PartitionInfo []struct {
				HighWatermark int64 `json:"high_watermark"`
			} `json:"partition_info"`
		}
		resp := invoke(t, api, fixture(t, "apigw-v2-describe-topic.json"))
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("describe: %v: %s", err, resp.Body)
		}
		var n int64
		for _, p := range body.PartitionInfo {
			n += p.HighWatermark
		}
		return n
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, "apigw-v2-append.json"), &ev); err != nil {
		t.Fatal(err)
	}
	send := func(attempt, elapsed string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		e := ev
		e.Headers = map[string]string{}
		for k, v := range ev.Headers {
			e.Headers[k] = v
		}
		e.Headers["idempotency-key"] = "01JDQ3Z7W2V8X9Y0A1B2C3D4E5.7"
		e.Headers["strata-idempotency"] = wire.IdempotencyProducer
		e.Headers["strata-attempt"] = attempt
		if elapsed != "" {
			e.Headers["strata-retry-elapsed-ms"] = elapsed
		}
		e.Headers["strata-batch-floor"] = "0"
		return api.Serve(context.Background(), e)
	}
	for _, bad := range []string{"", "0100", "-1", "300001", "1.5", "1,2"} {
		before := hw()
		resp := send("1", bad)
		if resp.StatusCode != http.StatusBadRequest || errorCode(t, resp) != wire.CodeInvalidRequest ||
			!strings.Contains(resp.Body, wire.HeaderRetryElapsed) {
			t.Errorf("retry with Strata-Retry-Elapsed-Ms %q: %d %s, want 400 naming the header", bad, resp.StatusCode, resp.Body)
		}
		if after := hw(); after != before {
			t.Errorf("retry with Strata-Retry-Elapsed-Ms %q: the refused append moved the high watermarks %d -> %d", bad, before, after)
		}
	}
	first := send("0", "")
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first attempt: %d %s", first.StatusCode, first.Body)
	}
	if retry := send("1", "1200"); retry.StatusCode != http.StatusOK || retry.Body != first.Body {
		t.Fatalf("retry: %d %s, want 200 %s", retry.StatusCode, retry.Body, first.Body)
	}
	var polled struct {
		Records []struct {
			Key []byte `json:"key"`
		} `json:"records"`
	}
	resp := invoke(t, api, fixture(t, "apigw-v2-poll.json"))
	if err := json.Unmarshal([]byte(resp.Body), &polled); err != nil {
		t.Fatalf("poll: %v: %s", err, resp.Body)
	}
	if len(polled.Records) != 2 || string(polled.Records[0].Key) != "order-0" || string(polled.Records[1].Key) != "order-2" {
		t.Fatalf("partition 0 reads %s, want the request's order-0 and order-2 once", resp.Body)
	}
}

// TestAPIIdempotencyKeyPerIAMPrincipal: behind API Gateway an Idempotency-Key is the IAM
// principal's, even with every principal an admin (no token principals to tell callers
// apart): another principal using the key first does not make the producer's append
// 422, and every session of the producer's role is the one principal, so a retry sent
// with refreshed credentials (another session name) is answered with the first offsets.
func TestAPIIdempotencyKeyPerIAMPrincipal(t *testing.T) {
	api := newAPI(t, nil)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	event := func(arn, body string) events.APIGatewayV2HTTPRequest {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(fixture(t, "apigw-v2-append.json"), &ev); err != nil {
			t.Fatal(err)
		}
		ev.Headers["idempotency-key"] = "order-42"
		ev.RequestContext.Authorizer.IAM.UserARN = arn
		if body != "" {
			ev.Body, ev.IsBase64Encoded = body, false
		}
		return ev
	}
	intruder := event("arn:aws:iam::123456789012:user/intruder", `{"records": [{"value": "aW50cnVkZXI="}]}`)
	if resp := api.Serve(context.Background(), intruder); resp.StatusCode != 200 {
		t.Fatalf("the intruder's append: %d %s", resp.StatusCode, resp.Body)
	}
	first := api.Serve(context.Background(), event("arn:aws:sts::123456789012:assumed-role/billing-producer/session-a", ""))
	if first.StatusCode != 200 {
		t.Fatalf("the producer's append under a key another principal used first: %d %s, want 200", first.StatusCode, first.Body)
	}
	again := api.Serve(context.Background(), event("arn:aws:sts::123456789012:assumed-role/billing-producer/session-b", ""))
	if again.StatusCode != 200 || again.Body != first.Body {
		t.Fatalf("the retry from another session of the role: %d %s, want the first answer %s", again.StatusCode, again.Body, first.Body)
	}
}
