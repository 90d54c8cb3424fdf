package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/httpapi"
)

// TestAdmit: the SASL state machine serves, before authentication, only ApiVersions
// and the SASL steps in their order; once authenticated everything, a SASL step being
// the session's to answer.
func TestAdmit(t *testing.T) {
	const metadata, produce int16 = 3, 0
	for _, c := range []struct {
		p    phase
		key  int16
		want verdict
	}{
		{phaseStart, apiVersionsKey, admitPass},
		{phaseStart, saslHandshakeKey, admitSASL},
		{phaseStart, saslAuthenticateKey, admitRefuse},
		{phaseStart, metadata, admitRefuse},
		{phaseStart, produce, admitRefuse},
		{phaseHandshaken, saslAuthenticateKey, admitSASL},
		{phaseHandshaken, saslHandshakeKey, admitRefuse},
		{phaseHandshaken, apiVersionsKey, admitRefuse},
		{phaseHandshaken, metadata, admitRefuse},
		{phaseAuthorized, metadata, admitPass},
		{phaseAuthorized, apiVersionsKey, admitPass},
		{phaseAuthorized, saslHandshakeKey, admitSASL},
		{phaseAuthorized, saslAuthenticateKey, admitSASL},
	} {
		if got := admit(c.p, c.key); got != c.want {
			t.Errorf("admit(phase %d, key %d) = %d, want %d", c.p, c.key, got, c.want)
		}
	}
}

// TestParseSASLMessages: PLAIN and OAUTHBEARER messages as clients send them parse;
// malformed ones are refused with errAuth.
func TestParseSASLMessages(t *testing.T) {
	if _, u, p, err := parsePlain([]byte("\x00bob\x00secret")); err != nil || u != "bob" || p != "secret" {
		t.Fatalf("PLAIN: %q %q %v", u, p, err)
	}
	if _, u, _, err := parsePlain([]byte("bob\x00bob\x00secret")); err != nil || u != "bob" {
		t.Fatalf("PLAIN with authzid: %q %v", u, err)
	}
	for _, m := range []string{"", "bob", "\x00bob", "\x00\x00secret", "\x00bob\x00", "eve\x00bob\x00secret", "\x00a\x00b\x00c"} {
		if _, _, _, err := parsePlain([]byte(m)); err == nil {
			t.Errorf("PLAIN %q parsed", m)
		}
	}
	for m, want := range map[string]string{
		"n,,\x01auth=Bearer tok\x01\x01":              "tok",
		"n,a=bob,\x01auth=Bearer tok\x01x=y\x01\x01":  "tok",
		"n,,\x01host=h\x01auth=bearer tok.en\x01\x01": "tok.en",
	} {
		if got, err := parseOAuthBearer([]byte(m)); err != nil || got != want {
			t.Errorf("OAUTHBEARER %q: %q %v", m, got, err)
		}
	}
	for _, m := range []string{"", "\x01", "y,,\x01auth=Bearer t\x01\x01", "n,,\x01auth=Bearer t\x01", "n,,\x01auth=Basic t\x01\x01",
		"n,,\x01\x01", "n,,\x01auth=Bearer \x01\x01", "n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01", "n,,\x01novalue\x01\x01"} {
		if _, err := parseOAuthBearer([]byte(m)); err == nil {
			t.Errorf("OAUTHBEARER %q parsed", m)
		}
	}
}

// grantsOf is a principal of an auth file with the given allow entries.
func grantsOf(t *testing.T, allow string) Grants {
	t.Helper()
	a, err := httpapi.ParseAuth([]byte(`{"principals": {"token-0123456789abcdefghij": {"name": "p", "allow": [` + allow + `]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := a.Lookup("token-0123456789abcdefghij")
	return p
}

// TestAuthorizeGroupAPIs: the plans of the group and config APIs refuse, each with its
// class's code, what the grants do not allow, before any handler runs.
func TestAuthorizeGroupAPIs(t *testing.T) {
	g := grantsOf(t, `{"resource": "group:billing", "ops": ["consume"]}, {"resource": "topic:orders", "ops": ["describe", "read"]}`)
	none := func([16]byte) string { return "" }
	for _, c := range []struct {
		name string
		req  kmsg.Request
		code func(kmsg.Response) int16
		want int16
	}{
		{"join others", &kmsg.JoinGroupRequest{Group: "payroll"}, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, groupAuthFailed},
		{"sync others", &kmsg.SyncGroupRequest{Group: "payroll"}, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }, groupAuthFailed},
		{"heartbeat others", &kmsg.HeartbeatRequest{Group: "payroll"}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, groupAuthFailed},
		{"leave others", &kmsg.LeaveGroupRequest{Group: "payroll"}, func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }, groupAuthFailed},
		{"offset delete without reset", &kmsg.OffsetDeleteRequest{Group: "billing"}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }, groupAuthFailed},
		{"commit outside a membership without reset", &kmsg.OffsetCommitRequest{Group: "billing", Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{}}}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }, groupAuthFailed},
		{"offset fetch of others", &kmsg.OffsetFetchRequest{Group: "payroll"}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).ErrorCode }, groupAuthFailed},
	} {
		gr := authorize(g, c.req, none)
		if gr.deny == nil {
			t.Errorf("%s: not refused", c.name)
			continue
		}
		if got := c.code(gr.deny); got != c.want {
			t.Errorf("%s: code %d, want %d", c.name, got, c.want)
		}
	}
	for _, req := range []kmsg.Request{&kmsg.JoinGroupRequest{Group: "billing"}, &kmsg.HeartbeatRequest{Group: "billing"},
		&kmsg.OffsetCommitRequest{Group: "billing", Generation: 3, MemberID: "m"}, &kmsg.InitProducerIDRequest{}} {
		if gr := authorize(g, req, none); gr.deny != nil || gr.err != nil || gr.skip {
			t.Errorf("%s of billing refused", kmsg.NameForKey(req.Key()))
		}
	}

	dg := &kmsg.DeleteGroupsRequest{Groups: []string{"billing"}}
	gr := authorize(g, dg, none)
	if !gr.skip {
		t.Fatal("DeleteGroups without delete was served")
	}
	resp := dg.ResponseKind()
	gr.finish(resp)
	if out := resp.(*kmsg.DeleteGroupsResponse).Groups; len(out) != 1 || out[0].ErrorCode != groupAuthFailed {
		t.Fatalf("DeleteGroups answer %+v", out)
	}

	lg := &kmsg.ListGroupsRequest{}
	gr = authorize(grantsOf(t, `{"resource": "group:billing", "ops": ["describe"]}`), lg, none)
	lresp := &kmsg.ListGroupsResponse{Groups: []kmsg.ListGroupsResponseGroup{{Group: "billing"}, {Group: "payroll"}}}
	gr.finish(lresp)
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != "billing" {
		t.Fatalf("ListGroups shows %+v", lresp.Groups)
	}

	ac := &kmsg.IncrementalAlterConfigsRequest{Resources: []kmsg.IncrementalAlterConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders"}, {ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"}}}
	gr = authorize(g, ac, none)
	aresp := ac.ResponseKind()
	gr.finish(aresp)
	codes := map[string]int16{}
	for _, r := range aresp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		codes[r.ResourceName] = r.ErrorCode
	}
	if !gr.skip || codes["orders"] != topicAuthFailed || codes["0"] != clusterAuthFailed {
		t.Fatalf("IncrementalAlterConfigs: skip %v codes %v", gr.skip, codes)
	}

	// An API without a rule is refused, not served unchecked.
	if gr := authorize(AllowAll{}, &kmsg.EndTxnRequest{}, none); gr.deny == nil && gr.err == nil {
		t.Fatal("EndTxn was let through")
	}
}

// TestAppendPrincipal: appends are made as the connection's principal, scoped as the
// HTTP API scopes the same caller, and never as pkg/log's in-process principal "".
func TestAppendPrincipal(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(`{"principals": {"token-0123456789abcdefghij": {"name": "writer", "allow": []}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: Config{Auth: &Auth{Tokens: a}}}
	id, err := s.authenticate(context.Background(), MechanismPlain, []byte("\x00writer\x00token-0123456789abcdefghij"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := a.Lookup("token-0123456789abcdefghij")
	if got, want := appendPrincipal(withIdentity(context.Background(), id)), httpapi.KeyPrincipal("", p); got != want || got == "" {
		t.Fatalf("append principal %q, want %q", got, want)
	}
	if got := appendPrincipal(context.Background()); got != httpapi.KeyPrincipal("", nil) || got == "" {
		t.Fatalf("auth off: append principal %q", got)
	}
}

// topicGrants allows op on the topics in set only.
type topicGrants map[string]bool

func (g topicGrants) Allowed(op, resource string) bool {
	name, ok := strings.CutPrefix(resource, "topic:")
	return ok && g[name]
}

// TestAuthorizePartitionsTopics: for any grants and any produce, fetch or create
// request, the plan serves exactly the allowed topics, in their order, and answers
// every refused one once with TOPIC_AUTHORIZATION_FAILED for each of its partitions;
// a request with nothing allowed is not served at all.
func TestAuthorizePartitionsTopics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}), 0, 5, rapid.ID[string]).Draw(t, "topics")
		g := topicGrants{}
		for _, n := range names {
			g[n] = rapid.Bool().Draw(t, "allow "+n)
		}
		parts := map[string]int{}
		for _, n := range names {
			parts[n] = rapid.IntRange(1, 3).Draw(t, "partitions of "+n)
		}
		var allowed []string
		for _, n := range names {
			if g[n] {
				allowed = append(allowed, n)
			}
		}
		check := func(kind string, gr grant, kept []string, answered map[string][]int16) {
			if !slices.Equal(kept, allowed) && !(len(kept) == 0 && len(allowed) == 0) {
				t.Fatalf("%s: served %v, allowed %v", kind, kept, allowed)
			}
			if gr.skip != (len(allowed) == 0 && len(names) > 0) {
				t.Fatalf("%s: skip %v with %d of %d allowed", kind, gr.skip, len(allowed), len(names))
			}
			for _, n := range names {
				codes, ok := answered[n]
				if g[n] == ok {
					t.Fatalf("%s: topic %s allowed %v answered by the plan %v", kind, n, g[n], ok)
				}
				for _, c := range codes {
					if c != topicAuthFailed {
						t.Fatalf("%s: topic %s refused with %d", kind, n, c)
					}
				}
			}
		}

		pr := &kmsg.ProduceRequest{Acks: -1}
		fr := &kmsg.FetchRequest{}
		cr := &kmsg.CreateTopicsRequest{}
		for _, n := range names {
			pt := kmsg.ProduceRequestTopic{Topic: n}
			ft := kmsg.FetchRequestTopic{Topic: n}
			for p := range parts[n] {
				pt.Partitions = append(pt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(p)})
				ft.Partitions = append(ft.Partitions, kmsg.FetchRequestTopicPartition{Partition: int32(p)})
			}
			pr.Topics = append(pr.Topics, pt)
			fr.Topics = append(fr.Topics, ft)
			cr.Topics = append(cr.Topics, kmsg.CreateTopicsRequestTopic{Topic: n})
		}
		none := func([16]byte) string { return "" }

		gr := authorize(g, pr, none)
		presp := &kmsg.ProduceResponse{}
		if gr.finish != nil {
			gr.finish(presp)
		}
		answered := map[string][]int16{}
		for _, rt := range presp.Topics {
			if _, dup := answered[rt.Topic]; dup || len(rt.Partitions) != parts[rt.Topic] {
				t.Fatalf("produce: topic %s answered twice or with %d partitions", rt.Topic, len(rt.Partitions))
			}
			for _, p := range rt.Partitions {
				answered[rt.Topic] = append(answered[rt.Topic], p.ErrorCode)
			}
		}
		var kept []string
		for _, rt := range pr.Topics {
			kept = append(kept, rt.Topic)
		}
		check("produce", gr, kept, answered)

		gr = authorize(g, fr, none)
		fresp := &kmsg.FetchResponse{}
		if gr.finish != nil {
			gr.finish(fresp)
		}
		answered, kept = map[string][]int16{}, nil
		for _, rt := range fresp.Topics {
			if _, dup := answered[rt.Topic]; dup || len(rt.Partitions) != parts[rt.Topic] {
				t.Fatalf("fetch: topic %s answered twice or with %d partitions", rt.Topic, len(rt.Partitions))
			}
			for _, p := range rt.Partitions {
				answered[rt.Topic] = append(answered[rt.Topic], p.ErrorCode)
			}
		}
		for _, rt := range fr.Topics {
			kept = append(kept, rt.Topic)
		}
		check("fetch", gr, kept, answered)

		gr = authorize(g, cr, none)
		cresp := &kmsg.CreateTopicsResponse{}
		if gr.finish != nil {
			gr.finish(cresp)
		}
		answered, kept = map[string][]int16{}, nil
		for _, rt := range cresp.Topics {
			if _, dup := answered[rt.Topic]; dup {
				t.Fatalf("create: topic %s answered twice", rt.Topic)
			}
			answered[rt.Topic] = []int16{rt.ErrorCode}
		}
		for _, rt := range cr.Topics {
			kept = append(kept, rt.Topic)
		}
		check("create", gr, kept, answered)
	})
}
