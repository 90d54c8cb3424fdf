// Package peers drives a local throughput comparison between Strata (`strata dev`, the
// embedded backend, acknowledging after fsync) and its peers on loopback: NATS
// JetStream (file storage, with `sync_interval: always` and with its default sync) and
// Redis Streams (`appendfsync always`). Each system runs as a child process on
// 127.0.0.1 with a fresh data directory, is driven by its own idiomatic client, and is
// stopped and cleaned up after each run. It reports records/s, ack latency p50/p99 and
// the server's CPU-seconds per 100k records.
package peers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config sizes a comparison.
type Config struct {
	Records    int           // records per run (default 200,000)
	ValueBytes int           // bytes per record (default 1,024)
	Producers  []int         // default 1 and 4
	Consumers  int           // consumers reading concurrently (default 1)
	Runs       int           // runs per point; medians are reported (default 3)
	Partitions int           // Strata partitions (default 8)
	RunTimeout time.Duration // bound of one run (default 2m)
	// Binaries: empty skips that system.
	StrataBin, NATSBin, RedisBin string
	// StrataBufferBytes, when set, replaces the SDK's default producer buffer
	// (client.DefaultBufferBytes; the batch bytes follow it, half of it), to show what a
	// larger buffer buys in throughput and costs in ack latency.
	StrataBufferBytes int
	// SlowRecords, when set, replaces Records for the systems that fsync every message
	// one by one (JetStream with sync_interval: always), which take minutes otherwise.
	SlowRecords int
	// Systems, when set, restricts the run to these names (see Systems).
	Only []string
}

func (c *Config) defaults() {
	if c.Records == 0 {
		c.Records = 200000
	}
	if c.ValueBytes == 0 {
		c.ValueBytes = 1024
	}
	if len(c.Producers) == 0 {
		c.Producers = []int{1, 4}
	}
	if c.Consumers == 0 {
		c.Consumers = 1
	}
	if c.Runs == 0 {
		c.Runs = 3
	}
	if c.Partitions == 0 {
		c.Partitions = 8
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = 2 * time.Minute
	}
}

// Run is one measured run.
type Run struct {
	System        string
	Producers     int
	Consumers     int
	Records       int
	Elapsed       time.Duration // first send to last record consumed
	RecordsPerSec float64
	AckP50        time.Duration
	AckP99        time.Duration
	CPUPer100k    float64 // server CPU-seconds (user+system) per 100k records
	Err           string
}

// system is one peer: how to start it and how to drive one run against it.
type system struct {
	name  string
	slow  bool // fsyncs message by message: runs SlowRecords
	start func(ctx context.Context, cfg Config, dir string) (*server, error)
	drive func(ctx context.Context, cfg Config, srv *server, producers int) (driven, error)
}

// driven is what a driver measured.
type driven struct {
	elapsed time.Duration
	acks    []time.Duration
}

// Systems lists the systems a Config enables, in print order.
func Systems(cfg Config) []string {
	var out []string
	for _, s := range systems(cfg) {
		out = append(out, s.name)
	}
	return out
}

func systems(cfg Config) []system {
	var all []system
	if cfg.StrataBin != "" {
		all = append(all, system{"strata dev (fsync per ack)", false, startStrata, driveStrata})
	}
	if cfg.NATSBin != "" {
		all = append(all,
			system{"jetstream sync_interval=always", true, natsStarter(true), driveNATS},
			system{"jetstream default sync", false, natsStarter(false), driveNATS})
	}
	if cfg.RedisBin != "" {
		all = append(all, system{"redis appendfsync always", false, startRedis, driveRedis})
	}
	if len(cfg.Only) == 0 {
		return all
	}
	var out []system
	for _, s := range all {
		for _, o := range cfg.Only {
			if strings.HasPrefix(s.name, o) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Compare runs every system at every producer count cfg.Runs times; each result is
// passed to progress (may be nil) as it comes.
func Compare(ctx context.Context, cfg Config, progress func(Run)) ([]Run, error) {
	cfg.defaults()
	if cfg.Records < 1 || cfg.ValueBytes < 1 || cfg.Consumers < 1 || cfg.Runs < 1 {
		return nil, errors.New("peers: records, value bytes, consumers and runs must be positive")
	}
	var out []Run
	for _, s := range systems(cfg) {
		for _, p := range cfg.Producers {
			for range cfg.Runs {
				r := runOnce(ctx, cfg, s, p)
				if progress != nil {
					progress(r)
				}
				out = append(out, r)
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
			}
		}
	}
	return out, nil
}

func runOnce(ctx context.Context, cfg Config, s system, producers int) Run {
	if s.slow && cfg.SlowRecords > 0 {
		cfg.Records = cfg.SlowRecords
	}
	r := Run{System: s.name, Producers: producers, Consumers: cfg.Consumers, Records: cfg.Records}
	dir, err := os.MkdirTemp("", "strata-peers-")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	srv, err := s.start(ctx, cfg, dir)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer srv.stop()
	cpu0, err := cpuSeconds(srv.pid())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	d, err := s.drive(ctx, cfg, srv, producers)
	cpu1, cerr := cpuSeconds(srv.pid())
	if err == nil {
		err = cerr
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Elapsed = d.elapsed
	r.RecordsPerSec = float64(cfg.Records) / d.elapsed.Seconds()
	r.AckP50, r.AckP99 = percentile(d.acks, 0.50), percentile(d.acks, 0.99)
	r.CPUPer100k = (cpu1 - cpu0) / float64(cfg.Records) * 100000
	return r
}

// Median is the median run of each (system, producers) point.
type Median struct {
	System        string
	Producers     int
	Runs          int
	Records       int // per run
	RecordsPerSec float64
	AckP50        time.Duration
	AckP99        time.Duration
	CPUPer100k    float64
	Errors        []string
}

// Medians groups runs by system and producers (in first-seen order) and takes the
// median of each figure separately.
func Medians(runs []Run) []Median {
	type key struct {
		s string
		p int
	}
	var order []key
	groups := map[key][]Run{}
	for _, r := range runs {
		k := key{r.System, r.Producers}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Median
	for _, k := range order {
		m := Median{System: k.s, Producers: k.p}
		var rps, cpu []float64
		var p50, p99 []time.Duration
		for _, r := range groups[k] {
			if r.Err != "" {
				m.Errors = append(m.Errors, r.Err)
				continue
			}
			m.Runs++
			m.Records = r.Records
			rps, cpu = append(rps, r.RecordsPerSec), append(cpu, r.CPUPer100k)
			p50, p99 = append(p50, r.AckP50), append(p99, r.AckP99)
		}
		m.RecordsPerSec, m.CPUPer100k = medianF(rps), medianF(cpu)
		m.AckP50, m.AckP99 = percentile(p50, 0.5), percentile(p99, 0.5)
		out = append(out, m)
	}
	return out
}

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank q-quantile of ds (0 when empty); it sorts ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(q*float64(len(ds)) + 0.5)
	if i < 1 {
		i = 1
	}
	if i > len(ds) {
		i = len(ds)
	}
	return ds[i-1]
}

// cpuSeconds reads utime+stime of pid from /proc (clock ticks of 1/100 s on Linux).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("peers: read cpu of %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU extracts utime+stime (fields 14 and 15) from a /proc/<pid>/stat line;
// the command name (field 2) may hold spaces and parentheses, so fields are counted
// after its last ')'.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("peers: malformed /proc stat line")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14 → f[11], stime field 15 → f[12].
	if len(f) < 13 {
		return 0, errors.New("peers: short /proc stat line")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("peers: malformed cpu fields in /proc stat line")
	}
	return float64(u+s) / 100, nil
}

// server is a child process listening on 127.0.0.1.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	mu   sync.Mutex
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop ends the child (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// launch starts bin with args (output to dir/server.log) and waits until addr accepts.
func launch(ctx context.Context, dir, addr, bin string, args ...string) (*server, error) {
	logf, err := os.Create(dir + "/server.log")
	if err != nil {
		return nil, err
	}
	// The child runs in dir, so a relative binary path must be resolved first.
	if abs, err := exec.LookPath(bin); err == nil {
		if abs, err = filepath.Abs(abs); err == nil {
			bin = abs
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = logf, logf, dir
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("peers: start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, addr: addr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(dir + "/server.log")
			return nil, fmt.Errorf("peers: %s exited: %s", bin, strings.TrimSpace(string(log)))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("peers: %s did not listen on %s", bin, addr)
		}
	}
}

// freeAddr returns a free 127.0.0.1 port's address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func payload(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// ackLog collects ack latencies from many goroutines.
type ackLog struct {
	mu   sync.Mutex
	acks []time.Duration
}

func (a *ackLog) add(ds ...time.Duration) {
	a.mu.Lock()
	a.acks = append(a.acks, ds...)
	a.mu.Unlock()
}

// split divides n records among k workers.
func split(n, k, i int) int {
	q := n / k
	if i < n%k {
		q++
	}
	return q
}

// report sends err on ch unless ch is full (the first errors are enough).
func report(ch chan<- error, err error) {
	select {
	case ch <- err:
	default:
	}
}

// firstErr is the first error reported on ch, or nil when none was.
func firstErr(ch <-chan error) error {
	select {
	case err := <-ch:
		return err
	default:
		return nil
	}
}

// tally counts the records consumers read and says when every record of a run is in.
type tally struct {
	want     int64
	consumed atomic.Int64
	allIn    chan struct{}
	once     sync.Once
}

func newTally(records int) *tally {
	return &tally{want: int64(records), allIn: make(chan struct{})}
}

// add counts n more records read.
func (t *tally) add(n int) {
	if t.consumed.Add(int64(n)) >= t.want {
		t.once.Do(func() { close(t.allIn) })
	}
}

// wait blocks until every record is read, a consumer reports an error on cerr (nil:
// none can), or ctx ends.
func (t *tally) wait(ctx context.Context, cerr <-chan error) error {
	select {
	case <-t.allIn:
		return nil
	case err := <-cerr:
		return fmt.Errorf("consume: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("consume: %d of %d records: %w", t.consumed.Load(), t.want, ctx.Err())
	}
}
