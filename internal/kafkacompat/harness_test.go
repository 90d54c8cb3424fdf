package kafkacompat_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kafkaref"
)

// API keys the scenarios gate on.
const (
	keyJoinGroup      int16 = 11
	keyHeartbeat      int16 = 12
	keyLeaveGroup     int16 = 13
	keySyncGroup      int16 = 14
	keyDescribeGroups int16 = 15
	keyListGroups     int16 = 16
	keyInitProducerID int16 = 22
	keyOffsetCommit   int16 = 8
	keyOffsetFetch    int16 = 9
)

// The reference broker is shared by the package's tests (it takes seconds to start);
// each scenario uses topics and groups of its own.
var (
	brokerOnce sync.Once
	broker     *kafkaref.Broker
	brokerErr  error
	brokerDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if broker != nil {
		broker.Stop()
	}
	if brokerDir != "" {
		_ = os.RemoveAll(brokerDir)
	}
	os.Exit(code)
}

// reference is the shared real broker, started on first use.
func reference(t testing.TB) *kafkaref.Broker {
	t.Helper()
	kafkaref.Require(t)
	brokerOnce.Do(func() {
		brokerDir, brokerErr = os.MkdirTemp("", "kafkaref-")
		if brokerErr != nil {
			return
		}
		broker, brokerErr = kafkaref.StartBroker(context.Background(), kafkaref.BrokerOptions{Dir: brokerDir})
	})
	if brokerErr != nil {
		t.Fatalf("reference broker: %v", brokerErr)
	}
	return broker
}

// gateway is `strata dev --kafka` on a fresh data directory (the local embedded
// backend), built from this tree, so the gateway is wired exactly as users run it.
type gateway struct {
	addr string
}

var (
	strataOnce sync.Once
	strataBin  string
	strataErr  error
)

// strataBinary builds cmd/strata once per test process.
func strataBinary(t testing.TB) string {
	t.Helper()
	strataOnce.Do(func() {
		root, err := kafkaref.Root()
		if err != nil {
			strataErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kafkacompat-strata-")
		if err != nil {
			strataErr = err
			return
		}
		strataBin = filepath.Join(dir, "strata")
		cmd := exec.Command("go", "build", "-o", strataBin, "./cmd/strata")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			strataErr = fmt.Errorf("go build ./cmd/strata: %w\n%s", err, out)
		}
	})
	if strataErr != nil {
		t.Fatal(strataErr)
	}
	return strataBin
}

func startGateway(t testing.TB, args ...string) *gateway {
	t.Helper()
	bin := strataBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"dev", "--data-dir", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0", "--console=false", "--kafka", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	must(t, err, "stdout")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start(), "start strata dev")
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "kafka listening on "); ok {
				addr <- strings.TrimSpace(a)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case a := <-addr:
		return &gateway{addr: a}
	case err := <-exited:
		t.Fatalf("strata dev --kafka exited: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("strata dev --kafka did not listen within 60 s\n%s", stderr.String())
	}
	return nil
}

// target is one side of a differential scenario.
type target struct {
	name string // "kafka" or "strata"
	addr string
}

func (tg target) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tg.addr), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// advertised is what addr's ApiVersions advertises, by API key: [min, max].
func advertised(t testing.TB, addr string) map[int16][2]int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatalf("ApiVersions of %s: %v", addr, err)
	}
	out := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out
}

// requireAPIs skips t, naming what is missing, unless the gateway at addr advertises
// every API in keys.
func requireAPIs(t testing.TB, addr string, keys ...int16) {
	t.Helper()
	have := advertised(t, addr)
	var missing []string
	for _, k := range keys {
		if _, ok := have[k]; !ok {
			missing = append(missing, kmsg.NameForKey(k))
		}
	}
	if len(missing) > 0 {
		t.Skipf("gateway does not advertise %s yet", strings.Join(missing, ", "))
	}
}

// differential runs scenario against the reference broker and a fresh gateway, each
// with names of its own, and fails unless both give the same result. gate, when not
// nil, runs first against the gateway and may skip (an API it does not advertise).
func differential[R any](t *testing.T, gate func(t *testing.T, gw target), scenario func(t *testing.T, tg target, name string) R) {
	t.Helper()
	gw := target{name: "strata", addr: startGateway(t).addr}
	if gate != nil {
		gate(t, gw)
	}
	ref := target{name: "kafka", addr: reference(t).Addr}
	results := map[string]R{}
	for _, tg := range []target{ref, gw} {
		ok := t.Run(tg.name, func(t *testing.T) {
			results[tg.name] = scenario(t, tg, uniqueName(t))
		})
		if !ok {
			return
		}
	}
	if !reflect.DeepEqual(results["kafka"], results["strata"]) {
		t.Errorf("the gateway disagrees with Kafka\nkafka:  %+v\nstrata: %+v", results["kafka"], results["strata"])
	}
}

// uniqueName is a Kafka-and-Strata-legal name unique to this run.
func uniqueName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	base := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	if len(base) > 60 {
		base = base[len(base)-60:]
	}
	return strings.Trim(base, "-.") + "-" + hex.EncodeToString(b[:])
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// errName is err's Kafka error name, "" for nil.
func errName(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "not a Kafka error: " + err.Error()
}

// raw is a connection speaking requests without a client library's checks or retries.
type raw struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func dial(t testing.TB, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	return &raw{t: t, c: c}
}

// roundTrip sends req at its version and decodes the answer.
func (r *raw) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.corr++
	if _, err := r.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)); err != nil {
		r.t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		r.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.c, body); err != nil {
		r.t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != r.corr {
		r.t.Fatalf("correlation id %d, want %d", corr, r.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != 18 {
		rd := kbin.Reader{Src: body}
		kmsg.SkipTags(&rd)
		body = rd.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decode %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// batch is a record batch v2 of values with a correct CRC-32C.
func batch(values ...[]byte) []byte {
	var body []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body = r.AppendTo(body)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)), Records: body, Length: int32(49 + len(body))}
	b.MaxTimestamp = b.FirstTimestamp
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func produceReq(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func must(t testing.TB, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}
