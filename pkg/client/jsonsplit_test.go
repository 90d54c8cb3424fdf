package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

// TestProducerJSONSplitsRequestRefusedTooLarge: the producer's JSON path (a server
// that does not take the binary format) splits a request refused with 413 into
// requests within the limit it then knows — the limit the 413 states (its
// Strata-Max-Body-Bytes header and max_body_bytes), or half the refused body when the
// 413 states none — and every record lands once, in order per partition. The server
// refuses every binary append with 415 and every JSON append above the limit with 413
// (nothing appended), and serves the rest with the assembled server's handler.
func TestProducerJSONSplitsRequestRefusedTooLarge(t *testing.T) {
	const limit = 96 << 10 // bytes of a JSON append body the test server takes
	const parts, perPart = 3, 40
	value := bytes.Repeat([]byte("v"), 4<<10) // 120 records of 4 KiB: ~640 KiB of JSON
	for _, tc := range []struct {
		name       string
		stateLimit bool // the 413 carries the limit
		want413    int  // 413 answers the producer gets (-1: at least one)
	}{
		{"the 413 states the limit", true, 1},
		{"the 413 states none", false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rt.Close(context.Background()) })
			h := rt.Handler()
			var mu sync.Mutex
			var tooLarge, jsonAppends, biggest int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/records") {
					h.ServeHTTP(w, r)
					return
				}
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				if strings.HasPrefix(r.Header.Get("Content-Type"), wire.ContentTypeBlocks) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnsupportedMediaType)
					_, _ = w.Write([]byte(`{"error":{"code":"unsupported_media_type","message":"JSON only"}}`))
					return
				}
				mu.Lock()
				jsonAppends++
				if len(body) > limit {
					tooLarge++
				} else {
					biggest = max(biggest, len(body))
				}
				mu.Unlock()
				if len(body) > limit {
					extra := ""
					w.Header().Set("Content-Type", "application/json")
					if tc.stateLimit {
						w.Header().Set(wire.HeaderMaxBody, strconv.Itoa(limit))
						extra = fmt.Sprintf(`,"max_body_bytes":%d`, limit)
					}
					w.WriteHeader(http.StatusRequestEntityTooLarge)
					fmt.Fprintf(w, `{"error":{"code":"payload_too_large","message":"body of %d bytes over %d"}%s}`, len(body), limit, extra)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: parts}); err != nil {
				t.Fatal(err)
			}
			p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{Partitions: parts, Linger: time.Hour,
				BatchBytes: client.MaxBatchBytes, BufferBytes: 16 << 20, BatchRecords: 1000, MaxRetries: 1})
			if err != nil {
				t.Fatal(err)
			}
			var futures []*client.Future
			for i := range parts * perPart {
				part := int32(i % parts)
				f, err := p.Send(ctx, client.Record{Partition: &part, Value: append([]byte(fmt.Sprintf("%04d:", i)), value...)})
				if err != nil {
					t.Fatal(err)
				}
				futures = append(futures, f)
			}
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for i, f := range futures {
				res, err := f.Wait(ctx)
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if res.Partition != int32(i%parts) {
					t.Fatalf("record %d landed on partition %d, want %d", i, res.Partition, i%parts)
				}
			}
			mu.Lock()
			got413, appends, most := tooLarge, jsonAppends, biggest
			mu.Unlock()
			t.Logf("%d JSON appends, %d refused 413, the largest taken %d bytes", appends, got413, most)
			if tc.want413 >= 0 && got413 != tc.want413 || got413 < 1 {
				t.Errorf("%d answers 413, want %d (at least one)", got413, tc.want413)
			}
			if appends-got413 < 2 {
				t.Errorf("%d JSON appends taken: the refused request was not split", appends-got413)
			}
			for part := range int32(parts) {
				var want []string
				for i := int(part); i < parts*perPart; i += parts {
					want = append(want, fmt.Sprintf("%04d", i))
				}
				var got []string
				for off := int64(0); ; {
					res, err := c.Poll(ctx, "orders", part, off, client.PollOptions{MaxRecords: 100})
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Records) == 0 {
						break
					}
					for _, r := range res.Records {
						got = append(got, string(r.Value[:bytes.IndexByte(r.Value, ':')]))
					}
					off = res.NextOffset
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("partition %d holds %v, want each record once in order: %v", part, got, want)
				}
			}
		})
	}
}
