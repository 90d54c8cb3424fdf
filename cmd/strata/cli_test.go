package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/runtime"
)

// startNode runs an in-process Strata for the CLI to talk to; it stops when the test ends.
func startNode(t *testing.T, cfg runtime.Config) string {
	t.Helper()
	if cfg.Node.DataDir == "" {
		cfg.Node.DataDir = t.TempDir()
	}
	cfg.Addr, cfg.RetentionInterval = "127.0.0.1:0", -1
	rt, err := runtime.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := errors.Join(<-done, rt.Close(context.Background())); err != nil {
			t.Error(err)
		}
	})
	return rt.URL()
}

// syncBuffer is a bytes.Buffer safe to read while a command writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// cli runs the strata command tree with args, stdin, and the given context.
func cliCtx(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut syncBuffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// cli runs a command that must succeed and returns its stdout.
func cli(t *testing.T, url, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := cliCtx(context.Background(), stdin, append([]string{"--url", url}, args...)...)
	if err != nil {
		t.Fatalf("strata %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// cliErr runs a command that must fail and returns its error.
func cliErr(t *testing.T, url string, args ...string) error {
	t.Helper()
	_, _, err := cliCtx(context.Background(), "", append([]string{"--url", url}, args...)...)
	if err == nil {
		t.Fatalf("strata %s succeeded, want an error", strings.Join(args, " "))
	}
	return err
}

// consumeHeader is the first line of consume's text output.
const consumeHeader = "PARTITION\tOFFSET\tKEY\tVALUE\n"

var spaces = regexp.MustCompile(`[ \t]+`)

// rows splits table output into lines of single-space-separated cells.
func rows(out string) []string {
	var r []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		r = append(r, spaces.ReplaceAllString(strings.TrimSpace(l), " "))
	}
	return r
}

// firstTable is rows of out up to its first blank line: the first of several tables.
func firstTable(out string) []string {
	r := rows(out)
	for i, l := range r {
		if l == "" {
			return r[:i]
		}
	}
	return r
}

func TestTopicsCommands(t *testing.T) {
	url := startNode(t, runtime.Config{})
	out := cli(t, url, "", "topics", "create", "orders", "--partitions", "4", "--retention", "2h")
	if got := rows(out); len(got) != 2 || got[0] != "NAME PARTITIONS RETENTION RETENTION_PIN CLEANUP" || got[1] != "orders 4 2h0m0s - delete" {
		t.Fatalf("create:\n%s", out)
	}
	out = cli(t, url, "", "topics", "create", "pinned", "--retention", "1h", "--retention-pin", "6h")
	if got := rows(out); len(got) != 2 || got[1] != "pinned 4 1h0m0s 6h0m0s delete" {
		t.Fatalf("create --retention-pin:\n%s", out)
	}
	out = cli(t, url, "", "topics", "update", "pinned", "--retention-pin", "0")
	if got := rows(out); len(got) != 2 || got[1] != "pinned 4 1h0m0s - delete" {
		t.Fatalf("update --retention-pin 0:\n%s", out)
	}
	cli(t, url, "", "topics", "delete", "pinned")
	var created topicJSON
	out = cli(t, url, "", "topics", "create", "audit", "--json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Name != "audit" || created.Partitions != log.DefaultPartitions || created.RetentionMs != 86400000 {
		t.Fatalf("create --json: %s (%v)", out, err)
	}
	if err := cliErr(t, url, "topics", "create", "orders"); !errors.Is(err, client.ErrTopicExists) {
		t.Fatalf("create twice: %v", err)
	}
	if err := cliErr(t, url, "topics", "create", "bad/name"); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("bad name: %v", err)
	}
	if err := cliErr(t, url, "topics", "describe", "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("describe unknown: %v", err)
	}
	cli(t, url, "", "produce", "orders", "--partition", "2", "--value", "x")
	out = cli(t, url, "", "topics", "describe", "orders")
	want := []string{"NAME PARTITIONS RETENTION RETENTION_PIN CLEANUP", "orders 4 2h0m0s - delete", "", "PARTITION LOG_START HIGH_WATERMARK RECORDS",
		"0 0 0 0", "1 0 0 0", "2 0 1 1", "3 0 0 0"}
	if got := rows(out); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("describe:\n%s", out)
	}
	var described topicJSON
	out = cli(t, url, "", "--json", "topics", "describe", "orders")
	if err := json.Unmarshal([]byte(out), &described); err != nil || len(described.PartitionInfo) != 4 || described.PartitionInfo[2].HighWatermark != 1 {
		t.Fatalf("describe --json: %s (%v)", out, err)
	}
	if got := rows(cli(t, url, "", "topics", "list")); strings.Join(got, "|") != "NAME|audit|orders" {
		t.Fatalf("list: %q", got)
	}
	out = cli(t, url, "", "topics", "list", "--json")
	if strings.Join(strings.Fields(out), "") != `{"topics":["audit","orders"]}` {
		t.Fatalf("list --json: %s", out)
	}
	if err := cliErr(t, "http://127.0.0.1:1", "topics", "list"); !client.IsRetryable(err) {
		t.Fatalf("nothing listening: %v", err)
	}
}

// consumed parses `consume --json` output.
func consumed(t *testing.T, out string) []consumedJSON {
	t.Helper()
	var recs []consumedJSON
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var r consumedJSON
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("consume output %q: %v", out, err)
		}
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	return recs
}

func TestProduceConsumeGroups(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders", "--partitions", "3")

	lines := "alice:1\nbob:2\nalice:3\nno-key-here\n\ncarol:\xff\n"
	out := cli(t, url, lines, "produce", "orders", "--key-separator", ":", "--allow-unkeyed")
	got := rows(out)
	if len(got) != 6 || got[0] != "PARTITION OFFSET" {
		t.Fatalf("produce printed:\n%s", out)
	}
	out = cli(t, url, "", "produce", "orders", "--json", "--key", "bob", "--value", "4")
	var res produceResultJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("produce --json: %s (%v)", out, err)
	}

	recs := consumed(t, cli(t, url, "", "consume", "orders", "--group", "g1", "--until-caught-up", "--json"))
	if len(recs) != 6 {
		t.Fatalf("consumed %d records, want 6 (the blank line is skipped): %+v", len(recs), recs)
	}
	byValue := map[string]consumedJSON{}
	for _, r := range recs {
		v := "<b64>"
		if r.Value != nil {
			v = *r.Value
		}
		byValue[v] = r
	}
	if a1, a3, b4 := byValue["1"], byValue["3"], byValue["4"]; a1.Key == nil || *a1.Key != "alice" || a1.Partition != a3.Partition ||
		a3.Offset <= a1.Offset || b4.Partition != res.Partition || b4.Offset != res.Offset || *b4.Key != "bob" {
		t.Fatalf("records by value: %+v", byValue)
	}
	if r := byValue["no-key-here"]; r.Key != nil {
		t.Fatalf("unkeyed line got key %v", *r.Key)
	}
	if r, ok := byValue[""]; ok {
		t.Fatalf("the blank line became a record: %+v", r)
	}
	if r := byValue["<b64>"]; r.ValueBase64 == nil || *r.ValueBase64 != "/w==" || *r.Key != "carol" {
		t.Fatalf("binary value: %+v", r)
	}

	// The positions were committed: the group has nothing left.
	if out := cli(t, url, "", "consume", "orders", "--group", "g1", "--until-caught-up"); out != consumeHeader {
		t.Fatalf("second consume printed %q", out)
	}
	out = cli(t, url, "", "groups", "describe", "g1")
	got = firstTable(out)
	if len(got) != 4 || got[0] != "TOPIC PARTITION COMMITTED HIGH_WATERMARK LAG LAG_SECONDS TO_DATA_LOSS LOST PARKED OWNER GENERATION LEASE_EXPIRES" {
		t.Fatalf("groups describe:\n%s", out)
	}
	for _, r := range got[1:] {
		f := strings.Fields(r)
		if f[2] != f[3] || f[4] != "0" || f[6] != "-" || f[8] != "0" || f[9] != "-" || f[11] != "-" {
			t.Fatalf("group row %q: want committed = HW, no lag, no time to data loss, none parked, no live lease", r)
		}
	}
	var gj struct {
		Group      string               `json:"group"`
		Partitions []groupPartitionJSON `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(cli(t, url, "", "groups", "describe", "g1", "--json")), &gj); err != nil || gj.Group != "g1" || len(gj.Partitions) != 3 {
		t.Fatalf("groups describe --json: %+v %v", gj, err)
	}
	if err := cliErr(t, url, "groups", "describe", "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("describe unknown group: %v", err)
	}

	// Reset to earliest: everything is consumed again; to latest: nothing.
	out = cli(t, url, "", "groups", "reset", "g1", "--topic", "orders", "--to", "earliest", "--execute")
	if got := rows(out); strings.Join(got, "|") != "PARTITION CURRENT NEW|0 5 0|1 0 0|2 1 0" {
		t.Fatalf("reset to earliest:\n%s", out)
	}
	if recs := consumed(t, cli(t, url, "", "consume", "orders", "--group", "g1", "--until-caught-up", "--json")); len(recs) != 6 {
		t.Fatalf("after reset to earliest: %d records", len(recs))
	}
	cli(t, url, "", "groups", "reset", "g1", "--topic", "orders", "--to", "0", "--execute")
	cli(t, url, "", "groups", "reset", "g1", "--topic", "orders", "--to", "latest", "--execute")
	if out := cli(t, url, "", "consume", "orders", "--group", "g1", "--until-caught-up"); out != consumeHeader {
		t.Fatalf("after reset to latest: %q", out)
	}
	// Every record was appended before now: a reset to a later time goes to the end, to an
	// earlier time to the start.
	cli(t, url, "", "groups", "reset", "g1", "--topic", "orders", "--since", time.Now().Add(-time.Hour).Format(time.RFC3339), "--execute")
	out = cli(t, url, "", "groups", "reset", "g1", "--topic", "orders", "--json", "--since", time.Now().Add(time.Hour).Format(time.RFC3339Nano), "--execute")
	var rj struct {
		Partitions []struct {
			Partition       int32 `json:"partition"`
			CommittedOffset int64 `json:"new_offset"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(out), &rj); err != nil || len(rj.Partitions) != 3 {
		t.Fatalf("reset --json: %s %v", out, err)
	}
	total := int64(0)
	for _, p := range rj.Partitions {
		total += p.CommittedOffset
	}
	if total != 6 {
		t.Fatalf("reset to a future time: offsets %+v sum to %d, want 6", rj.Partitions, total)
	}
	if err := cliErr(t, url, "groups", "reset", "g1", "--topic", "orders", "--to", "99", "--execute"); !errors.Is(err, client.ErrOffsetOutOfRange) {
		t.Fatalf("reset beyond HW: %v", err)
	}
	for _, args := range [][]string{
		{"--to", "soon"}, {"--to", "-1"}, {"--since", "yesterday"}, {"--to", "earliest", "--since", "2024-01-01T00:00:00Z"}, {},
	} {
		cliErr(t, url, append([]string{"groups", "reset", "g1", "--topic", "orders"}, args...)...)
	}

	// A new group starting at the latest offset sees nothing of the past.
	if out := cli(t, url, "", "consume", "orders", "--group", "g2", "--from", "latest", "--until-caught-up"); out != consumeHeader {
		t.Fatalf("--from latest printed %q", out)
	}
	cliErr(t, url, "consume", "orders", "--group", "g3", "--from", "middle")
	cliErr(t, url, "consume", "orders", "--offset", "-1")
	cliErr(t, url, "consume", "orders", "--group", "g3", "--offset", "0")
	cliErr(t, url, "consume", "orders", "--group", "g3", "--partition", "3")
}

// TestConsumeFollowsAndCommitsOnInterrupt: consume follows new records like tail -f;
// cancelling it (Ctrl-C) commits what was printed and releases the leases.
func TestConsumeFollowsAndCommitsOnInterrupt(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "events", "--partitions", "2")
	cli(t, url, "a\nb\n", "produce", "events")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	cmd := newRootCmd()
	cmd.SetArgs([]string{"--url", url, "consume", "events", "--group", "tail", "--member", "cli-test"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(out.String(), "\n") < n {
			if time.Now().After(deadline) {
				t.Fatalf("consume printed %q, want %d lines (stderr %q)", out.String(), n, errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(3)
	cli(t, url, "c\td\n", "produce", "events", "--partition", "1")
	waitFor(4)
	if !strings.Contains(out.String(), "1\t1\t-\t\"c\\td\"\n") && !strings.Contains(out.String(), "\t-\t\"c\\td\"\n") {
		t.Fatalf("a value with a tab is not quoted: %q", out.String())
	}
	g := cli(t, url, "", "groups", "describe", "tail")
	if !strings.Contains(g, "cli-test") {
		t.Fatalf("while consuming, the member holds no lease:\n%s", g)
	}
	t0 := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("consume after Ctrl-C: %v (stderr %q)", err, errOut.String())
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("consume took %v to stop", d)
	}
	for _, r := range firstTable(cli(t, url, "", "groups", "describe", "tail"))[1:] {
		f := strings.Fields(r)
		if f[2] != f[3] || f[6] != "-" {
			t.Fatalf("after Ctrl-C, row %q: want committed = HW and the lease released", r)
		}
	}
}

// TestTokens: --token and STRATA_TOKEN reach a node with auth on.
func TestTokens(t *testing.T) {
	authFile := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"principals": {"tok-0123456789abcdefghij": {"name": "ops", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe"]}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startNode(t, runtime.Config{AuthFile: authFile})
	t.Setenv(envToken, "")
	if err := cliErr(t, url, "topics", "list"); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("no token: %v", err)
	}
	cli(t, url, "", "--token", "tok-0123456789abcdefghij", "topics", "create", "t1")
	t.Setenv(envToken, "tok-0123456789abcdefghij")
	t.Setenv(envURL, url)
	out, _, err := cliCtx(context.Background(), "", "topics", "list")
	if err != nil || !strings.Contains(out, "t1") {
		t.Fatalf("with %s and %s: %q %v", envToken, envURL, out, err)
	}
	if err := cliErr(t, url, "produce", "t1", "--value", "x"); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("produce without the append grant: %v", err)
	}
}

// TestConsumeJSONHeaders: header values print as text when UTF-8, else as base64.
func TestConsumeJSONHeaders(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "h")
	c, _ := client.New(url)
	_, err := c.Append(context.Background(), "h", []client.Record{{Value: []byte("v"),
		Headers: map[string][]byte{"text": []byte("é"), "bin": {0xff, 0}, "empty": {}}}}, client.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := consumed(t, cli(t, url, "", "consume", "h", "--group", "g", "--until-caught-up", "--json"))
	if len(recs) != 1 {
		t.Fatalf("consumed %+v", recs)
	}
	r := recs[0]
	if len(r.Headers) != 2 || r.Headers["text"] != "é" || r.Headers["empty"] != "" || len(r.HeadersBase64) != 1 || r.HeadersBase64["bin"] != "/wA=" {
		t.Fatalf("headers %v, base64 headers %v", r.Headers, r.HeadersBase64)
	}
}
