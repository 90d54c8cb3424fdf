package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// docRow is how one Strata command of docs/KAFKA.md's side-by-side table is run: on a
// fresh node (with a maximum retention when maxRetention is set), after setup, with
// stdin; a command that follows the log (consume without an end) runs until check
// passes on what it printed so far, then is stopped. check says what the row says.
type docRow struct {
	maxRetention time.Duration
	setup        func(t *testing.T, url string)
	stdin        string
	follows      bool
	check        func(out string, c *client.Client) error
	// after, when set, checks what else the row says once check passed.
	after func(t *testing.T, url string)
}

// sideBySide is the Strata column of docs/KAFKA.md's "Side by side" table: the first
// `strata ...` span of each row.
func sideBySide(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/KAFKA.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Side by side\n")
	if !ok {
		t.Fatal(`docs/KAFKA.md has no "## Side by side" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	sec, _, _ = strings.Cut(sec, "\nIn Go")
	span := regexp.MustCompile("^\\|[^|]*\\| `(strata [^`]+)`")
	var cmds []string
	for _, line := range strings.Split(sec, "\n") {
		if m := span.FindStringSubmatch(line); m != nil {
			cmds = append(cmds, m[1])
		}
	}
	return cmds
}

// runKafkaDocTable runs every Strata command of docs/KAFKA.md's side-by-side table, as
// written, against a running node and checks that it succeeds and does what its row
// says; a row without a run here, or a run without its row, fails.
func runKafkaDocTable(t *testing.T) {
	cmds := sideBySide(t)
	if len(cmds) < 25 {
		t.Fatalf("docs/KAFKA.md's side-by-side table has %d strata commands", len(cmds))
	}
	runs := kafkaDocRuns()
	for name := range runs {
		if !slices.Contains(cmds, name) {
			t.Errorf("%q is run here but is not in docs/KAFKA.md's table", name)
		}
	}
	for _, line := range cmds {
		t.Run(line, func(t *testing.T) {
			r, ok := runs[line]
			if !ok {
				t.Fatalf("no run for docs/KAFKA.md's %q: add one to kafkaDocRuns", line)
			}
			cfg := runtime.Config{}
			cfg.Node = node.Config{Topics: log.TopicDefaults{MaxRetention: r.maxRetention}}
			url := startNode(t, cfg)
			c, err := client.New(url)
			if err != nil {
				t.Fatal(err)
			}
			if r.setup != nil {
				r.setup(t, url)
			}
			args := append([]string{"--url", url}, strings.Fields(line)[1:]...)
			if !r.follows {
				out, errOut, err := cliCtx(context.Background(), r.stdin, args...)
				if err != nil {
					t.Fatalf("%s: %v\n%s", line, err, errOut)
				}
				if err := r.check(out, c); err != nil {
					t.Fatalf("%s:\n%s\n%v", line, out, err)
				}
				if r.after != nil {
					r.after(t, url)
				}
				return
			}
			ctx, cancel := context.WithCancel(context.Background())
			var buf, errBuf syncBuffer
			done := make(chan error, 1)
			go func() {
				cmd := newRootCmd()
				cmd.SetArgs(args)
				cmd.SetIn(strings.NewReader(r.stdin))
				cmd.SetOut(&buf)
				cmd.SetErr(&errBuf)
				done <- cmd.ExecuteContext(ctx)
			}()
			var last error
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if last = r.check(buf.String(), c); last == nil {
					break
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("%s: %v\n%s", line, err, errBuf.String())
			}
			if last != nil {
				t.Fatalf("%s:\n%s\n%v", line, buf.String(), last)
			}
			if r.after != nil {
				r.after(t, url)
			}
		})
	}
}

// seed creates topic with parts partitions and appends n records v0..v(n-1) to its
// partition 0.
func seed(t *testing.T, url, topic string, parts, n int) {
	t.Helper()
	cli(t, url, "", "topics", "create", topic, "--partitions", fmt.Sprint(parts))
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	if n > 0 {
		cli(t, url, in.String(), "produce", topic, "--partition", "0")
	}
}

// seedGroup is seed, then group billing reads every record and commits.
func seedGroup(t *testing.T, url string, n int) {
	t.Helper()
	seed(t, url, "orders", 1, n)
	cli(t, url, "", "consume", "orders", "--group", "billing", "--until-caught-up")
}

// values are the VALUE column of consume's table, and the header row.
func values(out string) (header string, vs []string) {
	r := rows(out)
	if len(r) == 0 || r[0] == "" {
		return "", nil
	}
	for _, l := range r[1:] {
		f := strings.Fields(l)
		vs = append(vs, f[len(f)-1])
	}
	return r[0], vs
}

func wantValues(out string, want ...string) error {
	if _, got := values(out); !slices.Equal(got, want) {
		return fmt.Errorf("values %q, want %q", got, want)
	}
	return nil
}

func topicIs(c *client.Client, name string, partitions int32, retention time.Duration) error {
	tp, err := c.DescribeTopic(context.Background(), name)
	if err != nil {
		return err
	}
	if tp.Partitions != partitions || (retention != 0 && tp.Retention != retention) {
		return fmt.Errorf("topic %s: %d partitions, retention %s; want %d, %s", name, tp.Partitions, tp.Retention, partitions, retention)
	}
	return nil
}

// committed is group billing's committed offsets on orders, by partition (-1: none).
func committed(c *client.Client) ([]int64, error) {
	g, err := c.DescribeGroup(context.Background(), "billing")
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, p := range g.Partitions {
		if p.Topic != "orders" {
			continue
		}
		off := int64(-1)
		if p.CommittedOffset != nil {
			off = *p.CommittedOffset
		}
		out = append(out, off)
	}
	return out, nil
}

func committedIs(c *client.Client, want ...int64) error {
	got, err := committed(c)
	if err == nil && !slices.Equal(got, want) {
		err = fmt.Errorf("billing's committed offsets on orders %v, want %v", got, want)
	}
	return err
}

// contains checks that out, its cells single-spaced, holds each of want.
func contains(out string, want ...string) error {
	out = strings.Join(rows(out), "\n")
	for _, w := range want {
		if !strings.Contains(out, w) {
			return fmt.Errorf("no %q in the output", w)
		}
	}
	return nil
}

// kafkaDocRuns are the runs of docs/KAFKA.md's side-by-side table, by its command line.
func kafkaDocRuns() map[string]docRow {
	week := 7 * 24 * time.Hour
	return map[string]docRow{
		"strata topics create orders --partitions 8 --retention 7d": {
			check: func(_ string, c *client.Client) error { return topicIs(c, "orders", 8, week) }},
		"strata topics create orders": {
			check: func(_ string, c *client.Client) error { return topicIs(c, "orders", log.DefaultPartitions, 0) }},
		"strata topics list": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 0); seed(t, url, "audit", 1, 0) },
			check: func(out string, _ *client.Client) error { return contains(out, "orders", "audit") }},
		"strata topics describe orders": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 2, 3) },
			check: func(out string, _ *client.Client) error {
				if r := rows(out); len(r) < 2 || !strings.HasPrefix(r[1], "orders 2 ") {
					return fmt.Errorf("want orders with 2 partitions")
				}
				return contains(out, "NAME PARTITIONS RETENTION", "orders 2 24h0m0s", "HIGH_WATERMARK")
			}},
		"strata topics describe": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 2, 0); seed(t, url, "audit", 1, 0) },
			check: func(out string, _ *client.Client) error {
				if n := strings.Count(out, "NAME "); n != 2 {
					return fmt.Errorf("%d topics described, want 2", n)
				}
				return contains(out, "orders", "audit")
			}},
		"strata topics alter orders --partitions 16": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 8, 0) },
			check: func(_ string, c *client.Client) error { return topicIs(c, "orders", 16, 0) }},
		"strata topics alter orders --retention 3d": {
			maxRetention: week,
			setup: func(t *testing.T, url string) {
				seed(t, url, "orders", 1, 0)
				if err := cliErr(t, url, "topics", "alter", "orders", "--retention", "30d"); !strings.Contains(err.Error(), "strata:maxRetentionDays") {
					t.Errorf("--retention 30d on a 7-day deployment: %v, want a refusal naming strata:maxRetentionDays", err)
				}
			},
			check: func(_ string, c *client.Client) error { return topicIs(c, "orders", 1, 3*24*time.Hour) }},
		"strata topics alter orders --retention infinite": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 0) },
			check: func(out string, c *client.Client) error {
				if err := topicIs(c, "orders", 1, forever); err != nil {
					return err
				}
				return contains(out, "infinite")
			}},
		"strata topics delete orders": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 1) },
			check: func(_ string, c *client.Client) error {
				if _, err := c.DescribeTopic(context.Background(), "orders"); err == nil {
					return fmt.Errorf("orders still exists")
				}
				return nil
			}},
		"strata produce orders": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 0) },
			stdin: "first\nsecond\n",
			check: func(_ string, c *client.Client) error { return polled(c, "-:first", "-:second") }},
		"strata produce orders --key-separator :": {
			setup: func(t *testing.T, url string) {
				seed(t, url, "orders", 1, 0)
				seed(t, url, "refused", 1, 0)
				_, errOut, err := cliCtx(context.Background(), "k1:a\nno separator\n", "--url", url, "produce", "refused", "--key-separator", ":")
				if err == nil || !strings.Contains(errOut+err.Error(), "line 2") {
					t.Errorf("a line without the separator: %v %q, want a refusal naming line 2", err, errOut)
				}
			},
			stdin: "k1:a\nk2:b\n",
			check: func(_ string, c *client.Client) error { return polled(c, "k1:a", "k2:b") }},
		"strata produce orders --key-separator : --allow-unkeyed": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 0) },
			stdin: "k1:a\nplain\n",
			check: func(_ string, c *client.Client) error { return polled(c, "k1:a", "-:plain") }},
		"strata consume orders --from earliest": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 2) }, follows: true,
			check: func(out string, _ *client.Client) error { return wantValues(out, "v0", "v1") }},
		"strata consume orders --partition 0 --offset 42": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 44) }, follows: true,
			check: func(out string, _ *client.Client) error { return wantValues(out, "v42", "v43") }},
		"strata consume orders --group billing": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 2) }, follows: true,
			check: func(out string, c *client.Client) error {
				if err := wantValues(out, "v0", "v1"); err != nil {
					return err
				}
				return committedIs(c, 2)
			}},
		"strata consume orders --print-timestamp --print-headers": {
			setup: func(t *testing.T, url string) {
				seed(t, url, "orders", 1, 0)
				cli(t, url, "a\n", "produce", "orders", "--header", "src=cli")
			},
			follows: true,
			check: func(out string, _ *client.Client) error {
				r := rows(out)
				if len(r) != 2 || r[0] != "PARTITION OFFSET TIMESTAMP HEADERS KEY VALUE" || !strings.Contains(r[1], " src:cli - a") {
					return fmt.Errorf("want the TIMESTAMP and HEADERS columns and the record")
				}
				return nil
			}},
		"strata consume orders --from earliest --max-messages 10": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 12) },
			check: func(out string, _ *client.Client) error {
				return wantValues(out, "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9")
			}},
		"strata groups list": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 1) },
			check: func(out string, _ *client.Client) error { return contains(out, "billing") }},
		"strata groups describe billing": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 3) },
			check: func(out string, _ *client.Client) error {
				return contains(out, "orders 0 3 3 0", "STATE", "empty")
			}},
		"strata groups describe": {
			setup: func(t *testing.T, url string) {
				seedGroup(t, url, 1)
				cli(t, url, "", "consume", "orders", "--group", "audit", "--until-caught-up")
			},
			check: func(out string, _ *client.Client) error {
				return contains(out, "GROUP STATE MEMBERS", "billing empty 0", "audit empty 0")
			}},
		"strata groups reset billing --topic orders --to earliest": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 3) },
			check: func(out string, c *client.Client) error {
				if r := rows(out); !slices.Equal(r, []string{"PARTITION CURRENT NEW", "0 3 0"}) {
					return fmt.Errorf("plan %q, want 0 3 0", r)
				}
				return committedIs(c, 3) // a plan changes nothing
			}},
		"strata groups reset billing --topic orders --to earliest --execute": {
			setup: func(t *testing.T, url string) {
				seedGroup(t, url, 3)
				if err := cliErr(t, url, "groups", "reset", "nobody", "--topic", "orders", "--to", "earliest", "--execute"); !strings.Contains(err.Error(), "--create") {
					t.Errorf("reset of an unknown group: %v, want a refusal naming --create", err)
				}
			},
			check: func(_ string, c *client.Client) error { return committedIs(c, 0) }},
		"strata groups reset billing --topic orders --since 2026-12-01 --execute": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 3) },
			check: func(_ string, c *client.Client) error { return committedIs(c, 0) }},
		"strata groups reset billing --topic orders --partition 0 --to 42 --execute": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 50) },
			check: func(_ string, c *client.Client) error { return committedIs(c, 42) }},
		"strata groups reset billing --topic orders --shift-by -100 --execute": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 50) },
			check: func(_ string, c *client.Client) error { return committedIs(c, 0) }},
		"strata groups reset billing --all-topics --to-current": {
			setup: func(t *testing.T, url string) {
				seedGroup(t, url, 2)
				seed(t, url, "audit", 1, 1)
				cli(t, url, "", "consume", "audit", "--group", "billing", "--until-caught-up")
			},
			check: func(out string, _ *client.Client) error {
				if r := rows(out); !slices.Equal(r, []string{"TOPIC PARTITION CURRENT NEW", "audit 0 1 1", "orders 0 2 2"}) {
					return fmt.Errorf("plan %q, want every topic of the group at its current offset", r)
				}
				return nil
			},
			after: func(t *testing.T, url string) {
				liveMember(t, url, "audit", "billing", "m-1")
				err := cliErr(t, url, "groups", "reset", "billing", "--all-topics", "--to-current")
				if !errors.Is(err, client.ErrGroupActive) || !strings.Contains(userMessage(err, url), "m-1 holds audit/0") {
					t.Errorf("the plan with a live member: %v, want a refusal naming m-1", err)
				}
			}},
		"strata groups delete-offsets billing --topic orders": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 2) },
			check: func(_ string, c *client.Client) error {
				if got, err := committed(c); err != nil || slices.ContainsFunc(got, func(o int64) bool { return o >= 0 }) {
					return fmt.Errorf("billing's positions on orders after delete-offsets: %v, %v", got, err)
				}
				return nil
			}},
		"strata groups delete billing": {
			setup: func(t *testing.T, url string) { seedGroup(t, url, 1) },
			check: func(_ string, c *client.Client) error {
				if gs, err := c.ListGroups(context.Background()); err != nil || slices.Contains(gs, "billing") {
					return fmt.Errorf("groups after delete: %v, %v", gs, err)
				}
				return nil
			}},
		"strata consume orders --since -1h": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 2) }, follows: true,
			check: func(out string, _ *client.Client) error { return wantValues(out, "v0", "v1") }},
		"strata groups settings billing --reset-policy latest --max-attempts 3 --dead-letter-topic orders.dlq": {
			setup: func(t *testing.T, url string) { seed(t, url, "orders", 1, 0); seed(t, url, "orders.dlq", 1, 0) },
			check: func(_ string, c *client.Client) error {
				s, err := c.GroupSettings(context.Background(), "billing")
				if err == nil && (s.ResetPolicy != "latest" || s.MaxAttempts != 3 || s.DeadLetterTopic != "orders.dlq") {
					err = fmt.Errorf("settings %+v", *s)
				}
				return err
			}},
	}
}

// polled checks that orders' partition 0 holds exactly the records want, each
// "key:value" ("-" for no key).
func polled(c *client.Client, want ...string) error {
	res, err := c.Poll(context.Background(), "orders", 0, 0, client.PollOptions{MaxRecords: 100})
	if err != nil {
		return err
	}
	var got []string
	for _, r := range res.Records {
		k := "-"
		if r.Key != nil {
			k = string(r.Key)
		}
		got = append(got, k+":"+string(r.Value))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("orders holds %q, want %q", got, want)
	}
	return nil
}
