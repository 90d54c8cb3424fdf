package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// seen records every (route pattern, status) any test's server answered, for the
// OpenAPI coverage check in TestMain.
var seen = &routeRecorder{pairs: map[string]bool{}}

type routeRecorder struct {
	mu    sync.Mutex
	pairs map[string]bool
	codes map[string]bool // error codes answered through env.call
}

func (r *routeRecorder) code(c string) {
	r.mu.Lock()
	if r.codes == nil {
		r.codes = map[string]bool{}
	}
	r.codes[c] = true
	r.mu.Unlock()
}

// Request implements httpapi.Metrics.
func (r *routeRecorder) Request(route string, status int, _ time.Duration) {
	r.mu.Lock()
	r.pairs[fmt.Sprintf("%s %d", route, status)] = true
	r.mu.Unlock()
}

func (r *routeRecorder) has(pair string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pairs[pair]
}

// TestMain runs the tests, then, when the whole suite ran (no -run, -skip or -fuzz),
// fails unless every route and status docs/openapi.yaml lists was answered by a test.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	full := true
	for _, f := range []string{"test.run", "test.skip", "test.fuzz", "test.list"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" {
			full = false
		}
	}
	if code == 0 && full {
		if missing, err := openAPIMissing(); err != nil {
			fmt.Fprintln(os.Stderr, "openapi coverage:", err)
			code = 1
		} else if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "openapi coverage: no test exercised these documented route+status pairs:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// openAPIMissing lists the documented "METHOD /path STATUS" pairs no test produced,
// and the routes the server answered on that the document lacks.
func openAPIMissing() ([]string, error) {
	doc, err := loadOpenAPI()
	if err != nil {
		return nil, err
	}
	var missing []string
	documented := map[string]bool{"unmatched": true}
	for _, op := range doc.operations() {
		documented[op.method+" "+op.path] = true
		for _, status := range op.statuses {
			pair := fmt.Sprintf("%s %s %s", op.method, op.path, status)
			if !seen.has(pair) {
				missing = append(missing, pair)
			}
		}
	}
	seen.mu.Lock()
	for _, codes := range codesByStatus {
		for c := range codes {
			if !seen.codes[c] {
				missing = append(missing, "error code never answered: "+c)
			}
		}
	}
	for pair := range seen.pairs {
		route := pair[:strings.LastIndexByte(pair, ' ')]
		if !documented[route] {
			missing = append(missing, "served but not documented: "+route)
		}
	}
	seen.mu.Unlock()
	sort.Strings(missing)
	return missing, nil
}

// faultyMeta is the real metadata store with switchable failures: any operation fails
// with store.ErrUnavailable while down is set, and the sequencer's commit fails for the
// partitions in failPartitions.
type faultyMeta struct {
	store.MetaStore
	down atomic.Bool
	// corruptSkip makes every index entry read carry a skip run that cannot be parsed.
	corruptSkip atomic.Bool
	// supersede makes every commit fail as a producer request's attempt another
	// delivery of it fenced (store.ErrSuperseded).
	supersede      atomic.Bool
	mu             sync.Mutex
	failPartitions map[int32]bool
}

func (f *faultyMeta) fail() error {
	if f.down.Load() {
		return fmt.Errorf("injected: %w", store.ErrUnavailable)
	}
	return nil
}

func (f *faultyMeta) failPartition(p int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failPartitions[p]
}

func (f *faultyMeta) CreateTopic(ctx context.Context, t store.Topic) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.CreateTopic(ctx, t)
}

func (f *faultyMeta) GetTopic(ctx context.Context, name string) (store.Topic, error) {
	if err := f.fail(); err != nil {
		return store.Topic{}, err
	}
	return f.MetaStore.GetTopic(ctx, name)
}

func (f *faultyMeta) ListTopics(ctx context.Context) ([]string, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.MetaStore.ListTopics(ctx)
}

func (f *faultyMeta) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	if err := f.fail(); err != nil {
		return store.SeqCommit{}, err
	}
	if f.failPartition(c.Entry.Partition) {
		return store.SeqCommit{}, fmt.Errorf("injected for partition %d: %w", c.Entry.Partition, store.ErrUnavailable)
	}
	return f.MetaStore.Sequence(ctx, c)
}

// SequenceBatch fails as Sequence does; a failing partition fails a topic commit whole
// (one write), a legacy topic's batch only its own commit.
func (f *faultyMeta) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	out, errs := make([]store.SeqCommit, len(cs)), make([]error, len(cs))
	if len(cs) > 0 && store.TopicCommits(cs[0].Entry.Topic) {
		ferr := f.fail()
		if ferr == nil && f.supersede.Load() {
			ferr = fmt.Errorf("injected: %w", store.ErrSuperseded)
		}
		for _, c := range cs {
			if ferr == nil && f.failPartition(c.Entry.Partition) {
				ferr = fmt.Errorf("injected for partition %d: %w", c.Entry.Partition, store.ErrUnavailable)
			}
		}
		if ferr == nil {
			return f.MetaStore.SequenceBatch(ctx, cs)
		}
		for i := range errs {
			errs[i] = ferr
		}
		return out, errs
	}
	for i, c := range cs {
		out[i], errs[i] = f.Sequence(ctx, c)
	}
	return out, errs
}

func (f *faultyMeta) Sequencer(ctx context.Context, topic string, p int32) (store.SeqState, error) {
	if err := f.fail(); err != nil {
		return store.SeqState{}, err
	}
	return f.MetaStore.Sequencer(ctx, topic, p)
}

func (f *faultyMeta) SequencerEventual(ctx context.Context, topic string, p int32) (store.SeqState, error) {
	if err := f.fail(); err != nil {
		return store.SeqState{}, err
	}
	return f.MetaStore.SequencerEventual(ctx, topic, p)
}

func (f *faultyMeta) GetGroup(ctx context.Context, name string) (store.GroupConfig, error) {
	if err := f.fail(); err != nil {
		return store.GroupConfig{}, err
	}
	return f.MetaStore.GetGroup(ctx, name)
}

func (f *faultyMeta) AcquireLease(ctx context.Context, g, topic string, p int32, member string, now, exp time.Time) (store.Assignment, error) {
	if err := f.fail(); err != nil {
		return store.Assignment{}, err
	}
	return f.MetaStore.AcquireLease(ctx, g, topic, p, member, now, exp)
}

func (f *faultyMeta) RenewLease(ctx context.Context, g, topic string, p int32, member string, gen int64, exp time.Time) (store.Assignment, error) {
	if err := f.fail(); err != nil {
		return store.Assignment{}, err
	}
	return f.MetaStore.RenewLease(ctx, g, topic, p, member, gen, exp)
}

func (f *faultyMeta) ReleaseLease(ctx context.Context, g, topic string, p int32, member string, gen int64) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.ReleaseLease(ctx, g, topic, p, member, gen)
}

func (f *faultyMeta) Commit(ctx context.Context, c store.CommitRow, member string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.Commit(ctx, c, member)
}

func (f *faultyMeta) ResetCommits(ctx context.Context, g, topic string, offsets map[int32]int64, now time.Time) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.ResetCommits(ctx, g, topic, offsets, now)
}

// corruptObjects returns garbage for every ranged read while on is set.
type corruptObjects struct {
	store.ObjectStore
	on atomic.Bool
}

func (c *corruptObjects) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := c.ObjectStore.GetRange(ctx, key, off, n)
	if err == nil && c.on.Load() {
		b = bytes.Repeat([]byte{0xff}, len(b))
	}
	return b, err
}

// env is a server over real pkg/log and pkg/group on the embedded backend (files and
// bbolt), with switchable faults in front of the stores.
type env struct {
	t       testing.TB
	h       http.Handler
	log     *log.Log
	meta    *faultyMeta
	objects *corruptObjects
	clock   *clocktest.Clock
}

// tid is the store key (store.TopicID) of the live incarnation of topic name: what the
// per-partition rows and the groups' leases and commits are keyed by. An unknown topic
// yields "" (which names no row), so it is safe inside fuzz functions.
func (e *env) tid(name string) string {
	id, _ := e.log.TopicID(context.Background(), name)
	return id
}

type option func(*httpapi.Config)

func withAuth(a *httpapi.Authorizer) option { return func(c *httpapi.Config) { c.Auth = a } }
func withQuota(q httpapi.Quota) option      { return func(c *httpapi.Config) { c.Quota = q } }
func withMetricsHandler(h http.Handler) option {
	return func(c *httpapi.Config) { c.MetricsHandler = h }
}

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	st := backendtest.Local(context.Background(), t)
	e := &env{
		t:       t,
		meta:    &faultyMeta{MetaStore: st.Meta, failPartitions: map[int32]bool{}},
		objects: &corruptObjects{ObjectStore: st.Objects},
		clock:   clocktest.New(time.Now()),
	}
	var err error
	e.log, err = log.New(log.Config{Objects: e.objects, Meta: e.meta, RecheckInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := httpapi.Config{
		// Tests present wrong tokens on purpose, far more often than a client would;
		// TestAuthFailuresSlowedPerClient turns the limit on.
		AuthFailures: httpapi.AuthFailureLimit{FailuresPerSecond: -1},
		Log:          e.log,
		Groups:       group.New(e.meta, e.log, e.clock.Now),
		Metrics:      seen,
		MetricsHandler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte("strata_test 1\n"))
		}),
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.h = httpapi.New(cfg)
	return e
}

// resp is an answer, its body decoded as JSON when it is JSON.
type resp struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// errCode returns error.code of an error body.
func (r *resp) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r *resp) errField(name string) any {
	e, _ := r.body["error"].(map[string]any)
	return e[name]
}

func (r *resp) num(name string) int64 {
	f, ok := r.body[name].(float64)
	if !ok {
		panic(fmt.Sprintf("%q is not a number in %s", name, r.raw))
	}
	return int64(f)
}

// call sends a request; body is a string (sent as is), nil, or a value sent as JSON.
// Header pairs follow as "Name", "value". Every non-2xx answer is checked for the
// error body shape.
func (e *env) call(method, path string, body any, header ...string) *resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	// A body is JSON unless the test says otherwise (a nil header value removes it).
	if rd != nil && req.Header.Values("Content-Type") == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	r := &resp{status: w.Code, header: w.Header(), raw: w.Body.Bytes()}
	if len(r.raw) > 0 && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(r.raw, &r.body); err != nil {
			e.t.Errorf("%s %s: answer is not a JSON object: %v: %q", method, path, err, r.raw)
		}
	}
	if r.status >= 300 {
		if msg := errorShape(r.status, r.raw); msg != "" {
			e.t.Errorf("%s %s: %s", method, path, msg)
		}
		seen.code(r.errCode())
	}
	e.checkDocumented(req, r)
	return r
}

// checkDocumented fails the test unless the answer's status is documented for its
// operation in docs/openapi.yaml and its JSON body matches the documented schema.
func (e *env) checkDocumented(req *http.Request, r *resp) {
	e.t.Helper()
	doc, err := loadOpenAPI()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, ok := doc.find(req.Method, req.URL.Path); !ok && (r.status == http.StatusNotFound || r.status == http.StatusMethodNotAllowed) {
		return // no such route: the fallback answered
	}
	var body any
	if r.body != nil {
		body = map[string]any(r.body)
	}
	if err := doc.checkAnswer(req.Method, req.URL.Path, r.status, r.header.Get("Content-Type"), body, len(r.raw) > 0); err != nil {
		e.t.Errorf("answer does not match docs/openapi.yaml: %v\n%s", err, truncate(r.raw))
	}
}

func truncate(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "…"
	}
	return string(b)
}

// errorShape returns "" when raw is the contract's error body for status.
func errorShape(status int, raw []byte) string {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return fmt.Sprintf("status %d with a non-JSON body %q", status, raw)
	}
	var eo map[string]any
	if err := json.Unmarshal(body["error"], &eo); err != nil {
		return fmt.Sprintf("status %d without an error object: %s", status, raw)
	}
	code, _ := eo["code"].(string)
	msg, _ := eo["message"].(string)
	if code == "" || msg == "" {
		return fmt.Sprintf("status %d: error object lacks code or message: %s", status, raw)
	}
	want, ok := codesByStatus[status]
	if !ok || !want[code] {
		return fmt.Sprintf("status %d with code %q is not in the contract", status, code)
	}
	for k := range body {
		if k != "error" && !((k == "results" || k == "blocks") && status == http.StatusServiceUnavailable) {
			return fmt.Sprintf("status %d: unexpected top-level member %q: %s", status, k, raw)
		}
	}
	return ""
}

// codesByStatus is the Errors table of docs/API.md.
var codesByStatus = map[int]map[string]bool{
	400: {"invalid_request": true},
	408: {"unavailable": true},
	401: {"unauthorized": true},
	403: {"forbidden": true},
	404: {"not_found": true, "key_deleted": true},
	405: {"method_not_allowed": true},
	415: {"unsupported_media_type": true},
	409: {"topic_exists": true, "lease_held": true, "fenced": true, "superseded": true, "stale_commit": true, "group_active": true, "kafka_group": true},
	413: {"payload_too_large": true},
	416: {"offset_out_of_range": true},
	422: {"idempotency_key_reused": true, "beyond_high_watermark": true},
	429: {"rate_limited": true},
	500: {"internal": true},
	503: {"unavailable": true},
}

// want fails the test unless r has the status (and, for errors, the code).
func (r *resp) want(t testing.TB, status int, code ...string) *resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if len(code) > 0 && r.errCode() != code[0] {
		t.Fatalf("code %q, want %q: %s", r.errCode(), code[0], r.raw)
	}
	return r
}

func (e *env) createTopic(name string, partitions int) {
	e.t.Helper()
	e.call("POST", "/v1/topics", map[string]any{"name": name, "partitions": partitions}).want(e.t, http.StatusCreated)
}

// createLegacyTopic creates a topic of the per-partition counter layout (an incarnation
// without store.TopicCommitPrefix, as topics created before the topic commit have),
// whose partitions commit one by one and so can fail one by one.
func (e *env) createLegacyTopic(name string, partitions int32) {
	e.t.Helper()
	now := time.Now().Truncate(time.Millisecond)
	if err := e.meta.MetaStore.CreateTopic(context.Background(), store.Topic{Name: name, Incarnation: "01legacy",
		Partitions: partitions, Retention: 24 * time.Hour, CreatedAt: now}); err != nil {
		e.t.Fatal(err)
	}
}

// hw returns the partition's high watermark, read from the log directly.
func (e *env) hw(topic string, p int32) int64 {
	e.t.Helper()
	info, err := e.log.DescribeTopic(context.Background(), topic)
	if err != nil {
		e.t.Fatal(err)
	}
	return info.Partitions[p].HighWatermark
}

// hws returns every partition's high watermark.
func (e *env) hws(topic string) []int64 {
	e.t.Helper()
	info, err := e.log.DescribeTopic(context.Background(), topic)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]int64, len(info.Partitions))
	for i, p := range info.Partitions {
		out[i] = p.HighWatermark
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// The parked-key operations pass through to the store (every backend keeps them).
func (f *faultyMeta) parks() store.ParkStore { return f.MetaStore.(store.ParkStore) }

func (f *faultyMeta) PutParked(ctx context.Context, p store.ParkedKey, member string, generation int64) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.parks().PutParked(ctx, p, member, generation)
}

func (f *faultyMeta) DeleteParked(ctx context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.parks().DeleteParked(ctx, group, topic, partition, key, member, generation)
}

func (f *faultyMeta) RequestRelease(ctx context.Context, group, topic string, partition int32, key []byte, at time.Time) (store.ParkedKey, error) {
	if err := f.fail(); err != nil {
		return store.ParkedKey{}, err
	}
	return f.parks().RequestRelease(ctx, group, topic, partition, key, at)
}

func (f *faultyMeta) ListParked(ctx context.Context, group string) ([]store.ParkedKey, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.parks().ListParked(ctx, group)
}

func (f *faultyMeta) ListParkedPartition(ctx context.Context, group, topic string, partition int32) ([]store.ParkedKey, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.parks().ListParkedPartition(ctx, group, topic, partition)
}

// GetBarrier and SwapBarrier pass the Kafka barrier rows through, so the coordinator
// sees a group's Kafka members as it does over a real store.
func (f *faultyMeta) GetBarrier(ctx context.Context, g string) (store.Barrier, error) {
	return f.MetaStore.(store.GroupBarrierStore).GetBarrier(ctx, g)
}

func (f *faultyMeta) SwapBarrier(ctx context.Context, g string, version int64, state []byte) (store.Barrier, error) {
	return f.MetaStore.(store.GroupBarrierStore).SwapBarrier(ctx, g, version, state)
}
