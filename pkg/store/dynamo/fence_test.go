package dynamo

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

const fenceTopic = "orders#tc01abc"

// fencedItem is a topic item after 3 batches (the newest one commit of partition 0)
// holding a fence of key "orders#tc01abc#k" attempt 2 set at batch 1.
func fencedItem() item {
	f := store.RequestFence{Key: fenceTopic + "#k", Attempt: 2, At: time.UnixMilli(9)}
	name := fenceName(f.Key)
	return item{attrTP: avS(fenceTopic + topicItemTail), attrTopic: avS(fenceTopic), attrBatches: avN(3),
		prefixNext + "0": avN(4), prefixSeq + "0": avN(3),
		attrBObject: avS("v1/o"), attrBAt: avN(5), attrBExpires: avN(6),
		attrBCommits: &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberL{
			Value: []types.AttributeValue{avN(0), avN(2), avN(0), avN(20), avN(4)}}}},
		name: avFence(f), fenceBatchName(name, 2): avN(1)}
}

// TestFenceImageDecoding: a topic item's fences are decoded onto every state of the
// stream image (Last.Batch the item's batch count, Last.Fences its fences), and a
// malformed fence fails the decode of the whole image instead of being dropped.
func TestFenceImageDecoding(t *testing.T) {
	name := fenceName(fenceTopic + "#k")
	for _, tc := range []struct {
		name   string
		mutate func(it item)
	}{
		{name: "well formed"},
		{"batch attribute missing", func(it item) { delete(it, fenceBatchName(name, 2)) }},
		{"batch attribute of no attempt", func(it item) { it[prefixFenceBatch+"0011223344556677_x"] = avN(1) }},
		{"key not naming the attribute", func(it item) {
			it[name].(*types.AttributeValueMemberM).Value[fenceKeyField] = avS(fenceTopic + "#other")
		}},
		{"attempt 0", func(it item) { it[name].(*types.AttributeValueMemberM).Value[fenceAttempt] = avN(0) }},
		{"attempt past int32", func(it item) {
			it[name].(*types.AttributeValueMemberM).Value[fenceAttempt] = avN(1 << 31)
		}},
		{"time before the epoch", func(it item) { it[name].(*types.AttributeValueMemberM).Value[fenceAt] = avN(-1) }},
		{"batch past the item's", func(it item) { it[fenceBatchName(name, 2)] = avN(4) }},
		{"negative batch", func(it item) { it[fenceBatchName(name, 2)] = avN(-1) }},
		{"an earlier attempt's batch past the item's", func(it item) { it[fenceBatchName(name, 1)] = avN(4) }},
		{"extra field", func(it item) { it[name].(*types.AttributeValueMemberM).Value["z"] = avN(1) }},
		{"not a map", func(it item) { it[name] = avS("x") }},
		{"key too long", func(it item) {
			k := fenceTopic + "#" + strings.Repeat("k", store.MaxFenceKey)
			f := avFence(store.RequestFence{Key: k, Attempt: 1, At: time.UnixMilli(9)})
			delete(it, name)
			delete(it, fenceBatchName(name, 2))
			it[fenceName(k)], it[fenceBatchName(fenceName(k), 1)] = f, avN(1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := fencedItem()
			if tc.mutate != nil {
				tc.mutate(it)
			}
			sts, err := DecodeSequencerImages(it)
			if tc.mutate != nil {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", sts)
				}
				checkDecodeError(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []store.RequestFence{{Key: fenceTopic + "#k", Attempt: 2, Batch: 1, At: time.UnixMilli(9).UTC()}}
			if len(sts) != 1 || sts[0].Last.Batch != 3 || !reflect.DeepEqual(sts[0].Last.Fences, want) {
				t.Fatalf("decoded %+v, want one state of batch 3 with fences %+v", sts, want)
			}
			if !sts[0].Last.Fences[0].Applies(fenceTopic+"#k", 1, sts[0].Last.Batch) {
				t.Fatalf("the decoded fence does not apply to attempt 1 in the newest batch")
			}
		})
	}
}

// TestFencesBesideEachOther: a key's earlier attempts' fences decode beside its latest
// (each with its own batch), and a batch attribute whose fence a stale prune removed is
// an orphan, no fence, for the next commit to remove.
func TestFencesBesideEachOther(t *testing.T) {
	key := fenceTopic + "#k"
	name := fenceName(key)
	it := fencedItem()
	it[fenceBatchName(name, 1)] = avN(0)
	orphan := fenceBatchName(fenceName(fenceTopic+"#gone"), 3)
	it[orphan] = avN(2)
	sts, err := DecodeSequencerImages(it)
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(9).UTC()
	want := []store.RequestFence{{Key: key, Attempt: 1, Batch: 0, At: at}, {Key: key, Attempt: 2, Batch: 1, At: at}}
	if len(sts) != 1 || !reflect.DeepEqual(sts[0].Last.Fences, want) {
		t.Fatalf("decoded %+v, want fences %+v", sts, want)
	}
	tb, err := decodeBatchItem(it)
	if err != nil || !reflect.DeepEqual(tb.orphans, []string{orphan}) {
		t.Fatalf("orphans %v (%v), want [%s]", tb.orphans, err, orphan)
	}
}

// TestExpiredFencesPlan: a commit at now removes every attribute of each key whose latest
// fence seen was set more than the horizon before it (a key's all together, never split
// by the limit) and the orphaned batch attributes, at most limit of them.
func TestExpiredFencesPlan(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	f := func(key string, attempt int32, age time.Duration) store.RequestFence {
		return store.RequestFence{Key: key, Attempt: attempt, At: now.Add(-age)}
	}
	names := func(key string, attempts ...int32) []string {
		out := []string{fenceName(key)}
		for _, a := range attempts {
			out = append(out, fenceBatchName(fenceName(key), a))
		}
		return out
	}
	old := store.FenceHorizon + time.Millisecond
	for _, tc := range []struct {
		name  string
		seen  fenceView
		limit int
		want  []string
	}{
		{"none seen", fenceView{}, 4, nil},
		{"within the horizon", fenceView{fences: []store.RequestFence{f("a", 1, time.Minute), f("b", 1, store.FenceHorizon)}}, 4, nil},
		{"past the horizon", fenceView{fences: []store.RequestFence{f("a", 1, old), f("b", 1, time.Minute)}}, 4, names("a", 1)},
		{"set after now (another host's clock)", fenceView{fences: []store.RequestFence{f("a", 1, -time.Hour)}}, 4, nil},
		{"a key's attempts together", fenceView{fences: []store.RequestFence{f("a", 1, old), f("a", 2, old)}}, 4, names("a", 1, 2)},
		{"limit between keys", fenceView{fences: []store.RequestFence{f("a", 1, time.Hour), f("b", 1, time.Hour), f("c", 1, time.Hour)}}, 4,
			append(names("a", 1), names("b", 1)...)},
		{"a first key over the limit whole", fenceView{fences: []store.RequestFence{f("a", 1, old), f("a", 2, old), f("a", 3, old)}}, 2, names("a", 1, 2, 3)},
		{"orphans", fenceView{orphans: []string{"fb_00_1", "fb_01_2"}}, 4, []string{"fb_00_1", "fb_01_2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expiredFences(tc.seen, now, tc.limit); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expiredFences = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFenceOutcome: how a fence whose condition failed, or whose answer was lost, is
// decided from the topic item read back.
func TestFenceOutcome(t *testing.T) {
	mine := store.RequestFence{Key: fenceTopic + "#k", Attempt: 2, At: time.UnixMilli(9)}
	withBatch := func(batches int64) item {
		it := fencedItem()
		it[attrBatches] = avN(batches)
		return it
	}
	collided := fencedItem()
	collided[fenceName(mine.Key)].(*types.AttributeValueMemberM).Value[fenceKeyField] = avS("orders#tc01abc#other")
	for _, tc := range []struct {
		name      string
		f         store.RequestFence
		it        item
		lost      bool
		done      bool
		wantErr   error
		anyErr    bool
		wantBatch int64
	}{
		{name: "no item", f: mine, it: nil},
		{name: "lost answer, applied, no batch since", f: mine, it: withBatch(1), lost: true, done: true, wantBatch: 1},
		{name: "lost answer, applied, batches since", f: mine, it: withBatch(3), lost: true, done: true, wantErr: store.ErrCommitUnknown},
		{name: "same attempt, not a lost answer", f: mine, it: withBatch(1), done: true, wantErr: store.ErrSuperseded},
		{name: "lower attempt", f: store.RequestFence{Key: mine.Key, Attempt: 1, At: time.UnixMilli(20)}, it: fencedItem(), done: true, wantErr: store.ErrSuperseded},
		{name: "higher attempt not applied", f: store.RequestFence{Key: mine.Key, Attempt: 3, At: time.UnixMilli(20)}, it: fencedItem(), lost: true},
		{name: "other key absent", f: store.RequestFence{Key: fenceTopic + "#new", Attempt: 1, At: time.UnixMilli(20)}, it: fencedItem(), lost: true},
		{name: "another key under the name: a malformed item", f: mine, it: collided, anyErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &MetaStore{}
			fp, done, err := s.fenceOutcome("fence", fenceTopic, tc.f, tc.it, tc.lost)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("fenceOutcome: %v, want %v", err, tc.wantErr)
			case tc.wantErr == nil && tc.anyErr != (err != nil):
				t.Fatalf("fenceOutcome: %v, want error %v", err, tc.anyErr)
			case done != tc.done:
				t.Fatalf("fenceOutcome done %v, want %v", done, tc.done)
			case done && err == nil && (fp.Batch != tc.wantBatch || !maps.Equal(fp.Next, map[int32]int64{0: 4})):
				t.Fatalf("fence point %+v, want batch %d, next {0: 4}", fp, tc.wantBatch)
			}
		})
	}
}
