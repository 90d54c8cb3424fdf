package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestTopicsAlterRetention: topics alter --retention 3d changes the retention; above the
// deployment's maximum, or -1 / infinite where there is one, it fails naming the setting
// (strata:maxRetentionDays, --max-retention) and changes nothing; a bad value is a usage
// error; without a maximum, infinite keeps records for ever.
func TestTopicsAlterRetention(t *testing.T) {
	url := startNode(t, runtime.Config{Node: node.Config{Topics: log.TopicDefaults{MaxRetention: 7 * 24 * time.Hour}}})
	cli(t, url, "", "topics", "create", "orders", "--partitions", "1", "--retention", "1d")
	if got := rows(cli(t, url, "", "topics", "alter", "orders", "--retention", "3d")); len(got) != 2 || got[1] != "orders 1 72h0m0s - delete" {
		t.Fatalf("topics alter orders --retention 3d: %q", got)
	}
	for _, v := range []string{"8d", "-1", "infinite"} {
		err := cliErr(t, url, "topics", "alter", "orders", "--retention", v)
		if exitCode(err) != 1 || !strings.Contains(err.Error(), "strata:maxRetentionDays") || !strings.Contains(err.Error(), "--max-retention") {
			t.Errorf("--retention %s: %v (exit %d), want a refusal naming strata:maxRetentionDays and --max-retention", v, err, exitCode(err))
		}
	}
	for _, v := range []string{"banana", "0", "-2h"} {
		if err := cliErr(t, url, "topics", "alter", "orders", "--retention", v); exitCode(err) != 2 {
			t.Errorf("--retention %s: %v, want a usage error", v, err)
		}
	}
	if err := cliErr(t, url, "topics", "alter", "orders", "--retention", "1d", "--partitions", "2"); exitCode(err) != 2 {
		t.Errorf("--retention with --partitions: %v, want a usage error", err)
	}
	var tj topicJSON
	if err := json.Unmarshal([]byte(cli(t, url, "", "--json", "topics", "describe", "orders")), &tj); err != nil || tj.RetentionMs != 3*24*3600*1000 {
		t.Fatalf("describe after refusals: %+v (%v), want retention 3d", tj, err)
	}

	url = startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders", "--partitions", "1")
	if err := json.Unmarshal([]byte(cli(t, url, "", "--json", "topics", "alter", "orders", "--retention", "infinite")), &tj); err != nil || tj.RetentionMs != 9223372036854 {
		t.Fatalf("alter --retention infinite without a maximum: %+v (%v), want for ever", tj, err)
	}
	if got := rows(cli(t, url, "", "topics", "alter", "orders", "--retention", "-1")); len(got) != 2 || got[1] != "orders 1 infinite - delete" {
		t.Fatalf("topics alter orders --retention -1: %q", got)
	}
}
