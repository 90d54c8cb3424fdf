package kafkacompat_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stratalog/strata/internal/kafkaref"
)

var (
	javaOnce    sync.Once
	javaClasses string
	javaErr     error
)

// javaCheck compiles testdata/KafkaCheck.java against kafka-clients (once per run) and
// runs it with args, returning its output lines.
func javaCheck(t testing.TB, args ...string) []string {
	t.Helper()
	return javaCheckEnv(t, nil, args...)
}

// javaCheckEnv is javaCheck with env added to the program's environment.
func javaCheckEnv(t testing.TB, env []string, args ...string) []string {
	t.Helper()
	cp := kafkaref.ClasspathT(t)
	javaOnce.Do(func() {
		javaClasses, javaErr = os.MkdirTemp("", "kafkacheck-")
		if javaErr != nil {
			return
		}
		src, err := filepath.Abs(filepath.Join("testdata", "KafkaCheck.java"))
		if err != nil {
			javaErr = err
			return
		}
		out, err := exec.Command("javac", "-cp", cp, "-d", javaClasses, src).CombinedOutput()
		if err != nil {
			javaErr = fmt.Errorf("javac: %w\n%s", err, out)
		}
	})
	if javaErr != nil {
		t.Fatal(javaErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := kafkaref.JavaCommand(ctx, javaClasses+string(os.PathListSeparator)+cp, []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, append([]string{"KafkaCheck"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("KafkaCheck %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), lastLines(stderr.String(), 40))
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// consumed is the records a client printed as "record PARTITION OFFSET KEY VALUE": per
// key, the values in the order read, and how many records in all.
func consumed(t testing.TB, lines []string) (perKey map[string][]string, n int) {
	t.Helper()
	perKey = map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 5 || f[0] != "record" {
			continue
		}
		perKey[f[3]] = append(perKey[f[3]], f[4])
		n++
	}
	return perKey, n
}

// wantPerKey is what a client reads of count records keyed k(i%5), valued v(i): every
// key's values in produce order.
func wantPerKey(count int) map[string][]string {
	out := map[string][]string{}
	for i := range count {
		k := fmt.Sprintf("k%d", i%5)
		out[k] = append(out[k], fmt.Sprintf("v%d", i))
	}
	return out
}

func checkPerKey(t testing.TB, who string, got map[string][]string, n, count int) {
	t.Helper()
	if n != count {
		t.Errorf("%s read %d records, want %d", who, n, count)
	}
	want := wantPerKey(count)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.Join(got[k], ",") != strings.Join(want[k], ",") {
			t.Errorf("%s: key %s read %v, want %v", who, k, got[k], want[k])
		}
	}
}

// TestJavaClient: Apache Kafka's Java client (kafka-clients 4.3) produces with acks=all
// and consumes by assignment, then in a group (classic protocol) committing, against the
// real broker and the gateway. It produces idempotently where the gateway advertises
// InitProducerId.
func TestJavaClient(t *testing.T) {
	const count = 30
	gw := target{name: "strata", addr: startGateway(t).addr}
	idempotent := false
	if _, ok := advertised(t, gw.addr)[keyInitProducerID]; ok {
		idempotent = true
	}
	for _, tg := range []target{{name: "kafka", addr: reference(t).Addr}, gw} {
		t.Run(tg.name, func(t *testing.T) {
			topic := uniqueName(t)
			adm := kadm.NewClient(tg.client(t))
			createTopic(t, adm, topic, 3)
			javaCheck(t, "produce", tg.addr, topic, fmt.Sprint(count), fmt.Sprint(idempotent || tg.name == "kafka"))
			got, n := consumed(t, javaCheck(t, "assign", tg.addr, topic, "3", fmt.Sprint(count)))
			checkPerKey(t, "assigned consumer", got, n, count)
			t.Run("group", func(t *testing.T) {
				if tg.name == "strata" {
					requireAPIs(t, tg.addr, keyJoinGroup, keySyncGroup, keyHeartbeat, keyLeaveGroup)
				}
				grp := topic + "-g"
				got, n := consumed(t, javaCheck(t, "group", tg.addr, topic, grp, fmt.Sprint(count)))
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
