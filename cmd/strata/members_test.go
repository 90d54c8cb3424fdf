package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/runtime"
)

// consumeProc is a running `strata consume --group` process.
type consumeProc struct {
	name   string
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan error
}

func startConsume(t *testing.T, url, topic, grp, member string, ttl time.Duration) *consumeProc {
	t.Helper()
	p := &consumeProc{name: member, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(strataBin, "--url", url, "consume", topic, "--group", grp, "--member", member,
		"--lease-ttl", ttl.String(), "--format", "json")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// stop sends Ctrl-C and waits for a clean exit.
func (p *consumeProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Fatalf("%s after Ctrl-C: %v\nstderr: %s", p.name, err, p.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not exit after Ctrl-C\nstderr: %s", p.name, p.stderr.String())
	}
}

// owners returns how many partitions each member holds a live lease on.
func owners(t *testing.T, c *client.Client, grp string) (map[string]int, map[int32]string) {
	t.Helper()
	g, err := c.DescribeGroup(context.Background(), grp)
	if err != nil {
		return nil, nil
	}
	count, by := map[string]int{}, map[int32]string{}
	for _, p := range g.Partitions {
		if p.Owner != "" {
			count[p.Owner]++
			by[p.Partition] = p.Owner
		}
	}
	return count, by
}

// waitSplit waits until the members hold the given numbers of partitions (and nobody
// else holds any), and returns how long that took from since.
func waitSplit(t *testing.T, c *client.Client, grp string, want map[string]int, since time.Time, limit time.Duration, seen map[int32]map[string]bool, procs ...*consumeProc) time.Duration {
	t.Helper()
	for {
		count, by := owners(t, c, grp)
		for p, o := range by {
			if seen[p] == nil {
				seen[p] = map[string]bool{}
			}
			seen[p][o] = true
		}
		if sameSplit(count, want) {
			return time.Since(since)
		}
		if time.Since(since) > 4*limit {
			var errs strings.Builder
			for _, p := range procs {
				fmt.Fprintf(&errs, "%s stderr:\n%s\n", p.name, p.stderr.String())
			}
			t.Fatalf("partitions held %v, want %v after %s\n%s", count, want, time.Since(since), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameSplit reports whether got holds want's counts over want's members, in any
// assignment of counts to members.
func sameSplit(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	var g, w []int
	for m, n := range got {
		if _, ok := want[m]; !ok {
			return false
		}
		g = append(g, n)
	}
	for _, n := range want {
		w = append(w, n)
	}
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// waitLine waits for a line containing s on p's stderr and returns when it appeared.
func waitLine(t *testing.T, p *consumeProc, s string) time.Time {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never printed %q; stderr:\n%s", p.name, s, p.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now()
}

// TestMembersSplitPartitions: two `strata consume` processes of one group split 8
// partitions 4/4 within one lease period of the second joining, a third makes it
// 3/3/2 within one lease period of joining, and across it all every record is printed,
// none twice except on a partition that changed hands (a rebalance window).
func TestMembersSplitPartitions(t *testing.T) {
	const ttl = 3 * time.Second
	url := startNode(t, runtime.Config{})
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	cli(t, url, "", "topics", "create", "orders", "--partitions", "8")
	produced := 0
	produce := func(n int) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "k%d:v%d\n", produced, produced)
			produced++
		}
		cli(t, url, b.String(), "produce", "orders", "--key-separator", ":")
	}
	produce(400)

	seen := map[int32]map[string]bool{}
	a := startConsume(t, url, "orders", "billing", "a", ttl)
	waitSplit(t, c, "billing", map[string]int{"a": 8}, time.Now(), ttl, seen, a)
	b := startConsume(t, url, "orders", "billing", "b", ttl)
	joined := waitLine(t, b, "holding partitions")
	took := waitSplit(t, c, "billing", map[string]int{"a": 4, "b": 4}, joined, ttl, seen, a, b)
	t.Logf("two members split 8 partitions 4/4 %s after the second joined (lease TTL %s)", took, ttl)
	if took > ttl {
		t.Errorf("the split took %s, more than one lease period (%s)", took, ttl)
	}
	produce(400)

	cc := startConsume(t, url, "orders", "billing", "c", ttl)
	joined = waitLine(t, cc, "holding partitions")
	took = waitSplit(t, c, "billing", map[string]int{"a": 3, "b": 3, "c": 2}, joined, 3*ttl, seen, a, b, cc)
	// 3/3/2 in any order of members.
	count, _ := owners(t, c, "billing")
	t.Logf("three members split 8 partitions %v %s after the third joined", count, took)
	if took > ttl {
		t.Errorf("the rebalance took %s, more than one lease period (%s)", took, ttl)
	}
	produce(400)

	// Wait until everything is printed, then stop every member.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for _, p := range []*consumeProc{a, b, cc} {
			n += strings.Count(p.stdout.String(), "\n")
		}
		if n >= produced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("printed %d of %d records", n, produced)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range []*consumeProc{a, b, cc} {
		p.stop(t)
	}
	printed := map[string][]string{}
	for _, p := range []*consumeProc{a, b, cc} {
		for _, r := range consumed(t, p.stdout.String()) {
			printed[*r.Value] = append(printed[*r.Value], fmt.Sprintf("%s@%d/%d", p.name, r.Partition, r.Offset))
		}
	}
	dups := 0
	for i := 0; i < produced; i++ {
		v := fmt.Sprintf("v%d", i)
		switch got := printed[v]; {
		case len(got) == 0:
			t.Errorf("record %s was never printed", v)
		case len(got) > 1:
			dups++
			var part int32
			fmt.Sscanf(got[0][strings.Index(got[0], "@")+1:], "%d", &part)
			if len(seen[part]) < 2 {
				t.Errorf("record %s printed %d times (%v) on partition %d, which never changed hands", v, len(got), got, part)
			}
		}
	}
	t.Logf("%d records, %d printed twice (on partitions that changed hands)", produced, dups)
	if os.Getenv("STRATA_VERBOSE") != "" {
		for _, p := range []*consumeProc{a, b, cc} {
			t.Logf("%s stderr:\n%s", p.name, p.stderr.String())
		}
	}
}
