// Package kafkaref runs Apache Kafka itself for the Kafka checks: a single-node KRaft
// broker on 127.0.0.1 (the reference the gateway is compared with), and the Java tools
// and programs (the Java client, Kafka Connect, the perf tools) on the classpath that
// scripts/kafka-dist.sh resolves from Maven Central. Tests use Require, Classpath and
// StartBroker; cmd/kafka-broker serves scripts (the benchmark) the same broker.
package kafkaref

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvRequire, set to 1 (as CI does), turns every skip for a missing Java or Maven into a
// failure.
const EnvRequire = "STRATA_REQUIRE_KAFKA"

// ErrMissing is returned when java, javac or mvn is not installed.
var ErrMissing = errors.New("kafkaref: Java tooling missing")

// Available reports whether java, javac and mvn are on PATH, or which is not.
func Available() error {
	for _, tool := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s is not on PATH (apt-get install openjdk-17-jdk-headless maven)", ErrMissing, tool)
		}
	}
	return nil
}

// Root is the repository's root directory (the nearest directory above the working
// directory holding go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kafkaref: no go.mod above the working directory")
		}
		dir = parent
	}
}

var (
	cpOnce sync.Once
	cp     string
	cpErr  error
)

// Classpath is the Java classpath of Kafka's broker, tools, client and Connect, resolved
// once per process by scripts/kafka-dist.sh (which caches the artifacts in ~/.m2).
func Classpath(ctx context.Context) (string, error) {
	cpOnce.Do(func() {
		root, err := Root()
		if err != nil {
			cpErr = err
			return
		}
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "kafka-dist.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			cpErr = fmt.Errorf("kafkaref: scripts/kafka-dist.sh: %w\n%s", err, stderr.String())
			return
		}
		b, err := os.ReadFile(strings.TrimSpace(string(out)))
		if err != nil {
			cpErr = fmt.Errorf("kafkaref: classpath: %w", err)
			return
		}
		cp = strings.TrimSpace(string(b))
	})
	return cp, cpErr
}

// FreePort is a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ClusterID is a fresh Kafka cluster id (a random UUID in Kafka's base64 form), never
// starting with '-', which a command line would take for a flag (Kafka's own
// Uuid.randomUuid avoids it too).
func ClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// Broker is a running single-node KRaft broker (broker and controller in one JVM).
type Broker struct {
	// Addr is its PLAINTEXT listener, host:port.
	Addr string
	// Dir holds its config, data and log (broker.log).
	Dir  string
	cmd  *exec.Cmd
	done chan error
}

// BrokerOptions adjusts StartBroker.
type BrokerOptions struct {
	// Dir is where the broker keeps its config and data (required, fresh).
	Dir string
	// Port is the PLAINTEXT listener's port (0: a free one).
	Port int
	// HeapMB is the JVM's maximum heap (default 512).
	HeapMB int
	// Properties are added to, or override, the broker's server.properties.
	Properties map[string]string
}

// JavaCommand is `java -cp classpath args...` with Kafka's log4j2 settings (warnings and
// up to stderr), ready to start.
func JavaCommand(ctx context.Context, classpath string, jvmArgs []string, args ...string) *exec.Cmd {
	all := append([]string{"-cp", classpath, "-Djava.awt.headless=true", "-Dorg.apache.logging.log4j.level=WARN"}, jvmArgs...)
	return exec.CommandContext(ctx, "java", append(all, args...)...)
}

// StartBroker formats storage with a random cluster id and starts `kafka.Kafka` on it,
// returning once the broker answers Metadata with itself (at most two minutes).
func StartBroker(ctx context.Context, opts BrokerOptions) (*Broker, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	classpath, err := Classpath(ctx)
	if err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("kafkaref: BrokerOptions.Dir is required")
	}
	port := opts.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	cport, err := FreePort()
	if err != nil {
		return nil, err
	}
	heap := opts.HeapMB
	if heap == 0 {
		heap = 512
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	props := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          "1",
		"controller.quorum.bootstrap.servers":              fmt.Sprintf("127.0.0.1:%d", cport),
		"listeners":                                        fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, cport),
		"advertised.listeners":                             "PLAINTEXT://" + addr,
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                                         filepath.Join(opts.Dir, "data"),
		"num.partitions":                                   "1",
		"offsets.topic.replication.factor":                 "1",
		"offsets.topic.num.partitions":                     "3",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"group.initial.rebalance.delay.ms":                 "0",
		"auto.create.topics.enable":                        "false",
	}
	for k, v := range opts.Properties {
		props[k] = v
	}
	var conf strings.Builder
	for k, v := range props {
		fmt.Fprintf(&conf, "%s=%s\n", k, v)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	confPath := filepath.Join(opts.Dir, "server.properties")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o644); err != nil {
		return nil, err
	}
	jvm := []string{fmt.Sprintf("-Xmx%dm", heap), "-Xms128m", "-XX:+UseSerialGC"}
	format := JavaCommand(ctx, classpath, jvm, "kafka.tools.StorageTool", "format", "--standalone", "--cluster-id="+ClusterID(), "-c", confPath)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafkaref: format storage: %w\n%s", err, out)
	}
	logPath := filepath.Join(opts.Dir, "broker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := JavaCommand(context.WithoutCancel(ctx), classpath, jvm, "kafka.Kafka", confPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("kafkaref: start broker: %w", err)
	}
	b := &Broker{Addr: addr, Dir: opts.Dir, cmd: cmd, done: make(chan error, 1)}
	go func() { b.done <- cmd.Wait(); logf.Close() }()
	if err := b.wait(ctx, 2*time.Minute); err != nil {
		b.Stop()
		return nil, fmt.Errorf("%w\n%s", err, tail(logPath, 4000))
	}
	return b, nil
}

// wait polls the broker with Metadata until it names itself as a broker.
func (b *Broker) wait(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		select {
		case err := <-b.done:
			b.done <- err
			return fmt.Errorf("kafkaref: broker exited before answering: %v", err)
		default:
		}
		if err := ping(ctx, b.Addr); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaref: broker on %s did not answer within %s", b.Addr, limit)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// ping succeeds once the broker answers and its controller takes topic creations (a
// validate-only CreateTopics: a broker that answers Metadata may not yet).
func ping(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		return err
	}
	resp, err := kadm.NewClient(cl).ValidateCreateTopics(pctx, 1, 1, nil, "kafkaref-ready")
	if err != nil {
		return err
	}
	return resp.Error()
}

// Stop ends the broker (SIGTERM, then SIGKILL after 20 s) and waits for it.
func (b *Broker) Stop() {
	if b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-b.done:
		b.done <- err
	case <-time.After(20 * time.Second):
		_ = b.cmd.Process.Kill()
		err := <-b.done
		b.done <- err
	}
}

// Log is the tail of the broker's log, for a failure's message.
func (b *Broker) Log() string { return tail(filepath.Join(b.Dir, "broker.log"), 4000) }

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
