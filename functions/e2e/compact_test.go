package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// selfInvokes is the Lambda Invoke API a function fanning out calls on itself
// (AWS_ENDPOINT_URL_LAMBDA points its SDK client here): it accepts each asynchronous
// invocation (202), records its payload and runs it on the same function under the
// emulator once the invoking call has returned (the emulator runs one at a time), as
// Lambda would queue it.
type selfInvokes struct {
	srv *httptest.Server
	fn  *rie
	wg  sync.WaitGroup

	mu       sync.Mutex
	payloads []string
	answers  []string
	errs     []error
}

func newSelfInvokes(t *testing.T) *selfInvokes {
	s := &selfInvokes{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Invocation-Type") != "Event" || !strings.HasSuffix(r.URL.Path, "/invocations") {
			http.Error(w, "want an asynchronous Invoke", http.StatusBadRequest)
			return
		}
		payload, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.payloads = append(s.payloads, string(payload))
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			out, err := s.fn.invoke(ctx, payload)
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				s.errs = append(s.errs, err)
				return
			}
			s.answers = append(s.answers, string(out))
		}()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// TestCompactionFunctionFansOut: the compaction function as the stack configures it
// (STRATA_COMPACT_FANOUT=1, its own name from Lambda) answers a scheduled event by
// invoking itself asynchronously once per partition of each compacted topic (and not
// for a topic that deletes by time); each invocation compacts its partition (the
// overwritten record goes, the latest stays at its offset) and counts the pass in EMF;
// a partition event of a topic that is gone answers with nothing done.
func TestCompactionFunctionFansOut(t *testing.T) {
	d := newDeployment(t)
	ctx := context.Background()
	l := overwrittenTwice(t, d)
	self := newSelfInvokes(t)
	self.fn = startRIE(t, deploy.FunctionCompact, d.env(deploy.EnvCompactFanout+"=1", "AWS_ENDPOINT_URL_LAMBDA="+self.srv.URL))

	var st compact.Stats
	self.fn.mustInvoke(t, mustRead(t, "scheduled-event.json"), &st)
	self.wg.Wait()
	self.mu.Lock()
	payloads, answers, errs := self.payloads, self.answers, self.errs
	self.mu.Unlock()
	sort.Strings(payloads)
	want := []string{
		`{"strata_compact_topic":"config","strata_compact_partition":0,"strata_compact_trigger":"fanout"}`,
		`{"strata_compact_topic":"config","strata_compact_partition":1,"strata_compact_trigger":"fanout"}`,
	}
	if fmt.Sprint(payloads) != fmt.Sprint(want) {
		t.Fatalf("self-invocations %q, want %q", payloads, want)
	}
	if len(errs) > 0 {
		t.Fatalf("partition passes failed: %v", errs)
	}
	for _, a := range answers {
		var ps compact.Stats
		if err := json.Unmarshal([]byte(a), &ps); err != nil || ps.RecordsRemoved != 1 || ps.Swaps != 1 {
			t.Errorf("partition pass answered %s (%v), want 1 record removed in 1 swap", a, err)
		}
	}
	for _, p := range []int32{0, 1} {
		res, err := l.Poll(ctx, "config", p, 0, log.PollOptions{})
		if err != nil || len(res.Records) != 1 || res.Records[0].Offset != 1 || string(res.Records[0].Value) != "new" {
			t.Errorf("config/%d after the fan-out: %+v (%v), want only the latest record, at offset 1", p, res.Records, err)
		}
	}
	if !self.fn.logged(`"trigger":"fanout"`) || !self.fn.logged(`"strata_compaction_records_removed_total":1`) {
		t.Errorf("the compaction function's EMF lines lack the partition passes:\n%s", self.fn.log.String())
	}
	ev, _ := json.Marshal(lambdafn.CompactPartitionEvent{Topic: "gone", Partition: 0, Trigger: lambdafn.CompactTriggerDirty})
	var skipped compact.Stats
	self.fn.mustInvoke(t, ev, &skipped)
	if skipped.Rewrites != 0 || skipped.IndexReads != 0 {
		t.Errorf("a partition of no topic: %+v, want nothing done", skipped)
	}
}

// overwrittenTwice creates, on d, the compacted topic config (2 partitions) whose key k
// was written twice in each partition 20 minutes ago — past the head guard the pass
// never touches: the test's own log on the deployment's tables and bucket, on a clock in
// the past — and the topic events, which deletes by time; it returns that log.
func overwrittenTwice(t *testing.T, d *deployment) *log.Log {
	t.Helper()
	ctx := context.Background()
	then := time.Now().Add(-20 * time.Minute)
	l, err := log.New(log.Config{Objects: s3store.New(d.s3, d.cfg.Bucket, ""), Meta: dynamo.New(d.ddb, d.cfg), Clock: func() time.Time { return then }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopicWith(ctx, "config", log.TopicSpec{Partitions: 2, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopicWith(ctx, "events", log.TopicSpec{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		for _, v := range []string{"old", "new"} {
			if _, err := l.Append(ctx, "config", []log.Record{{Key: []byte("k"), Value: []byte(v), Partition: &p}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return l
}

// TestCompactionFunctionWithoutFanout: without STRATA_COMPACT_FANOUT the scheduled
// event passes every partition of every compacted topic in the one invocation, and each
// partition's removals reach its dirty counter (the trigger's estimate) as a fanned-out
// pass's do.
func TestCompactionFunctionWithoutFanout(t *testing.T) {
	d := newDeployment(t)
	ctx := context.Background()
	l := overwrittenTwice(t, d)
	fn := startRIE(t, deploy.FunctionCompact, d.env())
	var st compact.Stats
	fn.mustInvoke(t, mustRead(t, "scheduled-event.json"), &st)
	if st.RecordsRemoved != 2 || st.PartitionsCompacted != 2 {
		t.Errorf("scheduled pass %+v, want 2 records removed over 2 partitions", st)
	}
	meta := dynamo.New(d.ddb, d.cfg)
	tp, err := meta.GetTopic(ctx, "config")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		if c, err := meta.AddOverwrites(ctx, tp.ID(), p, 0); err != nil || c.Removed != 1 {
			t.Errorf("config/%d's dirty counter %+v (%v), want 1 removed", p, c, err)
		}
		if res, err := l.Poll(ctx, "config", p, 0, log.PollOptions{}); err != nil || len(res.Records) != 1 {
			t.Errorf("config/%d after the pass: %+v (%v), want only the latest record", p, res.Records, err)
		}
	}
}
