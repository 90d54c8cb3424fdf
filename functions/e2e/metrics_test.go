package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// TestAPIMetricsAggregatedPerEnvironment: the api bootstrap under the Runtime Interface
// Emulator writes no EMF line per append request; the first invocation after the flush
// interval writes what the environment observed, as few lines as the dimension values
// allow, with the alarmed metrics under the names and dimension sets the stack's alarms
// read (pkg/deploy) and every append request counted.
func TestAPIMetricsAggregatedPerEnvironment(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, "api", d.env())
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "emf", "partitions": 1}, nil), nil)
	const n = 20
	for i := range n {
		body := map[string]any{"records": []map[string]any{{"value": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "v-%d", i))}}}
		call(t, api, 200, httpEvent(t, "POST", "/v1/topics/emf/records", "", body, nil), nil)
	}
	if api.logged(`"_aws"`) {
		t.Fatalf("EMF lines before the interval passed:\n%s", api.log.String())
	}
	time.Sleep(emf.DefaultFlushInterval)
	// This invocation finds the interval passed: its first observation writes the rest.
	call(t, api, 200, httpEvent(t, "GET", "/v1/topics/emf", "", nil, nil), nil)
	if !api.logged(emf.AppendAckLatency) {
		t.Fatalf("no EMF line after the interval:\n%s", api.log.String())
	}
	var lines []map[string]json.RawMessage
	for _, l := range strings.Split(api.log.String(), "\n") {
		if i := strings.Index(l, `{"_aws"`); i >= 0 {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l[i:]), &doc); err != nil {
				t.Fatalf("line %s: %v", l, err)
			}
			lines = append(lines, doc)
		}
	}
	// The create's route and the appends' differ: two lines at most for 21 requests.
	if len(lines) == 0 || len(lines) > 2 {
		t.Fatalf("%d EMF lines for %d requests, want 1 or 2:\n%s", len(lines), n+1, api.log.String())
	}
	var appends float64
	var latency struct{ Count int64 }
	var latencyDims [][]string
	for _, doc := range lines {
		var meta struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		}
		if err := json.Unmarshal(doc["_aws"], &meta); err != nil {
			t.Fatal(err)
		}
		for _, dir := range meta.CloudWatchMetrics {
			if dir.Namespace != deploy.MetricsNamespace {
				t.Errorf("namespace %q", dir.Namespace)
			}
			for _, m := range dir.Metrics {
				if m.Name == deploy.MetricAppendLatency {
					latencyDims = append(latencyDims, dir.Dimensions...)
				}
			}
		}
		var route string
		_ = json.Unmarshal(doc["route"], &route)
		if strings.HasSuffix(route, "/records") {
			var v float64
			_ = json.Unmarshal(doc[emf.HTTPRequests], &v)
			appends += v
		}
		if raw, ok := doc[deploy.MetricAppendLatency]; ok {
			if err := json.Unmarshal(raw, &latency); err != nil {
				t.Fatalf("%s = %s: %v", deploy.MetricAppendLatency, raw, err)
			}
		}
	}
	if appends != n || latency.Count != n {
		t.Fatalf("append requests counted %v, latencies %d, want %d", appends, latency.Count, n)
	}
	// The p99 alarm reads the dimensionless rollup; the dashboard the per-topic set.
	for _, want := range [][]string{{}, {"topic"}} {
		if !slices.ContainsFunc(latencyDims, func(s []string) bool { return slices.Equal(s, want) }) {
			t.Errorf("%s not emitted with dimensions %v (%v)", deploy.MetricAppendLatency, want, latencyDims)
		}
	}
}

// TestAPIMetricsFlushedOnSIGTERM: what the api function holds is written when Lambda
// shuts its environment down (SIGTERM, which the function receives because it registers
// an internal extension), before the interval passed.
func TestAPIMetricsFlushedOnSIGTERM(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, "api", d.env())
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "term", "partitions": 1}, nil), nil)
	const n = 5
	for i := range n {
		body := map[string]any{"records": []map[string]any{{"value": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "v-%d", i))}}}
		call(t, api, 200, httpEvent(t, "POST", "/v1/topics/term/records", "", body, nil), nil)
	}
	if strings.Contains(api.log.String(), `"_aws"`) {
		t.Fatalf("EMF lines before the interval passed:\n%s", api.log.String())
	}
	pid := bootstrapPID(t, d.cfg.TablePrefix)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !api.logged(`"strata_records_appended_total":5`) {
		t.Fatalf("no EMF line with the %d appends after SIGTERM:\n%s", n, api.log.String())
	}
}

// bootstrapPID finds the api bootstrap this test's emulator runs: the process whose
// environment names the test's table prefix and whose command is a bootstrap.
func bootstrapPID(t *testing.T, tablePrefix string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range dirs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err1 != nil || err2 != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmd), "\x00")
		if filepath.Base(argv0) == "bootstrap" && strings.Contains(string(env), deploy.EnvTablePrefix+"="+tablePrefix+"\x00") {
			return pid
		}
	}
	t.Fatalf("no bootstrap process with %s=%s", deploy.EnvTablePrefix, tablePrefix)
	return 0
}
