package e2e_test

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

// frontAction is what a faultyFront does with one attempt of a producer request.
type frontAction int

const (
	frontPass      frontAction = iota
	frontLose                  // forward it, then close the client's connection instead of answering
	frontDuplicate             // forward it twice, one after the other, and answer the second answer
)

// faultyFront is a proxy on 127.0.0.1 in front of a server that forwards every request
// and waits for its answer, except that for a producer request's attempt (the request's
// sequence number and Strata-Attempt) plan may say to lose the answer once the server
// answered it 200 (the server appended it, the client never learns), or to deliver the
// attempt twice (as a proxy retrying on its own would).
type faultyFront struct {
	backend string
	plan    func(seq uint64, attempt string) frontAction

	mu         sync.Mutex
	lost       map[string]int // key → answers lost (of 200s)
	duplicated map[string]int // key → attempts delivered twice
}

func newFaultyFront(t *testing.T, backend string, plan func(seq uint64, attempt string) frontAction) (*faultyFront, string) {
	f := &faultyFront{backend: backend, plan: plan, lost: map[string]int{}, duplicated: map[string]int{}}
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	return f, s.URL
}

// forward sends r's method, path, headers and body to the backend and reads its answer.
func (f *faultyFront) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, f.backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp, answer, err
}

func (f *faultyFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	action := frontPass
	key := r.Header.Get("Idempotency-Key")
	if _, seq, ok := strings.Cut(key, "."); ok && r.Method == http.MethodPost && r.Header.Get(wire.HeaderIdempotency) == wire.IdempotencyProducer {
		if n, err := strconv.ParseUint(seq, 10, 64); err == nil {
			action = f.plan(n, r.Header.Get(wire.HeaderAttempt))
		}
	}
	resp, answer, err := f.forward(r, body)
	if err == nil && action == frontDuplicate {
		f.mu.Lock()
		f.duplicated[key]++
		f.mu.Unlock()
		resp, answer, err = f.forward(r, body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if action == frontLose && resp.StatusCode == http.StatusOK {
		f.mu.Lock()
		f.lost[key]++
		f.mu.Unlock()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// assembled serves the assembled server (runtime.Handler() on the embedded backend) on
// 127.0.0.1 and returns its URL.
func assembled(t *testing.T) string {
	t.Helper()
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	s := httptest.NewServer(rt.Handler())
	t.Cleanup(s.Close)
	return s.URL
}

// produceExactlyOnce sends n keyed records through a Producer of c to a new topic of
// partitions partitions, closes it, and fails unless every partition holds every record
// exactly once, in Send order, where its future says (skipped attempts leave holes in
// the offsets). It returns the producer's stats.
func produceExactlyOnce(t *testing.T, c *client.Client, partitions int32, n int) client.ProducerStats {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{BatchRecords: 8, Backoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	futs := make([]*client.Future, n)
	for i := range n {
		key := fmt.Appendf(nil, "order-%d", i%7)
		if futs[i], err = p.Send(ctx, client.Record{Key: key, Value: fmt.Appendf(nil, "%s#%d", key, i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	readable := map[int32][]string{}
	at := map[int32]map[int64]string{}
	for part := range partitions {
		at[part] = map[int64]string{}
		for off := int64(0); ; {
			res, err := c.Poll(ctx, "orders", part, off, client.PollOptions{MaxRecords: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Records {
				readable[part] = append(readable[part], string(r.Value))
				at[part][r.Offset] = string(r.Value)
			}
			if res.NextOffset >= res.HighWatermark {
				break
			}
			off = res.NextOffset
		}
	}
	want := map[int32][]string{}
	for i, f := range futs {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		v := fmt.Sprintf("order-%d#%d", i%7, i)
		want[res.Partition] = append(want[res.Partition], v)
		if got := at[res.Partition][res.Offset]; got != v {
			t.Fatalf("record %d's future says %d@%d, which holds %q, want %q", i, res.Partition, res.Offset, got, v)
		}
	}
	for part := range partitions {
		if got := readable[part]; strings.Join(got, " ") != strings.Join(want[part], " ") {
			t.Fatalf("partition %d holds %d records, want %d exactly once in Send order:\n got %v\nwant %v",
				part, len(got), len(want[part]), got, want[part])
		}
	}
	return p.Stats()
}

// TestProducerRetryAfterLostAnswerExactlyOnce (issue 20, fenced idempotency): in front
// of the assembled server (runtime.Handler() on the embedded backend), a proxy loses the
// answer of the first attempt of every third producer request, and of the second
// attempt too of every sixth, after the server appended them. The Producer retries each
// (Strata-Attempt 1, 2 with Strata-Retry-Elapsed-Ms), and every partition holds every
// record exactly once, in Send order, where its future says.
func TestProducerRetryAfterLostAnswerExactlyOnce(t *testing.T) {
	front, url := newFaultyFront(t, assembled(t), func(seq uint64, attempt string) frontAction {
		if seq%3 == 0 && attempt == "0" || seq%6 == 0 && attempt == "1" {
			return frontLose
		}
		return frontPass
	})
	s := produceExactlyOnce(t, newClient(t, url), 3, 240)
	front.mu.Lock()
	lost, twice := len(front.lost), 0
	for _, k := range front.lost {
		if k > 1 {
			twice++
		}
	}
	front.mu.Unlock()
	t.Logf("the front lost the answers of %d requests (%d of them twice); producer stats %+v", lost, twice, s)
	if lost == 0 || twice == 0 || s.Retries < int64(lost+twice) {
		t.Fatalf("the front lost answers of %d requests (%d twice), the producer retried %d times: the test exercised too few retries",
			lost, twice, s.Retries)
	}
}

// TestProducerRetryAfterDuplicatedAttemptExactlyOnce (issue 20, fenced idempotency): a
// proxy in front of the assembled server delivers some producer requests' retries twice
// (attempt 1 of every third request, after losing the answer of its attempt 0): the
// second delivery of an attempt is answered 409 superseded once the first fenced, or
// the same offsets, and the Producer's next attempt decides; every record is in the log
// exactly once, in Send order. (A first attempt is never duplicated here: nothing fences
// it, so a proxy that resends first attempts on its own defeats fenced idempotency.)
func TestProducerRetryAfterDuplicatedAttemptExactlyOnce(t *testing.T) {
	front, url := newFaultyFront(t, assembled(t), func(seq uint64, attempt string) frontAction {
		switch {
		case seq%3 == 0 && attempt == "0":
			return frontLose
		case seq%3 == 0 && attempt == "1":
			return frontDuplicate
		}
		return frontPass
	})
	s := produceExactlyOnce(t, newClient(t, url), 3, 240)
	front.mu.Lock()
	dups := len(front.duplicated)
	front.mu.Unlock()
	t.Logf("the front duplicated attempt 1 of %d requests; producer stats %+v", dups, s)
	if dups == 0 {
		t.Fatal("the front duplicated no attempt: the test exercised nothing")
	}
}
