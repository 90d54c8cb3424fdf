package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestDemoSmall runs the demo end to end at a tenth of its size: every record reaches
// billing's sink exactly once and in order per order, the kill causes a replay, the
// zombie is fenced, and nothing is lost.
func TestDemoSmall(t *testing.T) {
	var out bytes.Buffer
	size := demoSize{Events: 10_000, Orders: 100, ValueBytes: 1_000, KillAfter: 500}
	if err := runDemoSize(context.Background(), &out, nil, size); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	// Not a terminal: no progress frames in the output.
	if strings.Contains(out.String(), "\r") || strings.Contains(out.String(), "events/s") {
		t.Errorf("the demo wrote progress frames to a non-terminal:\n%q", out.String())
	}
	for _, want := range []string{"killed billing-0 mid-batch", "took partition 0 over", "its commit got 409 fenced", "its business write was refused as fenced", "zombie business writes refused    1", "parked records replayed in order (true)", "records lost                      0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDemoCleansUpWhenCut: a demo interrupted with Ctrl-C, or piped
// into head (its stdout closed), removes its temporary data directory.
func TestDemoCleansUpWhenCut(t *testing.T) {
	for _, how := range []string{"sigint", "head"} {
		t.Run(how, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(strataBin, "demo")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || !strings.Contains(line, "data in "+tmp) {
				t.Fatalf("first line %q (%v)", line, err)
			}
			if how == "sigint" {
				err = cmd.Process.Signal(syscall.SIGINT)
			} else {
				err = stdout.Close() // as head does after its lines
			}
			if err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Fatalf("%s left %v in TMPDIR (exit %v, stderr %q)", how, left, err, stderr.String())
			}
			if how == "head" && err != nil {
				t.Errorf("piped into head: %v, want exit 0 (stderr %q)", err, stderr.String())
			}
		})
	}
}
