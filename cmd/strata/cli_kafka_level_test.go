package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestConsumePrintHeadersTimestampMaxMessages: --print-headers and --print-timestamp
// add Kafka's print.headers / print.timestamp columns, and --max-messages N exits
// after N records, without a group and with one (which commits exactly those N).
func TestConsumePrintHeadersTimestampMaxMessages(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "h", "--partitions", "1")
	cli(t, url, "a\nb\nc\nd\ne\n", "produce", "h", "--header", "src=cli", "--header", "n=1")

	out := cli(t, url, "", "consume", "h", "--print-headers", "--print-timestamp", "--max-messages", "3")
	got := rows(out)
	if len(got) != 4 || got[0] != "PARTITION OFFSET TIMESTAMP HEADERS KEY VALUE" {
		t.Fatalf("consume --print-headers --print-timestamp --max-messages 3:\n%s", out)
	}
	for i, r := range got[1:] {
		f := strings.Fields(r)
		if len(f) != 6 || f[1] != string(rune('0'+i)) || !strings.HasSuffix(f[2], "Z") || f[3] != "n:1,src:cli" || f[5] != string(rune('a'+i)) {
			t.Fatalf("row %d: %q", i, r)
		}
	}
	if out := cli(t, url, "", "consume", "h", "--max-messages", "2"); len(rows(out)) != 3 {
		t.Fatalf("consume --max-messages 2:\n%s", out)
	}

	out = cli(t, url, "", "consume", "h", "--group", "g", "--max-messages", "3")
	if got := rows(out); len(got) != 4 || got[3] != "0 2 - c" {
		t.Fatalf("consume --group --max-messages 3:\n%s", out)
	}
	out = cli(t, url, "", "consume", "h", "--group", "g", "--until-caught-up")
	if got := rows(out); len(got) != 3 || got[1] != "0 3 - d" || got[2] != "0 4 - e" {
		t.Fatalf("the group resumes after the 3 records it printed:\n%s", out)
	}
}

// TestConsumeStartFlagsConflict: two ways to say where to start are a usage error
// (exit code 2), not silently one of them.
func TestConsumeStartFlagsConflict(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "c")
	for _, args := range [][]string{
		{"--offset", "3", "--from", "latest"},
		{"--offset", "0", "--from", "earliest"},
		{"--since", "-1h", "--from", "latest"},
		{"--since", "-1h", "--offset", "0"},
		{"--max-messages", "-1"},
	} {
		err := cliErr(t, url, append([]string{"consume", "c"}, args...)...)
		var u usageError
		if !errors.As(err, &u) || exitCode(err) != 2 {
			t.Errorf("consume c %v: %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
}

// TestProduceKeySeparatorRefusesUnkeyedLine: with --key-separator a line without the
// separator is refused with its line number (as Kafka's parse.key=true), the other
// lines are appended, and --allow-unkeyed sends it without a key instead.
func TestProduceKeySeparatorRefusesUnkeyedLine(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "k", "--partitions", "1")
	_, _, err := cliCtx(context.Background(), "a:1\n\nno-key-here\nb:2\n", "--url", url, "produce", "k", "--key-separator", ":")
	if err == nil || exitCode(err) != 1 || !strings.Contains(userMessage(err, url), `line 3 has no key separator ":"`) {
		t.Fatalf("produce with an unkeyed line: %v", err)
	}
	out := cli(t, url, "", "consume", "k", "--until-caught-up")
	if got := rows(out); len(got) != 3 || got[1] != "0 0 a 1" || got[2] != "0 1 b 2" {
		t.Fatalf("the keyed lines are appended, the unkeyed one is not:\n%s", out)
	}
	cli(t, url, "no-key-here\n", "produce", "k", "--key-separator", ":", "--allow-unkeyed")
	out = cli(t, url, "", "consume", "k", "--until-caught-up", "--offset", "2")
	if got := rows(out); len(got) != 2 || got[1] != "0 2 - no-key-here" {
		t.Fatalf("--allow-unkeyed:\n%s", out)
	}
	for _, args := range [][]string{{"--allow-unkeyed"}, {"--key-separator", ":", "--key", "x"}} {
		if err := cliErr(t, url, append([]string{"produce", "k", "--value", "v"}, args...)...); exitCode(err) != 2 {
			t.Errorf("produce %v: %v, want a usage error", args, err)
		}
	}
}

// TestTopicsCreateServerDefaultPartitions: topics create without --partitions leaves
// the count to the server's default instead of sending 1.
func TestTopicsCreateServerDefaultPartitions(t *testing.T) {
	url := startNode(t, runtime.Config{Node: node.Config{Topics: log.TopicDefaults{Partitions: 3}}})
	if got := rows(cli(t, url, "", "topics", "create", "d")); len(got) != 2 || !strings.HasPrefix(got[1], "d 3 ") {
		t.Fatalf("topics create d: %q, want the server's 3 partitions", got)
	}
	if got := rows(cli(t, url, "", "topics", "create", "e", "--partitions", "2")); len(got) != 2 || !strings.HasPrefix(got[1], "e 2 ") {
		t.Fatalf("topics create e --partitions 2: %q", got)
	}
	if err := cliErr(t, url, "topics", "create", "f", "--partitions", "0"); exitCode(err) != 2 {
		t.Fatalf("--partitions 0: %v, want a usage error", err)
	}
}

// TestDescribeEverythingWithoutName: topics describe and groups describe without a
// name describe every topic and group; groups describe shows each group's state and
// its live members with their partitions.
func TestDescribeEverythingWithoutName(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders", "--partitions", "2")
	cli(t, url, "", "topics", "create", "audit", "--partitions", "1")
	out := cli(t, url, "", "topics", "describe")
	if strings.Count(out, "NAME ") != 2 || !strings.Contains(out, "orders") || !strings.Contains(out, "audit") {
		t.Fatalf("topics describe:\n%s", out)
	}
	var topics struct {
		Topics []topicJSON `json:"topics"`
	}
	if err := json.Unmarshal([]byte(cli(t, url, "", "topics", "describe", "--json")), &topics); err != nil || len(topics.Topics) != 2 {
		t.Fatalf("topics describe --json: %+v %v", topics, err)
	}

	cli(t, url, "a\nb\n", "produce", "orders")
	cli(t, url, "", "consume", "orders", "--group", "idle", "--until-caught-up")
	got := liveMember(t, url, "orders", "busy", "m-1")
	if got.State != groupStable || len(got.Members) != 1 || got.Members[0].Member != "m-1" || len(got.Members[0].Partitions) != 2 {
		t.Fatalf("groups describe busy --json: state %q, members %+v", got.State, got.Members)
	}

	out = cli(t, url, "", "groups", "describe")
	want := []string{"GROUP STATE MEMBERS", "busy stable 1", "MEMBER PARTITIONS", "m-1 orders/0,orders/1", "idle empty 0"}
	r := rows(out)
	for _, w := range want {
		if !slices.Contains(r, w) {
			t.Fatalf("groups describe: no line %q in\n%s", w, out)
		}
	}
	var all struct {
		Groups []groupDescribeJSON `json:"groups"`
	}
	if err := json.Unmarshal([]byte(cli(t, url, "", "groups", "describe", "--json")), &all); err != nil || len(all.Groups) != 2 {
		t.Fatalf("groups describe --json: %+v %v", all, err)
	}
	if err := cliErr(t, url, "groups", "describe", "a", "b"); exitCode(err) != 2 {
		t.Fatalf("two names: %v, want a usage error", err)
	}
}

// TestVersionJSON: version --json prints the build as one JSON object.
func TestVersionJSON(t *testing.T) {
	out, _, code := runBin(t, "", "version", "--json")
	var v buildVersion
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go1.") {
		t.Fatalf("strata version --json: exit %d, %q (%v)", code, out, err)
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	if got := buildVersionOf(info); got != (buildVersion{Version: "v0.3.0", Revision: "0123456789abcdef0123", Modified: true, Go: "go1.26.0"}) {
		t.Fatalf("buildVersionOf = %+v", got)
	}
}

// TestGroupsResetShiftCurrentAllTopics: groups reset --shift-by N moves each position N
// records (clamped to the partition's records), --to-current keeps it, --all-topics
// plans every topic the group has positions on, and a live member refuses the plan
// itself, as Kafka's kafka-consumer-groups --reset-offsets does.
func TestGroupsResetShiftCurrentAllTopics(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders", "--partitions", "2")
	cli(t, url, "", "topics", "create", "audit", "--partitions", "1")
	cli(t, url, "a\nb\nc\nd\n", "produce", "orders", "--partition", "0")
	cli(t, url, "x\n", "produce", "orders", "--partition", "1")
	cli(t, url, "y\nz\n", "produce", "audit")
	cli(t, url, "", "consume", "orders", "--group", "billing", "--until-caught-up")
	cli(t, url, "", "consume", "audit", "--group", "billing", "--until-caught-up")

	plan := func(args ...string) string {
		t.Helper()
		return strings.Join(rows(cli(t, url, "", append([]string{"groups", "reset", "billing"}, args...)...)), "|")
	}
	if got := plan("--topic", "orders", "--shift-by", "-3"); got != "PARTITION CURRENT NEW|0 4 1|1 1 0" {
		t.Fatalf("--shift-by -3: %s", got)
	}
	if got := plan("--topic", "orders", "--to-current"); got != "PARTITION CURRENT NEW|0 4 4|1 1 1" {
		t.Fatalf("--to-current: %s", got)
	}
	if got := plan("--all-topics", "--shift-by", "-1"); got != "TOPIC PARTITION CURRENT NEW|audit 0 2 1|orders 0 4 3|orders 1 1 0" {
		t.Fatalf("--all-topics --shift-by -1: %s", got)
	}
	if got := plan("--all-topics", "--shift-by", "-2", "--execute"); got != "TOPIC PARTITION CURRENT NEW|audit 0 2 0|orders 0 4 2|orders 1 1 0" {
		t.Fatalf("--all-topics --shift-by -2 --execute: %s", got)
	}
	if got := plan("--topic", "orders", "--shift-by", "1", "--execute"); got != "PARTITION CURRENT NEW|0 2 3|1 0 1" {
		t.Fatalf("--shift-by 1 --execute: %s", got)
	}
	for _, args := range [][]string{
		{"--topic", "orders", "--shift-by", "1", "--to", "earliest"},
		{"--topic", "orders", "--all-topics", "--to-current"},
		{"--to-current"},
		{"--all-topics", "--partition", "0", "--to-current"},
	} {
		if err := cliErr(t, url, append([]string{"groups", "reset", "billing"}, args...)...); exitCode(err) != 2 {
			t.Errorf("groups reset %v: %v, want a usage error", args, err)
		}
	}

	liveMember(t, url, "audit", "billing", "m-1")
	err := cliErr(t, url, "groups", "reset", "billing", "--all-topics", "--to", "earliest")
	if !errors.Is(err, client.ErrGroupActive) || !strings.Contains(userMessage(err, url), "m-1 holds audit/0") {
		t.Fatalf("plan with a live member: %v", err)
	}
	if got := plan("--topic", "orders", "--to-current"); got != "PARTITION CURRENT NEW|0 3 3|1 1 1" {
		t.Fatalf("a topic the live member does not hold is still planned: %s", got)
	}
}

// TestErrorMessagesForPeople: no context said twice, no internal incarnation ids, no
// raw Go transport errors, and a missing AWS credential names AWS_PROFILE and aws sso
// login.
func TestErrorMessagesForPeople(t *testing.T) {
	for in, want := range map[string]string{
		`group "nope": local: group "nope": store: not found`:       `group "nope": not found`,
		`"nope": group "nope": not found`:                           `group "nope": not found`,
		`delete "nope": group "nope": not found`:                    `delete "nope": group "nope": not found`,
		`fenced: lease of orders#tc01jqz8x6k1m2n3p4q5r6s7t8v9 on 3`: `fenced: lease of orders on 3`,
		`topic "orders#01jqz8x6k1m2n3p4q5r6s7t8v9" was deleted`:     `topic "orders" was deleted`,
		`line #3 is bad`: `line #3 is bad`,
	} {
		if got := cleanMessage(in); got != want {
			t.Errorf("cleanMessage(%q) = %q, want %q", in, got, want)
		}
	}

	url := startNode(t, runtime.Config{})
	for _, args := range [][]string{{"groups", "describe", "nope"}, {"groups", "settings", "nope"}, {"groups", "parked", "nope"}} {
		_, errOut, _ := runBin(t, "", append([]string{"--url", url}, args...)...)
		if strings.Count(errOut, `"nope"`) != 1 {
			t.Errorf("strata %v: %q says the group more than once", args, errOut)
		}
	}

	// A server that closes the connection, one that speaks HTTP to an HTTPS --url.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 512))
			c.Close()
		}
	}()
	for _, u := range []string{"http://" + ln.Addr().String(), strings.Replace(url, "http://", "https://", 1)} {
		_, errOut, code := runBin(t, "", "--url", u, "topics", "list")
		if code != 1 || !strings.HasPrefix(errOut, "strata: cannot reach Strata at "+u+": ") || strings.Contains(errOut, "Get \"") ||
			strings.Contains(errOut, "read tcp") || strings.Contains(errOut, "list topics") {
			t.Errorf("--url %s: exit %d, %q", u, code, errOut)
		}
	}

	// No AWS credentials at all, and a profile that does not exist.
	home := t.TempDir()
	env := []string{"HOME=" + home, "AWS_CONFIG_FILE=" + home + "/config", "AWS_SHARED_CREDENTIALS_FILE=" + home + "/credentials",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_REGION=us-east-1"}
	for _, profile := range []string{"", "nonexistent"} {
		_, errOut, code := runBinEnv(t, append(env, "AWS_PROFILE="+profile), "--url", url, "--aws", "topics", "list")
		if code != 1 || !strings.Contains(errOut, "AWS_PROFILE") || !strings.Contains(errOut, "aws sso login") || strings.Contains(errOut, "awsauth") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("AWS_PROFILE=%q: exit %d, %q", profile, code, errOut)
		}
	}
}

// runBinEnv is runBin with env added to the test's environment.
func runBinEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(strataBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// TestEveryUsageErrorExitsTwo: a command line the tool can refuse without asking the
// server (a flag's value, a flag it lacks, two flags that contradict) exits 2, whether
// the flag library or the command itself finds it.
func TestEveryUsageErrorExitsTwo(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "o", "--partitions", "1")
	for _, args := range [][]string{
		{"consume", "o", "--format", "xml"},
		{"consume", "o", "--partition", "x"},
		{"consume", "o", "--from", "middle"},
		{"consume", "o", "--group", "g", "--from", "middle"},
		{"consume", "o", "--since", "garbage"},
		{"consume", "o", "--lease-ttl", "-1s"},
		{"consume", "o", "--offset", "-1"},
		{"consume", "o", "--group", "g", "--offset", "1"},
		{"topics", "create", "o2", "--retention", "banana"},
		{"topics", "create", "o2", "--partitions", "-1"},
		{"topics", "alter", "o"},
		{"topics", "describe", "a", "b"},
		{"produce", "o", "--header", "bad", "--value", "x"},
		{"produce", "o", "--partition", "-1", "--value", "x"},
		{"produce", "o", "--linger", "-1s", "--value", "x"},
		{"produce", "o", "--linger", "0s", "--align-linger", "--value", "x"},
		{"groups", "reset", "g"},
		{"groups", "reset", "g", "--topic", "o"},
		{"groups", "reset", "g", "--topic", "o", "--to", "-5"},
		{"groups", "reset", "g", "--topic", "o", "--shift-by", "x"},
		{"groups", "settings", "g", "--reset-policy", "middle"},
		{"groups", "settings", "g", "--max-attempts", "0"},
		{"groups", "release", "g"},
		{"groups", "delete-offsets", "g"},
		{"version", "extra"},
		{"consume"},
		{"nope"},
	} {
		_, _, err := cliCtx(context.Background(), "", append([]string{"--url", url}, args...)...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("strata %s: %v (exit %d), want exit 2", strings.Join(args, " "), err, exitCode(err))
		}
	}
}

// serveAt runs an in-process Strata on addr over dir until the returned stop is called
// (or the test ends), so a test can restart it on the same address and data.
func serveAt(t *testing.T, addr, dir string) (stop func()) {
	t.Helper()
	rt, err := runtime.Open(context.Background(), runtime.Config{Node: node.Config{DataDir: dir}, Addr: addr, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := errors.Join(<-done, rt.Close(context.Background())); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestConsumeRidesThroughRestart: a plain consume (no group) keeps following across a
// server restart, like tail -F: it says the server went away, retries, and prints the
// records appended after the restart without repeating or skipping any.
func TestConsumeRidesThroughRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	url := "http://" + addr
	stop := serveAt(t, addr, dir)
	cli(t, url, "", "topics", "create", "t", "--partitions", "1")
	cli(t, url, "a\nb\n", "produce", "t")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		cmd := newRootCmd()
		cmd.SetArgs([]string{"--url", url, "consume", "t", "--max-messages", "4"})
		cmd.SetIn(strings.NewReader(""))
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		done <- cmd.ExecuteContext(ctx)
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never %s; stdout %q, stderr %q", what, out.String(), errOut.String())
			}
		}
	}
	waitFor("printed the first records", func() bool { return strings.Contains(out.String(), "\tb\n") })
	stop()
	waitFor("said the server went away", func() bool { return strings.Contains(errOut.String(), "retrying") })
	serveAt(t, addr, dir)
	cli(t, url, "c\nd\n", "produce", "t")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("consume: %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("consume did not print the records after the restart: stdout %q, stderr %q", out.String(), errOut.String())
	}
	if got := strings.Join(rows(out.String()), "|"); got != "PARTITION OFFSET KEY VALUE|0 0 - a|0 1 - b|0 2 - c|0 3 - d" {
		t.Fatalf("consume across a restart printed %q", got)
	}
	if !strings.Contains(errOut.String(), "cannot reach") || !strings.Contains(errOut.String(), "the server answers again") {
		t.Fatalf("stderr %q: want the server's absence and return said", errOut.String())
	}
}

// TestEveryCommandsUsageErrorsExitTwo walks the whole command tree: every command that
// runs refuses an unknown flag, a value of the wrong type for each of its typed flags,
// and arguments its validator refuses, each with exit code 2 and before doing anything
// (the url points nowhere: a command that got as far as the network would fail with 1).
func TestEveryCommandsUsageErrorsExitTwo(t *testing.T) {
	var leaves []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.HasSubCommands() {
			leaves = append(leaves, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	if len(leaves) < 20 {
		t.Fatalf("%d runnable commands, want the whole tree", len(leaves))
	}
	run := func(args ...string) error {
		_, _, err := cliCtx(context.Background(), "", append([]string{"--url", "http://127.0.0.1:1"}, args...)...)
		return err
	}
	for _, c := range leaves {
		path := strings.Fields(c.CommandPath())[1:]
		if slices.Contains([]string{"help", "completion", "__complete", "__completeNoDesc"}, path[0]) || c.DisableFlagParsing {
			continue // cobra's own, or a stub that passes everything on (bench without its build tag)
		}
		if err := run(append(slices.Clone(path), "--no-such-flag")...); err == nil || exitCode(err) != 2 {
			t.Errorf("strata %s --no-such-flag: %v (exit %d), want 2", strings.Join(path, " "), err, exitCode(err))
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "string", "stringSlice", "stringArray", "stringToString":
				return // any text parses; the command checks it (the cases above)
			}
			args := append(slices.Clone(path), "--"+f.Name+"=not-a-value")
			if err := run(args...); err == nil || exitCode(err) != 2 {
				t.Errorf("strata %s: %v (exit %d), want 2", strings.Join(args, " "), err, exitCode(err))
			}
		})
		extra := []string{"a1", "a2", "a3", "a4", "a5", "a6"}
		if c.Args != nil {
			if err := c.Args(c, extra); err != nil && exitCode(err) != 2 {
				t.Errorf("strata %s with 6 arguments: %v, exit %d, want 2", strings.Join(path, " "), err, exitCode(err))
			}
		}
	}
}

// TestGroupMembersState: a group is empty without a live lease, stable while every
// partition of each topic its members consume has one (positions on a topic nobody
// consumes now do not count), rebalancing while such a partition has none (free, or its
// lease expired).
func TestGroupMembersState(t *testing.T) {
	now := time.UnixMilli(1_780_000_000_000)
	live, expired := now.Add(time.Second), now.Add(-time.Second)
	p := func(topic string, partition int32, owner string, until time.Time) client.GroupPartition {
		return client.GroupPartition{Topic: topic, Partition: partition, Owner: owner, LeaseExpiresAt: until}
	}
	for _, tc := range []struct {
		name    string
		parts   []client.GroupPartition
		state   string
		members int
	}{
		{"no lease", []client.GroupPartition{p("orders", 0, "", time.Time{}), p("orders", 1, "m-1", expired)}, groupEmpty, 0},
		{"every partition held", []client.GroupPartition{p("orders", 0, "m-1", live), p("orders", 1, "m-2", live)}, groupStable, 2},
		{"a partition free", []client.GroupPartition{p("orders", 0, "m-1", live), p("orders", 1, "", time.Time{})}, groupRebalancing, 1},
		{"a lease expired", []client.GroupPartition{p("orders", 0, "m-1", live), p("orders", 1, "m-2", expired)}, groupRebalancing, 1},
		{"positions on a topic nobody consumes", []client.GroupPartition{p("orders", 0, "", time.Time{}), p("orders", 1, "", time.Time{}), p("audit", 0, "m-1", live)}, groupStable, 1},
	} {
		state, members := groupMembers(&client.Group{Name: "g", Partitions: tc.parts}, now)
		if state != tc.state || len(members) != tc.members {
			t.Errorf("%s: %s with %d members, want %s with %d", tc.name, state, len(members), tc.state, tc.members)
		}
	}
}

// liveMember runs `strata consume TOPIC --group GROUP --member MEMBER` until the test
// ends, and returns the group's description once it is stable with the member holding
// its partitions of the topic.
func liveMember(t *testing.T, url, topic, group, member string) groupDescribeJSON {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := cliCtx(ctx, "", "--url", url, "consume", topic, "--group", group, "--member", member)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var g groupDescribeJSON
		out, _, err := cliCtx(context.Background(), "", "--url", url, "groups", "describe", group, "--json")
		if err == nil && json.Unmarshal([]byte(out), &g) == nil && g.State == groupStable &&
			slices.ContainsFunc(g.Members, func(m memberJSON) bool { return m.Member == member }) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held group %s's partitions of %s (last: %s)", member, group, topic, out)
		}
	}
}
