package emf_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/metrics/emf"
)

// TestKafkaGatewayFlush: a flush writes one line per API with the window's count,
// server errors and slowest request, rolled up without dimensions too; an empty window
// writes nothing.
func TestKafkaGatewayFlush(t *testing.T) {
	var buf bytes.Buffer
	k := emf.NewKafkaGateway(emf.New(&buf, "Strata", func() time.Time { return time.UnixMilli(1796092200000) }))
	k.Request("Produce", 2*time.Millisecond, false)
	k.Request("Produce", 5*time.Millisecond, true)
	k.Request("Fetch", time.Millisecond, false)
	k.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	var produce map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &produce); err != nil {
		t.Fatal(err)
	}
	if produce["api"] != "Produce" || produce[emf.KafkaRequests] != 2.0 || produce[emf.KafkaServerErrors] != 1.0 || produce[emf.KafkaRequestDurationMax] != 0.005 {
		t.Errorf("Produce line: %v", produce)
	}
	dims := produce["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	if b, _ := json.Marshal(dims); string(b) != `[["api"],[]]` {
		t.Errorf("dimensions %s, want the api and the rollup", b)
	}
	buf.Reset()
	k.Flush()
	if buf.Len() != 0 {
		t.Errorf("an empty window wrote %q", buf.String())
	}
}
