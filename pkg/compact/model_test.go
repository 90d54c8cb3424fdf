package compact_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// modelRecord is one appended record as the model remembers it.
type modelRecord struct {
	key, value []byte // value nil: a tombstone
	at         time.Time
}

// TestModelCompaction: random appends, overwrites and tombstones over a few keys, with
// compaction passes at random points — some stopped at a random step, as a crash
// would — and the clock moved by random steps. After every step a reader from offset 0
// sees, on both backends:
//   - offsets increasing, each holding exactly the record appended there, and the high
//     watermark of every append;
//   - every record still inside its protection (appended within max(min.compaction.lag,
//     HeadGuard), or a latest tombstone within delete.retention), and every key's latest
//     record unless it is a tombstone past delete.retention;
//   - for every key, the latest record it sees of the key is the model's latest: no
//     compaction ever uncovers an older value (a key whose tombstone went shows nothing).
//
// And once no reader can hold them, only objects the index refers to are left.
func TestModelCompaction(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		checks, maxOps := 40, 40
		if s.Name == "aws" {
			checks, maxOps = 6, 16
		}
		n, removed := 0, int64(0)
		rapid.Check(t, func(rt *rapid.T) {
			if n++; n > checks {
				return // the backend's share of the cases is run
			}
			f := newFixture(t, s)
			minLag := rapid.SampledFrom([]time.Duration{0, 20 * time.Minute}).Draw(rt, "minLag")
			delRet := rapid.SampledFrom([]time.Duration{time.Minute, 30 * time.Minute}).Draw(rt, "deleteRetention")
			f.job.MinDirtyRatio = rapid.SampledFrom([]float64{-1, 0.3, 0.9}).Draw(rt, "minDirtyRatio")
			f.job.MaxRewrites = rapid.IntRange(1, 3).Draw(rt, "maxRewrites")
			f.job.ChunkEntries = rapid.IntRange(1, 4).Draw(rt, "chunkEntries")
			tp := f.topic(fmt.Sprintf("model%d-%d", n, time.Now().UnixNano()%1e6), 1, func(tp *store.Topic) {
				tp.MinCompactionLag, tp.DeleteRetention = minLag, delRet
			})
			var model []modelRecord
			keys := []string{"a", "b", "c"}
			ops := rapid.IntRange(1, maxOps).Draw(rt, "ops")
			for op := range ops {
				switch rapid.IntRange(0, 9).Draw(rt, "op") {
				case 0, 1, 2, 3:
					m := rapid.IntRange(1, 3).Draw(rt, "batch")
					kvs := make([]string, m)
					for i := range kvs {
						k := rapid.SampledFrom(keys).Draw(rt, "key")
						v := ""
						if rapid.IntRange(0, 4).Draw(rt, "tombstone") > 0 {
							v = fmt.Sprintf("v%d.%d", op, i)
						}
						kvs[i] = k + "=" + v
						mr := modelRecord{key: []byte(k), at: f.clock.Now()}
						if v != "" {
							mr.value = []byte(v)
						}
						model = append(model, mr)
					}
					f.put(tp, 0, kvs...)
				case 4, 5:
					f.clock.Advance(rapid.SampledFrom([]time.Duration{time.Second, 3 * time.Minute, 11 * time.Minute, 40 * time.Minute}).Draw(rt, "advance"))
				case 6, 7, 8:
					crashAt := rapid.SampledFrom([]string{"", compact.StepMarker, compact.StepObject, compact.StepSwap, compact.StepCollect, compact.StepDone}).Draw(rt, "crash")
					f.job.Hook = func(step string) error {
						if step == crashAt {
							return errCrash
						}
						return nil
					}
					var st compact.Stats
					if err := f.job.Topic(context.Background(), tp, &st); err != nil && !errors.Is(err, errCrash) {
						rt.Fatalf("pass: %v", err)
					}
					removed += st.RecordsRemoved
					f.job.Hook = nil
				case 9:
					checkModel(rt, f, tp, model, minLag, delRet)
				}
			}
			checkModel(rt, f, tp, model, minLag, delRet)
			// Long after: passes until one rewrites nothing, and one more to collect; then
			// only referenced objects remain.
			for i := 0; ; i++ {
				f.clock.Advance(time.Hour)
				st := f.pass(tp)
				removed += st.RecordsRemoved
				if st.Rewrites == 0 {
					break
				}
				if i > 100 {
					rt.Fatalf("still rewriting after %d passes", i)
				}
			}
			f.clock.Advance(time.Hour)
			f.pass(tp)
			checkModel(rt, f, tp, model, minLag, delRet)
			checkObjects(rt, f, tp)
		})
		if removed == 0 {
			t.Fatalf("no pass removed a record in %d cases: the model checked nothing", checks)
		}
	})
}

// checkModel reads the partition from offset 0 and checks it against the model.
func checkModel(rt *rapid.T, f *fixture, tp store.Topic, model []modelRecord, minLag, delRet time.Duration) {
	now := f.clock.Now()
	res, err := f.log.Poll(context.Background(), tp.Name, 0, 0, log.PollOptions{MaxRecords: 1})
	if err != nil {
		rt.Fatalf("poll: %v", err)
	}
	if res.HighWatermark != int64(len(model)) {
		rt.Fatalf("high watermark %d, %d appended", res.HighWatermark, len(model))
	}
	got := f.read(tp, 0)
	seen := map[int64]bool{}
	lastSeen := map[string]int64{}
	for _, r := range got {
		if r.Offset >= int64(len(model)) {
			rt.Fatalf("offset %d read, %d appended", r.Offset, len(model))
		}
		m := model[r.Offset]
		if !bytes.Equal(r.Key, m.key) || !bytes.Equal(r.Value, m.value) || (r.Value == nil) != (m.value == nil) {
			rt.Fatalf("offset %d reads %s=%q, appended %s=%q", r.Offset, r.Key, r.Value, m.key, m.value)
		}
		seen[r.Offset] = true
		lastSeen[string(r.Key)] = r.Offset
	}
	latest := map[string]int64{}
	for o, m := range model {
		latest[string(m.key)] = int64(o)
	}
	guard := max(minLag, compact.HeadGuard)
	for o, m := range model {
		off := int64(o)
		isLatest := latest[string(m.key)] == off
		switch {
		case m.at.Add(guard).After(now) && !seen[off]:
			rt.Fatalf("offset %d (%s, appended %s ago) removed inside its lag %s; read %s", off, m.key, now.Sub(m.at), guard, kv(got))
		case isLatest && m.value != nil && !seen[off]:
			rt.Fatalf("offset %d, the latest of %s, removed; read %s", off, m.key, kv(got))
		case isLatest && m.value == nil && m.at.Add(delRet).After(now) && !seen[off]:
			rt.Fatalf("offset %d, %s's tombstone, removed inside delete.retention; read %s", off, m.key, kv(got))
		}
	}
	for k, o := range lastSeen {
		if latest[k] != o {
			rt.Fatalf("key %s reads %d last, its latest is %d: an older value uncovered; read %s", k, o, latest[k], kv(got))
		}
	}
}

// checkObjects: once the reader margin has passed, every stored segment object of the
// topic is one the index refers to, and no garbage marker is left.
func checkObjects(rt *rapid.T, f *fixture, tp store.Topic) {
	refs := map[string]bool{}
	es, err := f.s.Meta.IndexEntries(context.Background(), tp.ID(), 0, 0, 1000)
	if err != nil {
		rt.Fatal(err)
	}
	for _, e := range es {
		if !e.Duplicate {
			refs[e.ObjectKey] = true
		}
	}
	for _, k := range f.objects(tp) {
		if !refs[k] {
			rt.Fatalf("object %s left, no entry refers to it", k)
		}
	}
}
