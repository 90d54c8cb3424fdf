package peers

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// MemPoint is the memory of one `strata dev` process serving a topic.
type MemPoint struct {
	Partitions int
	Records    int
	IdleKB     int64 // VmRSS after start, before any topic
	ServingKB  int64 // VmRSS after appending and reading every record back
	PeakKB     int64 // VmHWM, the high-water mark
}

// DevMemory starts `strata dev` once per partition count, appends records (1 KB values
// through the SDK's producer, round-robin) to a topic of that many partitions, reads them
// all back with long polls, and reads the server's resident memory from /proc.
func DevMemory(ctx context.Context, cfg Config, partitions []int, records int) ([]MemPoint, error) {
	cfg.defaults()
	if cfg.StrataBin == "" {
		return nil, fmt.Errorf("peers: the strata binary is required")
	}
	var out []MemPoint
	for _, n := range partitions {
		pt, err := devMemoryOnce(ctx, cfg, n, records)
		if err != nil {
			return out, err
		}
		out = append(out, pt)
	}
	return out, nil
}

func devMemoryOnce(ctx context.Context, cfg Config, parts, records int) (MemPoint, error) {
	pt := MemPoint{Partitions: parts, Records: records}
	dir, err := os.MkdirTemp("", "strata-mem-")
	if err != nil {
		return pt, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	srv, err := startStrata(ctx, cfg, dir)
	if err != nil {
		return pt, err
	}
	defer srv.stop()
	if pt.IdleKB, _, err = rss(srv.pid()); err != nil {
		return pt, err
	}
	c, err := client.New("http://" + srv.addr)
	if err != nil {
		return pt, err
	}
	if _, err := c.CreateTopic(ctx, "mem", client.TopicConfig{Partitions: int32(parts)}); err != nil {
		return pt, err
	}
	prod, err := client.NewProducer(ctx, c, "mem", client.ProducerConfig{Partitions: int32(parts)})
	if err != nil {
		return pt, err
	}
	value := payload(cfg.ValueBytes)
	for range records {
		if _, err := prod.Send(ctx, client.Record{Value: value}); err != nil {
			return pt, err
		}
	}
	if err := prod.Close(ctx); err != nil {
		return pt, err
	}
	for p := range parts {
		for off := int64(0); ; {
			r, err := c.Poll(ctx, "mem", int32(p), off, client.PollOptions{MaxRecords: 10000, MaxBytes: 3 << 20})
			if err != nil {
				return pt, err
			}
			if len(r.Records) == 0 {
				break
			}
			off = r.NextOffset
		}
	}
	time.Sleep(100 * time.Millisecond)
	pt.ServingKB, pt.PeakKB, err = rss(srv.pid())
	return pt, err
}

// rss reads VmRSS and VmHWM (kB) of pid.
func rss(pid int) (cur, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatus(string(b))
}

func parseStatus(s string) (cur, peak int64, err error) {
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, 0, fmt.Errorf("peers: malformed %s line", k)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err == nil && n < 0 {
			err = fmt.Errorf("negative size %d", n)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("peers: malformed %s line: %w", k, err)
		}
		if k == "VmRSS" {
			cur = n
		} else {
			peak = n
		}
	}
	if cur <= 0 {
		return 0, 0, fmt.Errorf("peers: no VmRSS in /proc status")
	}
	return cur, peak, nil
}
