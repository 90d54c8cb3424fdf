package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestProducerFitsTheLambdaAPI (issue 20): a producer sending rounds of 4.5 MiB (over
// the api function's 4 MiB body, deploy.MaxAPIBody, under the SDK's 5 MiB request cap)
// through an API Gateway stand-in to the api function's own handler never fails: one
// that has not heard the limit yet gets one 413 for its first request, which it splits;
// after that (and for one that described the topic first, whose answer carried the
// limit) every request fits. Each record reads back once, in order.
func TestProducerFitsTheLambdaAPI(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	front, err := apigwtest.New(apigwtest.Config{Region: "us-east-1", Invoker: apigwtest.InProcess(rt.Handler(), nil),
		Routes: []apigwtest.Route{{Key: "$default", Public: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var tooLarge, appends atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		front.ServeHTTP(rec, r)
		if r.Method == http.MethodPost {
			appends.Add(1)
			if rec.status == http.StatusRequestEntityTooLarge {
				tooLarge.Add(1)
			}
		}
	}))
	t.Cleanup(srv.Close)
	const parts, rounds, perRound = 3, 3, 72 // 72 records of 64 KiB: 4.5 MiB a round
	value := bytes.Repeat([]byte("v"), 64<<10)
	for _, tc := range []struct {
		name       string
		partitions int32 // 0: the producer describes the topic first
		want413    int64
	}{{"knows the partitions (first request refused, split)", parts, 1}, {"describes the topic first", 0, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			topic := fmt.Sprintf("big-%d", tc.partitions)
			if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: parts}); err != nil {
				t.Fatal(err)
			}
			c, err = client.New(srv.URL) // a client that has heard nothing from the server
			if err != nil {
				t.Fatal(err)
			}
			p, err := client.NewProducer(ctx, c, topic, client.ProducerConfig{Partitions: tc.partitions, Linger: time.Hour,
				BatchBytes: client.MaxBatchBytes, BufferBytes: 16 << 20, BatchRecords: 1000, MaxRetries: 1})
			if err != nil {
				t.Fatal(err)
			}
			tooLarge.Store(0)
			var futures []*client.Future
			for round := range rounds {
				for i := range perRound {
					f, err := p.Send(ctx, client.Record{Key: []byte(fmt.Sprintf("k%d", i%parts)), Value: append([]byte(fmt.Sprintf("%d/%d:", round, i)), value...)})
					if err != nil {
						t.Fatal(err)
					}
					futures = append(futures, f)
				}
				if err := p.Flush(ctx); err != nil {
					t.Fatalf("round %d: %v (%d answers 413)", round, err, tooLarge.Load())
				}
			}
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for i, f := range futures {
				if _, err := f.Wait(ctx); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			if got := tooLarge.Load(); got != tc.want413 {
				t.Errorf("%d answers 413, want %d", got, tc.want413)
			}
			total := 0
			for part := range int32(parts) {
				var prev []byte
				for off := int64(0); ; {
					res, err := c.Poll(ctx, topic, part, off, client.PollOptions{MaxRecords: 100})
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Records) == 0 {
						break
					}
					for _, r := range res.Records {
						head := r.Value[:bytes.IndexByte(r.Value, ':')]
						if prev != nil && !lessRoundIndex(prev, head) {
							t.Fatalf("partition %d: %s after %s", part, head, prev)
						}
						prev = head
						total++
					}
					off = res.NextOffset
				}
			}
			if total != rounds*perRound {
				t.Fatalf("%d records read back, want %d", total, rounds*perRound)
			}
		})
	}
}

// lessRoundIndex compares two "round/index" heads.
func lessRoundIndex(a, b []byte) bool {
	var ar, ai, br, bi int
	_, _ = fmt.Sscanf(string(a), "%d/%d", &ar, &ai)
	_, _ = fmt.Sscanf(string(b), "%d/%d", &br, &bi)
	return ar < br || ar == br && ai < bi
}

// statusRecorder remembers the status an http.ResponseWriter was given.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
