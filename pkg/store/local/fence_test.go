package local_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/local"
	"github.com/stratalog/strata/pkg/store/storetest"
)

// TestFencesMatchModel (rapid): any sequence of fences (keys, attempts) and batches
// (times moving forward, each with one producer member per key of a drawn attempt)
// behaves as the model of store.FenceRequest: a fence of a key whose stored attempt is
// at least its own is ErrSuperseded, else it is added beside the key's earlier ones at
// the batch count; each batch is numbered one above the last, first drops the fences older than
// the horizon at its time, and carries the rest; the entry it materialises skips
// exactly the producer blocks a carried fence applies to, and no producer is claimed.
func TestFencesMatchModel(t *testing.T) {
	m, err := local.OpenMetaStore(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	rapid.Check(t, func(rt *rapid.T) {
		topic := storetest.TopicCommitID(t)
		model := map[string]store.RequestFence{} // key and attempt → fence
		latest := func(key string) (store.RequestFence, bool) {
			var out store.RequestFence
			ok := false
			for _, f := range model {
				if f.Key == key && (!ok || f.Attempt > out.Attempt) {
					out, ok = f, true
				}
			}
			return out, ok
		}
		var batches, next int64
		now := time.UnixMilli(1_800_000_000_000)
		for step := range rapid.IntRange(1, 25).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "minutes")) * time.Minute)
			if rapid.Bool().Draw(rt, "fence") {
				f := store.RequestFence{Key: topic + "#" + rapid.SampledFrom(keys).Draw(rt, "key"),
					Attempt: int32(rapid.IntRange(1, 4).Draw(rt, "attempt")), At: now}
				fp, err := m.FenceRequest(ctx, topic, f)
				if old, ok := latest(f.Key); ok && old.Attempt >= f.Attempt {
					if !errors.Is(err, store.ErrSuperseded) {
						rt.Fatalf("step %d: fence %+v over %+v: %v, want ErrSuperseded", step, f, old, err)
					}
					continue
				}
				if err != nil || fp.Batch != batches || fp.Next[0] != next {
					rt.Fatalf("step %d: fence %+v: point %+v, %v; want batch %d, next %d", step, f, fp, err, batches, next)
				}
				f.Batch = batches
				model[fmt.Sprintf("%s/%d", f.Key, f.Attempt)] = f
				continue
			}
			batches++
			for k, f := range model {
				if now.Sub(f.At) > store.FenceHorizon {
					delete(model, k)
				}
			}
			var want []store.RequestFence
			for _, f := range model {
				want = append(want, f)
			}
			slices.SortFunc(want, func(a, b store.RequestFence) int {
				return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Attempt, b.Attempt))
			})
			c := store.SeqCommit{Entry: store.IndexEntry{Topic: topic, Count: int64(len(keys)), ObjectKey: fmt.Sprintf("v1/o/%d", step),
				ByteLength: 30, AppendedAt: now, ExpiresAt: now.Add(time.Hour)}}
			var skip []store.SkipRange
			for i, k := range keys {
				mb := store.CommitMember{Key: topic + "#" + k, Total: 1, Partitions: 1, Offset: int64(i), Count: 1, Producer: true,
					Attempt: int32(rapid.IntRange(0, 4).Draw(rt, "member attempt"))}
				c.Members = append(c.Members, mb)
				fenced := false
				for _, f := range model {
					fenced = fenced || f.Applies(mb.Key, mb.Attempt, batches)
				}
				if fenced {
					skip = append(skip, store.SkipRange{Offset: mb.Offset, Count: 1})
				}
			}
			out, errs := m.SequenceBatch(ctx, []store.SeqCommit{c})
			if err := errors.Join(errs...); err != nil {
				rt.Fatalf("step %d: batch: %v", step, err)
			}
			next += c.Entry.Count
			got := out[0]
			for i := range got.Fences {
				got.Fences[i].At = got.Fences[i].At.Local()
			}
			for i := range want {
				want[i].At = want[i].At.Local()
			}
			if got.Batch != batches || !slices.EqualFunc(got.Fences, want, func(a, b store.RequestFence) bool {
				return a.Key == b.Key && a.Attempt == b.Attempt && a.Batch == b.Batch && a.At.Equal(b.At)
			}) {
				rt.Fatalf("step %d: batch %d with fences %+v, want batch %d with %+v", step, got.Batch, got.Fences, batches, want)
			}
			es, err := m.IndexEntries(ctx, topic, 0, got.Entry.BaseOffset, 1)
			if err != nil || len(es) != 1 {
				rt.Fatalf("step %d: the batch's entry: %v, %v", step, es, err)
			}
			wantEntry := store.IndexEntry{Count: c.Entry.Count}
			wantEntry.SetSkip(skip) // a batch wholly skipped is a duplicate
			if es[0].Skip != wantEntry.Skip || es[0].Duplicate != wantEntry.Duplicate {
				rt.Fatalf("step %d: the entry skips %q (duplicate %v), want %v", step, es[0].Skip, es[0].Duplicate, skip)
			}
		}
		for _, k := range keys {
			if _, err := m.GetRequestClaim(ctx, topic+"#"+k, []int32{0}); !errors.Is(err, store.ErrNotFound) {
				rt.Fatalf("producer %s claimed: %v", k, err)
			}
		}
	})
}
