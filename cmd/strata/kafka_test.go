package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/stratalog/strata/internal/ststest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/kafka/awsauth"
)

// TestDevKafka: `strata dev --kafka` serves the Kafka protocol beside the HTTP API on
// one data directory: a record produced with franz-go is read over HTTP, one appended
// over HTTP is fetched with franz-go, and the command exits cleanly when cancelled.
func TestDevKafka(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"dev", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka", "127.0.0.1:0", "--console=false", "--retention-interval", "1h"})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	lines := regexp.MustCompile(`(?s)^listening on (http://127\.0\.0\.1:[0-9]+)\nkafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = lines.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata dev printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	c, err := client.New(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "both", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[2]), kgo.DefaultProduceTopic("both"), kgo.ConsumeTopics("both"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Key: []byte("k"), Value: []byte("from kafka")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, "both", []client.Record{{Value: []byte("from http")}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Poll(ctx, "both", 0, 0, client.PollOptions{})
	if err != nil || len(res.Records) != 2 || string(res.Records[0].Value) != "from kafka" || string(res.Records[0].Key) != "k" {
		t.Fatalf("HTTP poll: %+v, %v", res, err)
	}
	var got []string
	for len(got) < 2 && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[1] != "from http" {
		t.Fatalf("franz-go read %q", got)
	}
	cl.Close()
	// A group member reads both through the gateway's group protocol and commits them
	// as the group's Strata commit.
	gcl, err := kgo.NewClient(kgo.SeedBrokers(m[2]), kgo.ConsumerGroup("dev-group"), kgo.ConsumeTopics("both"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for len(got) < 2 && pctx.Err() == nil {
		fs := gcl.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if err := gcl.CommitUncommittedOffsets(pctx); err != nil || len(got) != 2 {
		t.Fatalf("group member read %q, commit: %v", got, err)
	}
	gcl.Close()
	if g, err := c.DescribeGroup(ctx, "dev-group"); err != nil || len(g.Partitions) != 1 || g.Partitions[0].CommittedOffset == nil || *g.Partitions[0].CommittedOffset != 2 {
		t.Fatalf("Strata's describe of the Kafka group: %+v, %v", g, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata dev exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata dev still running 10 s after cancel")
	}
}

// TestDevKafkaAuth: with --auth, strata dev --kafka requires SASL/PLAIN with the auth
// file's tokens and enforces its grants: the principal may produce to its topic and
// gets TOPIC_AUTHORIZATION_FAILED on another; a client without SASL is refused.
func TestDevKafkaAuth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	authFile := filepath.Join(t.TempDir(), "auth.json")
	const token = "kafka-token-0123456789abcdef"
	if err := os.WriteFile(authFile, []byte(`{"principals": {"`+token+`": {"name": "svc", "allow": [
		{"resource": "topic:mine", "ops": ["create", "describe", "append", "read"]}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"dev", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka", "127.0.0.1:0", "--auth", authFile, "--console=false", "--retention-interval", "1h"})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	lines := regexp.MustCompile(`(?s)^listening on (http://127\.0\.0\.1:[0-9]+)\nkafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = lines.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata dev printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[2]), kgo.SASL(plain.Auth{User: "svc", Pass: token}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, name := range []string{"mine", "theirs"} {
		resp, err := adm.CreateTopic(pctx, 1, 1, nil, name)
		want := name == "theirs"
		if refused := errors.Is(resp.Err, kerr.TopicAuthorizationFailed); refused != want || !want && (err != nil || resp.Err != nil) {
			t.Fatalf("create %s: %v %v", name, err, resp.Err)
		}
	}
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "mine", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to mine: %v", err)
	}
	anon, err := kgo.NewClient(kgo.SeedBrokers(m[2]), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	defer acancel()
	if _, err := kadm.NewClient(anon).ListTopics(actx); err == nil {
		t.Fatal("a client without SASL listed topics")
	}
	cl.Close()
	anon.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata dev exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata dev still running 10 s after cancel")
	}
}

// TestKafkaCommand: `strata kafka` opens the node on its data directory, announces its
// address, serves topic administration, produce and fetch, and exits cleanly when
// cancelled.
func TestKafkaCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"kafka", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--default-partitions", "2"})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	line := regexp.MustCompile(`^kafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = line.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata kafka printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.DefaultProduceTopic("k"), kgo.ConsumeTopics("k"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	resp, err := kadm.NewClient(cl).CreateTopic(pctx, -1, -1, nil, "k")
	if err != nil || resp.Err != nil || resp.NumPartitions != 2 {
		t.Fatalf("create: %+v %v", resp, err)
	}
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got []*kgo.Record
	for len(got) < 1 && pctx.Err() == nil {
		got = append(got, cl.PollFetches(pctx).Records()...)
	}
	if len(got) != 1 || string(got[0].Value) != "v" {
		t.Fatalf("read %+v", got)
	}
	cl.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata kafka exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata kafka still running 10 s after cancel")
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key as PEM files
// and returns their paths and a pool trusting it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestKafkaCommandTLSAuth: strata kafka --tls-cert --tls-key --auth serves SASL/PLAIN
// over TLS (a client's SASL_SSL): a client trusting the certificate authenticates,
// creates a topic and produces; a plaintext client gets nothing.
func TestKafkaCommandTLSAuth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	certFile, keyFile, pool := selfSigned(t)
	authFile := filepath.Join(t.TempDir(), "auth.json")
	const token = "kafka-token-0123456789abcdef"
	if err := os.WriteFile(authFile, []byte(`{"principals": {"`+token+`": {"name": "svc", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"kafka", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--auth", authFile, "--tls-cert", certFile, "--tls-key", keyFile})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	line := regexp.MustCompile(`^kafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = line.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata kafka printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(plain.Auth{User: "svc", Pass: token}.AsMechanism()), kgo.DefaultProduceTopic("secure"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := kadm.NewClient(cl).CreateTopic(pctx, 1, 1, nil, "secure"); err != nil || resp.Err != nil {
		t.Fatalf("create over TLS: %v %v", err, resp.Err)
	}
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	plainCl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.RequestRetries(0), kgo.SASL(plain.Auth{User: "svc", Pass: token}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer plainCl.Close()
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	defer acancel()
	if _, err := kadm.NewClient(plainCl).ListTopics(actx); err == nil {
		t.Fatal("a plaintext client was served by the TLS listener")
	}
	cl.Close()
	plainCl.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata kafka exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata kafka still running 10 s after cancel")
	}
}

// TestKafkaCommandIAM: strata kafka --iam authenticates OAUTHBEARER tokens presigned
// with awsauth against --sts-endpoint (the emulator's STS through ststest.Relay) and
// gives the caller the grants STRATA_GRANTS gives its ARN.
func TestKafkaCommandIAM(t *testing.T) {
	relay := ststest.Relay(t)
	t.Setenv("STRATA_GRANTS", `{"arn:aws:**": [{"resource": "topic:iam*", "ops": ["create", "describe", "append", "read"]}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"kafka", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--iam", "--sts-endpoint", relay, "--iam-audience", "strata-test"})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	line := regexp.MustCompile(`^kafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = line.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata kafka printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	mech := awsauth.Mechanism(awsCfg, awsauth.Options{Audience: "strata-test", STS: []func(*sts.Options){func(o *sts.Options) { o.BaseEndpoint = aws.String(relay) }}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.SASL(mech))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(pctx, 1, 1, nil, "iam-orders"); err != nil || resp.Err != nil {
		t.Fatalf("create iam-orders: %v %v", err, resp.Err)
	}
	if resp, _ := adm.CreateTopic(pctx, 1, 1, nil, "other"); !errors.Is(resp.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create other: %v, want TOPIC_AUTHORIZATION_FAILED", resp.Err)
	}
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "iam-orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata kafka exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata kafka still running 10 s after cancel")
	}
}
