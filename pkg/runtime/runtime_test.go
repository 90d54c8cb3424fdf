package runtime_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// start opens a node on a free port and serves it until the test ends; stop shuts it
// down and reports Serve's result and how long the shutdown took.
func start(t *testing.T, cfg runtime.Config) (rt *runtime.Runtime, c *client.Client, stop func() (time.Duration, error)) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.RetentionInterval == 0 {
		cfg.RetentionInterval = -1
	}
	rt, err := runtime.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()
	stopped := false
	stop = func() (time.Duration, error) {
		if stopped {
			return 0, nil
		}
		stopped = true
		t0 := time.Now()
		cancel()
		err := <-done
		return time.Since(t0), errors.Join(err, rt.Close(context.Background()))
	}
	t.Cleanup(func() {
		if _, err := stop(); err != nil {
			t.Error(err)
		}
	})
	c, err = client.New(rt.URL())
	if err != nil {
		t.Fatal(err)
	}
	return rt, c, stop
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeMetricsAndRestart: the API and /metrics are served, the data survives a
// shutdown and reopening the directory, and a long poll in flight at shutdown answers
// at once instead of holding it.
func TestServeMetricsAndRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt, c, stop := start(t, runtime.Config{Node: node.Config{DataDir: dir}})
	if !strings.HasPrefix(rt.Addr(), "127.0.0.1:") || strings.HasSuffix(rt.Addr(), ":0") {
		t.Fatalf("Addr %q", rt.Addr())
	}
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p := int32(1)
	res, err := c.Append(ctx, "orders", []client.Record{{Key: []byte("k"), Value: []byte("v"), Partition: &p}}, client.AppendOptions{})
	if err != nil || res[0].Offset != 0 {
		t.Fatalf("append: %+v %v", res, err)
	}
	l, err := c.Lease(ctx, "billing", "orders", 1, "m1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, rt.URL()+"/metrics", "")
	for _, want := range []string{
		`strata_records_appended_total{topic="orders"} 1`,
		`strata_http_requests_total{code="201",route="POST /v1/topics"} 1`,
		`strata_rebalances_total{group="billing",topic="orders"} 1`,
		`strata_consumer_lag_records{group="billing",partition="1",topic="orders"} 1`,
		`strata_consumer_seconds_to_data_loss{group="billing",partition="1",topic="orders"} 8639`, // 24h less a few seconds
		`strata_commit_unindexed_age_seconds{partition="1",topic="orders"} 0`,
		"go_goroutines ",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics (%d) lacks %q:\n%s", code, want, body)
		}
	}
	if _, err := c.Commit(ctx, "billing", "orders", 1, "m1", l.Generation, 1); err != nil {
		t.Fatal(err)
	}

	type pollOutcome struct {
		res *client.PollResult
		err error
		at  time.Time
	}
	polled := make(chan pollOutcome, 1)
	go func() {
		r, err := c.Poll(ctx, "orders", 1, 1, client.PollOptions{Wait: 20 * time.Second})
		polled <- pollOutcome{r, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond) // let the poll start waiting
	took, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if took > time.Second {
		t.Fatalf("shutdown with a long poll in flight took %v", took)
	}
	po := <-polled
	if po.err != nil || len(po.res.Records) != 0 || po.res.HighWatermark != 1 {
		t.Fatalf("long poll in flight at shutdown: %+v, %v (want an empty 200)", po.res, po.err)
	}

	_, c2, _ := start(t, runtime.Config{Node: node.Config{DataDir: dir}})
	got, err := c2.Poll(ctx, "orders", 1, 0, client.PollOptions{})
	if err != nil || len(got.Records) != 1 || string(got.Records[0].Value) != "v" {
		t.Fatalf("after restart: %+v, %v", got, err)
	}
	g, err := c2.DescribeGroup(ctx, "billing")
	if err != nil || len(g.Partitions) != 1 || g.Partitions[0].CommittedOffset == nil || *g.Partitions[0].CommittedOffset != 1 {
		t.Fatalf("group after restart: %+v, %v", g, err)
	}
}

// TestShutdownFinishesInFlightRequest: an append whose body is still arriving when
// shutdown starts is completed and acknowledged.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	ctx := context.Background()
	rt, c, stop := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	body := `{"records": [{"value": "aW4tZmxpZ2h0"}]}`
	conn, err := net.Dial("tcp", rt.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/topics/t/records HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		len(body), body[:10])
	time.Sleep(50 * time.Millisecond) // the server has read the header: the request is in flight
	stopped := make(chan error, 1)
	go func() { _, err := stop(); stopped <- err }()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-stopped:
		t.Fatalf("shutdown returned (%v) with a request in flight", err)
	default:
	}
	if _, err := io.WriteString(conn, body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"offset":0`) {
		t.Fatalf("in-flight append answered %d %s", resp.StatusCode, b)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestAuth: with an auth file, API calls need a known token; health does not; /metrics
// needs a token whose principal has "metrics" on "cluster" (it names every topic and
// group, which the API hides from a principal without rights).
func TestAuth(t *testing.T) {
	ctx := context.Background()
	authFile := filepath.Join(t.TempDir(), "auth.json")
	err := os.WriteFile(authFile, []byte(`{"principals": {"s3cret-0123456789abcdef": {"name": "ops", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]}]},
		"prom-0123456789abcdefgh": {"name": "prometheus", "allow": [{"resource": "cluster", "ops": ["metrics"]}]}}}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	rt, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, AuthFile: authFile})
	if _, err := c.ListTopics(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("list without a token: %v", err)
	}
	authed, _ := client.New(rt.URL(), client.WithToken("s3cret-0123456789abcdef"))
	if _, err := authed.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := authed.Append(ctx, "t", []client.Record{{Value: []byte("v")}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := authed.DescribeGroup(ctx, "g"); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("describe a group without the grant: %v", err)
	}
	if code, _ := get(t, rt.URL()+"/v1/health", ""); code != 200 {
		t.Fatalf("/v1/health without a token: %d", code)
	}
	for _, c := range []struct {
		token string
		code  int
	}{{"", 401}, {"wrong", 401}, {"s3cret-0123456789abcdef", 403}, {"prom-0123456789abcdefgh", 200}} {
		code, body := get(t, rt.URL()+"/metrics", c.token)
		if code != c.code {
			t.Fatalf("/metrics with token %q: %d, want %d: %s", c.token, code, c.code, body)
		}
		if leaks := strings.Contains(body, `topic="t"`); leaks != (c.code == 200) {
			t.Fatalf("/metrics with token %q (%d) names topic t: %v: %s", c.token, code, leaks, body)
		}
	}
}

// TestNonCanonicalPaths: the assembled server (not only the API handler) answers a path
// with "//", "." or ".." segments 404 with the JSON error body, never a redirect, and a
// POST to such a path appends nothing (a client following a redirect would re-send it).
func TestNonCanonicalPaths(t *testing.T) {
	ctx := context.Background()
	rt, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	body := `{"records": [{"value": "dg==", "partition": 0}]}`
	for _, tc := range []struct{ method, path string }{
		{"POST", "//v1/topics/t/records"},
		{"POST", "/v1//topics/t/records"},
		{"POST", "/v1/topics/./t/records"},
		{"POST", "/v1/topics/x/../t/records"},
		{"POST", "/v1/topics/t/records/."},
		{"POST", "/v1/topics/t/records/"},
		{"POST", "/v1/topics/%2e%2e/t/records"},
		{"GET", "/v1/topics/t/partitions/0/../0/records?offset=0"},
		{"GET", "//metrics"},
		{"GET", "/./metrics"},
		{"GET", "/v1/./health"},
		{"GET", "//v1/topics"},
		{"OPTIONS", "*"},
	} {
		raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			tc.method, tc.path, len(body), body)
		code, hdr, got := rawRequest(t, rt.Addr(), raw)
		if code != http.StatusNotFound || hdr.Get("Location") != "" || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") ||
			!strings.Contains(got, `"code":"not_found"`) {
			t.Errorf("%s %s: %d Location=%q Content-Type=%q %q; want 404 with the JSON not_found body",
				tc.method, tc.path, code, hdr.Get("Location"), hdr.Get("Content-Type"), got)
		}
	}
	res, err := c.Poll(ctx, "t", 0, 0, client.PollOptions{})
	if err != nil || res.HighWatermark != 0 {
		t.Fatalf("after the refused requests the partition holds %+v, %v; want nothing appended", res, err)
	}
}

// rawRequest writes raw on a new connection to addr and reads one answer.
func rawRequest(t testing.TB, addr, raw string) (int, http.Header, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer to %.60q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestRetentionLoop: the loop advances the log start past expired records, and the
// passes show in the metrics.
func TestRetentionLoop(t *testing.T) {
	ctx := context.Background()
	rt, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, RetentionInterval: 100 * time.Millisecond})
	if _, err := c.CreateTopic(ctx, "short", client.TopicConfig{Partitions: 1, Retention: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, "short", []client.Record{{Value: []byte("a")}, {Value: []byte("b")}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		top, err := c.DescribeTopic(ctx, "short")
		if err != nil {
			t.Fatal(err)
		}
		if pi := top.PartitionInfo[0]; pi.LogStartOffset == 2 && pi.HighWatermark == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log start never advanced: %+v", top.PartitionInfo)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.Poll(ctx, "short", 0, 0, client.PollOptions{}); !errors.Is(err, client.ErrOffsetOutOfRange) {
		t.Fatalf("poll of an expired offset: %v", err)
	}
	// The pass records its metrics after it has moved the log start: wait for them.
	for {
		_, body := get(t, rt.URL()+"/metrics", "")
		if strings.Contains(body, `strata_retention_records_expired_total 2`) && strings.Contains(body, `strata_retention_runs_total{result="ok"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention metrics missing:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpenErrors: bad configurations fail cleanly and leave the data directory usable.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := runtime.Open(ctx, runtime.Config{Node: node.Config{Backend: "nope", DataDir: t.TempDir()}}); !errors.Is(err, runtime.ErrConfig) {
		t.Fatalf("unknown backend: %v", err)
	}
	if _, err := runtime.Open(ctx, runtime.Config{}); !errors.Is(err, runtime.ErrConfig) {
		t.Fatalf("no data dir: %v", err)
	}
	dir := t.TempDir()
	if _, err := runtime.Open(ctx, runtime.Config{Node: node.Config{DataDir: dir}, AuthFile: filepath.Join(dir, "missing.json")}); !errors.Is(err, runtime.ErrConfig) {
		t.Fatalf("missing auth file: %v", err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := runtime.Open(ctx, runtime.Config{Node: node.Config{DataDir: dir}, Addr: busy.Addr().String()}); err == nil {
		t.Fatal("opened on an address in use")
	}
	// Every failed Open closed the meta store, so the directory opens again at once.
	rt, err := runtime.Open(ctx, runtime.Config{Node: node.Config{DataDir: dir}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := rt.Addr()
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := rt.Serve(ctx); err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatal("the listener of a closed runtime still accepts connections")
	}
}

// TestAWSBackend runs the node on S3 and DynamoDB at the emulator, reached through
// AWS_ENDPOINT_URL as `strata dev --backend aws` is, with bootstrap creating the tables.
func TestAWSBackend(t *testing.T) {
	ctx := context.Background()
	emulatorEnv(t)
	dcfg := emulatedTables(t, "rt")
	_, c, _ := start(t, runtime.Config{Node: node.Config{Backend: node.BackendAWS,
		AWS: node.AWSConfig{Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, ObjectPrefix: "node/", Bootstrap: true}}})
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Append(ctx, "orders", []client.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")}}, client.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Poll(ctx, "orders", res[0].Partition, 0, client.PollOptions{})
	if err != nil || len(got.Records) != 2 || string(got.Records[1].Value) != "2" {
		t.Fatalf("poll: %+v, %v", got, err)
	}
	// The objects live under the configured key prefix.
	n := 0
	err = s3store.New(awstest.S3Client(ctx, t), dcfg.Bucket, "").List(ctx, "node/", func(store.ObjectInfo) error {
		n++
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("objects under node/: %d, %v", n, err)
	}
}

// emulatorEnv points the SDK's default configuration at the emulator through the
// environment, as `strata dev --backend aws` is pointed (AWS_ENDPOINT_URL, static test
// credentials), with no shared config or credentials files of the machine.
func emulatorEnv(t *testing.T) {
	ep := awstest.Endpoint(t)
	conf := t.TempDir()
	t.Setenv("AWS_ENDPOINT_URL", ep)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", awstest.Region)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(conf, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(conf, "credentials"))
}

// emulatedTables names a table prefix and a bucket of the test's own ("<kind>-<random>")
// on the emulator, and tears down whatever a node bootstraps under them when the test
// ends.
func emulatedTables(t *testing.T, kind string) dynamo.Config {
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	dcfg := dynamo.Config{TablePrefix: kind + "-" + id + "-", Bucket: kind + "-" + id}
	t.Cleanup(func() {
		_ = dynamo.Teardown(ctx, awstest.DynamoDBClient(ctx, t), dcfg)
		_ = s3store.DeleteBucket(ctx, awstest.S3Client(ctx, t), dcfg.Bucket)
	})
	return dcfg
}
