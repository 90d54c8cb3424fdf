package kafkacompat_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stratalog/strata/internal/kafkaref"
)

// EnvPython names the Python with confluent-kafka installed (scripts/kafka-clients.sh
// sets it to its pinned venv).
const EnvPython = "STRATA_KAFKA_PYTHON"

// python is the Python with confluent-kafka installed; it skips t (fails it under
// STRATA_REQUIRE_KAFKA=1) when EnvPython is not set.
func python(t testing.TB) string {
	t.Helper()
	py := os.Getenv(EnvPython)
	if py == "" {
		if os.Getenv(kafkaref.EnvRequire) == "1" {
			t.Fatalf("%s=1 but %s is not set (scripts/kafka-clients.sh sets it)", kafkaref.EnvRequire, EnvPython)
		}
		t.Skipf("skipping: %s is not set (run scripts/kafka-clients.sh, which installs confluent-kafka)", EnvPython)
	}
	return py
}

// rdkafkaCheck runs testdata/rdkafka_check.py with args, returning its output lines.
func rdkafkaCheck(t testing.TB, args ...string) []string {
	t.Helper()
	return rdkafkaCheckEnv(t, nil, args...)
}

// rdkafkaCheckEnv is rdkafkaCheck with env added to the script's environment.
func rdkafkaCheckEnv(t testing.TB, env []string, args ...string) []string {
	t.Helper()
	py := python(t)
	script, err := filepath.Abs(filepath.Join("testdata", "rdkafka_check.py"))
	must(t, err, "script")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rdkafka_check.py %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, lastLines(stdout.String(), 20), lastLines(stderr.String(), 40))
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

// TestRdkafkaClient: librdkafka (confluent-kafka for Python) produces with acks=all and
// consumes by assignment, then in a group committing, against the real broker and the
// gateway (idempotently where the gateway advertises InitProducerId).
func TestRdkafkaClient(t *testing.T) {
	const count = 30
	python(t)
	gw := target{name: "strata", addr: startGateway(t).addr}
	_, idempotent := advertised(t, gw.addr)[keyInitProducerID]
	for _, tg := range []target{{name: "kafka", addr: reference(t).Addr}, gw} {
		t.Run(tg.name, func(t *testing.T) {
			topic := uniqueName(t)
			adm := kadm.NewClient(tg.client(t))
			createTopic(t, adm, topic, 3)
			rdkafkaCheck(t, "produce", tg.addr, topic, fmt.Sprint(count), fmt.Sprint(idempotent || tg.name == "kafka"))
			got, n := consumed(t, rdkafkaCheck(t, "assign", tg.addr, topic, "3", fmt.Sprint(count)))
			checkPerKey(t, "assigned consumer", got, n, count)
			t.Run("group", func(t *testing.T) {
				if tg.name == "strata" {
					requireAPIs(t, tg.addr, keyJoinGroup, keySyncGroup, keyHeartbeat, keyLeaveGroup)
				}
				grp := topic + "-g"
				got, n := consumed(t, rdkafkaCheck(t, "group", tg.addr, topic, grp, fmt.Sprint(count)))
				checkPerKey(t, "group consumer", got, n, count)
				committed, err := adm.FetchOffsets(ctxT(t), grp)
				must(t, err, "fetch offsets")
				var sum int64
				committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
				if sum != count {
					t.Errorf("the group committed %d records in all, want %d", sum, count)
				}
			})
		})
	}
}
