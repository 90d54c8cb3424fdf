package kafka_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/ststest"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/kafka"
	"github.com/stratalog/strata/pkg/kafka/awsauth"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// Tokens of testAuth's principals.
const (
	adminToken  = "admin-token-0123456789abcdef"
	readerToken = "reader-token-0123456789abcdef"
	writerToken = "writer-token-0123456789abcdef"
)

// testAuth is an auth file as `strata dev --auth` reads it: an admin of everything, a
// reader of topic orders in group billing, a writer of orders.
const testAuth = `{"principals": {
  "` + adminToken + `": {"name": "admin", "allow": [
    {"resource": "topic:*", "ops": ["create", "describe", "append", "read", "delete", "alter"]},
    {"resource": "group:*", "ops": ["consume", "describe", "reset", "delete"]}]},
  "` + readerToken + `": {"name": "reader", "allow": [
    {"resource": "topic:orders", "ops": ["describe", "read"]},
    {"resource": "group:billing", "ops": ["consume", "describe", "reset"]}]},
  "` + writerToken + `": {"name": "writer", "allow": [
    {"resource": "topic:orders", "ops": ["append"]}]}}}`

func startAuthGateway(t testing.TB, s backendtest.Stores, auth *kafka.Auth) *gateway {
	t.Helper()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	srv, err := kafka.New(kafka.Config{Log: l, Groups: coord, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &gateway{addr: ln.Addr().String(), log: l, coord: coord}
}

func tokenAuth(t testing.TB) *kafka.Auth {
	t.Helper()
	a, err := httpapi.ParseAuth([]byte(testAuth))
	if err != nil {
		t.Fatal(err)
	}
	return &kafka.Auth{Tokens: a}
}

func as(user, token string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: token}.AsMechanism())
}

func code(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return 0
}

// TestSASLPlainGrants: on both backends, each principal of the auth file may do what
// its grants allow and gets Kafka's authorization error for the rest, one refusal
// class at a time: produce, fetch, list offsets and Metadata (hidden when listing,
// refused when named) TOPIC_AUTHORIZATION_FAILED; create, delete and grow topics
// TOPIC_AUTHORIZATION_FAILED; commits, offset fetches and coordinators of a group
// without its grant GROUP_AUTHORIZATION_FAILED.
func TestSASLPlainGrants(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startAuthGateway(t, s, tokenAuth(t))
		ctx := ctxT(t)
		admin := kadm.NewClient(g.client(t, as("admin", adminToken)))
		createTopic(t, admin, "orders", 2)
		createTopic(t, admin, "secret", 1)

		writer := g.client(t, as("writer", writerToken), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := writer.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v1")}).FirstErr(); err != nil {
			t.Fatalf("writer's produce to orders: %v", err)
		}
		if err := writer.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr(); code(err) != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("writer's produce to secret: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}

		rd := g.client(t, as("reader", readerToken))
		if err := rd.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); code(err) != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("reader's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		r := dial(t, g.addr)
		authenticate(t, r, "reader", readerToken)
		fr := kmsg.NewPtrFetchRequest()
		fr.SetVersion(12)
		fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
		fr.Topics = []kmsg.FetchRequestTopic{
			{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}},
			{Topic: "secret", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}},
		}
		fresp := r.roundTrip(fr).(*kmsg.FetchResponse)
		got := map[string]int16{}
		for _, ft := range fresp.Topics {
			got[ft.Topic] = ft.Partitions[0].ErrorCode
		}
		if got["orders"] != 0 || got["secret"] != kerr.TopicAuthorizationFailed.Code || len(fresp.Topics) != 2 {
			t.Fatalf("reader's fetch codes %v", got)
		}
		if recs := fresp.Topics[0].Partitions[0].RecordBatches; fresp.Topics[0].Topic != "orders" || len(recs) == 0 {
			t.Fatalf("reader read no records of orders")
		}

		radm := kadm.NewClient(rd)
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.SetVersion(6)
		lo.ReplicaID = -1
		lo.Topics = []kmsg.ListOffsetsRequestTopic{
			{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}},
			{Topic: "secret", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}},
		}
		loresp := r.roundTrip(lo).(*kmsg.ListOffsetsResponse)
		for _, lt := range loresp.Topics {
			p := lt.Partitions[0]
			if lt.Topic == "orders" && (p.ErrorCode != 0 || p.Offset != 1) || lt.Topic == "secret" && p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.Fatalf("reader's end offset of %s: code %d offset %d", lt.Topic, p.ErrorCode, p.Offset)
			}
		}
		if len(loresp.Topics) != 2 {
			t.Fatalf("ListOffsets answered %d topics", len(loresp.Topics))
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		mresp := r.roundTrip(md).(*kmsg.MetadataResponse)
		if len(mresp.Topics) != 1 || *mresp.Topics[0].Topic != "orders" {
			t.Fatalf("reader's Metadata of every topic lists %d topics, want orders only", len(mresp.Topics))
		}
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("secret")}, {Topic: kmsg.StringPtr("nope")}, {Topic: kmsg.StringPtr("orders")}}
		mresp = r.roundTrip(md).(*kmsg.MetadataResponse)
		for _, mt := range mresp.Topics {
			want := kerr.TopicAuthorizationFailed.Code
			if *mt.Topic == "orders" {
				want = 0
			}
			if mt.ErrorCode != want || want != 0 && len(mt.Partitions) != 0 {
				t.Fatalf("reader's Metadata of %s: code %d with %d partitions", *mt.Topic, mt.ErrorCode, len(mt.Partitions))
			}
		}

		cr, err := radm.CreateTopic(ctx, 1, 1, nil, "mine")
		if code(cr.Err) != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("reader's create: %v %v", err, cr.Err)
		}
		dr, err := radm.DeleteTopics(ctx, "orders")
		if code(err) != kerr.TopicAuthorizationFailed.Code && code(dr["orders"].Err) != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("reader's delete: %v %v", err, dr["orders"].Err)
		}
		pr, err := radm.CreatePartitions(ctx, 1, "orders")
		if code(err) != kerr.TopicAuthorizationFailed.Code && code(pr["orders"].Err) != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("reader's create partitions: %v %v", err, pr["orders"].Err)
		}

		commit := func(grp string) map[string]int16 {
			oc := kmsg.NewPtrOffsetCommitRequest()
			oc.SetVersion(6)
			oc.Group, oc.Generation = grp, -1
			oc.Topics = []kmsg.OffsetCommitRequestTopic{
				{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
				{Topic: "secret", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}},
			}
			got := map[string]int16{}
			for _, ct := range r.roundTrip(oc).(*kmsg.OffsetCommitResponse).Topics {
				got[ct.Topic] = ct.Partitions[0].ErrorCode
			}
			return got
		}
		if got := commit("billing"); len(got) != 2 || got["orders"] != 0 || got["secret"] != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("reader's commit to billing: %v", got)
		}
		if got := commit("payroll"); len(got) != 2 || got["orders"] != kerr.GroupAuthorizationFailed.Code || got["secret"] != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("reader's commit to payroll: %v", got)
		}
		if _, err := radm.FetchOffsets(ctx, "payroll"); code(err) != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("reader's offset fetch of payroll: %v", err)
		}
		fo, err := radm.FetchOffsets(ctx, "billing")
		if o, _ := fo.Lookup("orders", 0); err != nil || o.At != 1 {
			t.Fatalf("reader's offset fetch of billing: %v %+v", err, fo)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.SetVersion(4)
		fc.CoordinatorKeys = []string{"billing", "payroll"}
		fcresp := r.roundTrip(fc).(*kmsg.FindCoordinatorResponse)
		if fcresp.Coordinators[0].ErrorCode != 0 || fcresp.Coordinators[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("reader's coordinators: %+v", fcresp.Coordinators)
		}
		// Nothing a refusal touched changed.
		if ts, err := g.log.ListTopics(ctx); err != nil || len(ts) != 2 {
			t.Fatalf("topics after the refusals: %v %v", ts, err)
		}
		if off, err := g.coord.Committed(ctx, "billing", "secret", 0); err == nil && off != nil {
			t.Fatalf("a refused commit of secret was stored at %d", *off)
		}
	})
}

// authenticate runs the SASL/PLAIN steps on a raw connection.
func authenticate(t testing.TB, r *raw, user, token string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = kafka.MechanismPlain
	if c := r.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode; c != 0 {
		t.Fatalf("handshake: code %d", c)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(2)
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + token)
	if resp := r.roundTrip(au).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
		t.Fatalf("authenticate: code %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
}

// TestSASLStates: before authentication only ApiVersions and the SASL steps in their
// order are served; anything else, an unknown mechanism, a wrong token or a malformed
// SASL message is answered with its error code and closes that connection only, while
// the gateway keeps serving others.
func TestSASLStates(t *testing.T) {
	g := startAuthGateway(t, backendtest.Local(context.Background(), t), tokenAuth(t))
	createTopic(t, kadm.NewClient(g.client(t, as("admin", adminToken))), "orders", 1)
	steady := g.client(t, as("writer", writerToken), kgo.DefaultProduceTopic("orders"))

	hs := func(mech string) *kmsg.SASLHandshakeRequest {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.SetVersion(1)
		r.Mechanism = mech
		return r
	}
	au := func(msg string) *kmsg.SASLAuthenticateRequest {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SetVersion(1)
		r.SASLAuthBytes = []byte(msg)
		return r
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	type step struct {
		req  kmsg.Request
		code int16
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"metadata first", []step{{md, kerr.IllegalSaslState.Code}}},
		{"authenticate first", []step{{au("\x00writer\x00" + writerToken), kerr.IllegalSaslState.Code}}},
		{"unknown mechanism", []step{{hs("SCRAM-SHA-256"), kerr.UnsupportedSaslMechanism.Code}}},
		{"metadata after handshake", []step{{hs("PLAIN"), 0}, {md, kerr.IllegalSaslState.Code}}},
		{"wrong token", []step{{hs("PLAIN"), 0}, {au("\x00writer\x00" + readerToken), kerr.SaslAuthenticationFailed.Code}}},
		{"wrong user", []step{{hs("PLAIN"), 0}, {au("\x00reader\x00" + writerToken), kerr.SaslAuthenticationFailed.Code}}},
		{"malformed PLAIN", []step{{hs("PLAIN"), 0}, {au("\x00\x00\x00\xff"), kerr.SaslAuthenticationFailed.Code}}},
		{"OAUTHBEARER not offered", []step{{hs("OAUTHBEARER"), kerr.UnsupportedSaslMechanism.Code}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dial(t, g.addr)
			av := kmsg.NewPtrApiVersionsRequest()
			av.SetVersion(3)
			if resp := r.roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
				t.Fatalf("ApiVersions before authentication: code %d", resp.ErrorCode)
			}
			for _, s := range c.steps {
				resp := r.roundTrip(s.req)
				if got := responseCode(resp); got != s.code {
					t.Fatalf("%s: code %d, want %d", kmsg.NameForKey(s.req.Key()), got, s.code)
				}
			}
			if !r.closed() {
				t.Fatal("the connection stayed open")
			}
			if err := steady.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(c.name)}).FirstErr(); err != nil {
				t.Fatalf("another connection's produce: %v", err)
			}
		})
	}

	// A Metadata of every topic first gets no answer (an empty one would look like an
	// empty cluster) and the connection closes.
	r0 := dial(t, g.addr)
	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(9)
	if _, err := r0.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, all, 1)); err != nil {
		t.Fatal(err)
	}
	if !r0.closed() {
		t.Fatal("a Metadata of every topic before authentication was answered or left open")
	}

	// A truncated SaslAuthenticate frame closes its connection without an answer.
	r := dial(t, g.addr)
	if c := r.roundTrip(hs("PLAIN")).(*kmsg.SASLHandshakeResponse).ErrorCode; c != 0 {
		t.Fatal(c)
	}
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, au("\x00writer\x00"+writerToken), 2)
	frame = frame[:len(frame)-10]
	frame[0], frame[1], frame[2], frame[3] = 0, 0, 0, byte(len(frame)-4)
	if _, err := r.c.Write(frame); err != nil {
		t.Fatal(err)
	}
	if !r.closed() {
		t.Fatal("a truncated SaslAuthenticate left the connection open")
	}

	// Once authenticated, another handshake is ILLEGAL_SASL_STATE and the connection
	// keeps serving.
	r = dial(t, g.addr)
	authenticate(t, r, "writer", writerToken)
	if c := r.roundTrip(hs("PLAIN")).(*kmsg.SASLHandshakeResponse).ErrorCode; c != kerr.IllegalSaslState.Code {
		t.Fatalf("a second handshake: code %d", c)
	}
	if resp := r.roundTrip(produceReq(9, "orders", 0, batchOf("after"))); produceCode(resp) != 0 {
		t.Fatalf("produce after a second handshake: code %d", produceCode(resp))
	}
	if err := steady.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func responseCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.SASLHandshakeResponse:
		return r.ErrorCode
	case *kmsg.SASLAuthenticateResponse:
		return r.ErrorCode
	case *kmsg.MetadataResponse:
		return r.Topics[0].ErrorCode
	}
	return -1
}

// TestSASLOAuthBearerIAM: on the emulator, a franz-go client sending awsauth's
// presigned GetCallerIdentity as its OAUTHBEARER token is authenticated as its
// assumed role and gets the stack's grants for that ARN (lambdafn.Principals, as the
// api function): the billing role may produce to orders; a caller no grant matches
// is authenticated but refused.
func TestSASLOAuthBearerIAM(t *testing.T) {
	ctx := ctxT(t)
	emu := awstest.Endpoint(t)
	relay := ststest.Relay(t)
	grants, err := deploy.ParseGrants(`{"arn:aws:sts::123456789012:assumed-role/billing/*": [{"resource": "topic:orders", "ops": ["create", "append", "read", "describe"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := lambdafn.NewPrincipals(grants)
	if err != nil {
		t.Fatal(err)
	}
	auth := &kafka.Auth{IAM: &kafka.IAMAuth{
		Verifier:  &awsauth.Verifier{Endpoint: relay, Audience: "strata-test"},
		Grants:    func(arn string) kafka.Grants { return ps.Principal(arn) },
		KeyCaller: lambdafn.KeyCaller,
	}}
	g := startAuthGateway(t, backendtest.Local(context.Background(), t), auth)
	static := credentials.NewStaticCredentialsProvider("test", "test", "")
	base := aws.Config{Region: "us-east-1", Credentials: static}
	out, err := sts.NewFromConfig(base, func(o *sts.Options) { o.BaseEndpoint = aws.String(emu) }).AssumeRole(ctx,
		&sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::123456789012:role/billing"), RoleSessionName: aws.String("kafka")})
	if err != nil {
		t.Fatal(err)
	}
	role := base.Copy()
	role.Credentials = credentials.NewStaticCredentialsProvider(*out.Credentials.AccessKeyId, *out.Credentials.SecretAccessKey, *out.Credentials.SessionToken)
	opts := awsauth.Options{Audience: "strata-test", STS: []func(*sts.Options){func(o *sts.Options) { o.BaseEndpoint = aws.String(relay) }}}

	cl := g.client(t, kgo.SASL(awsauth.Mechanism(role, opts)), kgo.DefaultProduceTopic("orders"))
	createTopic(t, kadm.NewClient(cl), "orders", 1)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("by role")}).FirstErr(); err != nil {
		t.Fatalf("the billing role's produce: %v", err)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "orders")
	if o, _ := ends.Lookup("orders", 0); err != nil || o.Offset != 1 {
		t.Fatalf("end offset after the role's produce: %+v %v", o, err)
	}

	other := g.client(t, kgo.SASL(awsauth.Mechanism(base, opts)), kgo.DefaultProduceTopic("orders"))
	if err := other.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); code(err) != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("an ungranted caller's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// A token for another STS endpoint than the gateway's fails authentication.
	elsewhere, err := awsauth.Token(ctx, role, awsauth.Options{Audience: "strata-test", STS: []func(*sts.Options){func(o *sts.Options) { o.BaseEndpoint = aws.String(emu) }}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{elsewhere, "not-a-token"} {
		r := dial(t, g.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = kafka.MechanismOAuthBearer
		if c := r.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode; c != 0 {
			t.Fatal(c)
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SetVersion(2)
		au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + tok + "\x01\x01")
		if c := r.roundTrip(au).(*kmsg.SASLAuthenticateResponse).ErrorCode; c != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("token %.20q: code %d, want SASL_AUTHENTICATION_FAILED", tok, c)
		}
		if !r.closed() {
			t.Fatal("a failed authentication left the connection open")
		}
	}
}
