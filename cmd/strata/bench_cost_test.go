//go:build bench

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store/awstest"
)

// TestBenchCostNoMeasure prices the design profile: the report has every section, the
// cost targets and the tier's flow, the plots are written, and --body json prices the
// JSON body.
func TestBenchCostNoMeasure(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--plot-dir", dir)
	if err != nil {
		t.Fatalf("bench cost: %v\n%s", err, errOut)
	}
	for _, want := range []string{"design values (not measured), idempotency keys true", "1040 B per encoded record",
		"== aggregation tier flow", "$/day folded claims", "$/day fenced", "== targets (issue 20)", "built levers: function-url, tier, folded, fenced, consumer-window",
		"Kinesis provisioned, KPL aggregation", "where the money goes", "function URL, tier 1000 ms / 16 MiB, consumer window 1 s",
		"claims priced as profiled"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, png := range []string{"cost-producers.png", "cost-linger.png"} {
		if fi, err := os.Stat(filepath.Join(dir, png)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", png, err)
		}
	}
	out, _, err = cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--body", "json")
	if err != nil || !strings.Contains(out, "1400 B per encoded record, 11µs body CPU per record") {
		t.Errorf("--body json: %v; report head:\n%.600s", err, out)
	}
	if _, _, err := cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--body", "xml"); err == nil {
		t.Error("--body xml accepted")
	}
	out, _, err = cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--built", "function-url,tier,folded,fenced,manifest,consumer-window")
	if err != nil || !strings.Contains(out, "built levers: function-url, tier, folded, fenced, manifest, consumer-window") || strings.Contains(out, "would meet (modelled)") {
		t.Errorf("--built with every lever: %v; every configuration should count as built", err)
	}
	if _, _, err := cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--built", "cache"); err == nil {
		t.Error("--built cache accepted")
	}
	// Without fenced among the built levers every row pricing it is modelled.
	out, _, err = cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--built", "function-url,tier,folded,consumer-window")
	if err != nil || !strings.Contains(out, "function URL, tier 500 ms / 16 MiB, consumer window 1 s") || !strings.Contains(out, "would meet (modelled)") {
		t.Errorf("--built without fenced: %v; the fenced rows should count as modelled", err)
	}
	out, _, err = cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--claims", "folded")
	if err != nil || !strings.Contains(out, "claims priced folded claims (one per request)") {
		t.Errorf("--claims folded: %v", err)
	}
	if _, _, err := cliCtx(context.Background(), "", "bench", "cost", "--no-measure", "--claims", "none"); err == nil {
		t.Error("--claims none accepted")
	}
}

// TestBenchCostMeasured counts on the emulator (it fails without one when
// STRATA_REQUIRE_EMULATOR=1): the report says the profile and the group-commit figures
// were counted, shows the retries' counts and each group case's batches.
func TestBenchCostMeasured(t *testing.T) {
	awstest.Endpoint(t)
	out, errOut, err := cliCtx(context.Background(), "", "bench", "cost")
	if err != nil {
		t.Fatalf("bench cost: %v\n%s", err, errOut)
	}
	for _, want := range []string{"Counted with group commit", "16 appenders, 4 partition(s) per append, idempotent=true, 50ms window, 48 appends in",
		"Profile (counted on the emulator, idempotency keys true)", "retries (Strata-Attempt 1, not priced) per retry: ", "Group commit (counted on the emulator, 16 concurrent appenders, 50ms window)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
