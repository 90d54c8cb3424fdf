package dynamo

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// fuzzTopicItem builds a topic item from fuzz bytes: counters in groups of 3 (which
// counter, partition, value), the newest batch's commits in groups of 6 (partition,
// count, byte offset, byte length, max timestamp, shape: 5 or 7 fields, or a field of
// the wrong type), fences in groups of 4 (addFuzzFences).
func fuzzTopicItem(topic string, batches int64, counters, commits, fences []byte, obj string) item {
	it := item{attrTP: avS(topic + topicItemTail), attrTopic: avS(topic), attrBatches: avN(batches)}
	addFuzzFences(it, topic, fences)
	for i := 0; i+2 < len(counters); i += 3 {
		name := string("osl"[counters[i]%3]) + strconv.Itoa(int(counters[i+1]%4))
		it[name] = avN(int64(int8(counters[i+2])))
	}
	if len(commits) > 0 {
		var list []types.AttributeValue
		for i := 0; i+5 < len(commits); i += 6 {
			f := []types.AttributeValue{}
			for j := range 5 {
				f = append(f, avN(int64(int8(commits[i+j]))))
			}
			switch commits[i+5] % 4 {
			case 1:
				f = append(f, avS("t#k"), avS("h"))
			case 2:
				f[1] = avS("x")
			case 3:
				f = f[:3]
			}
			list = append(list, &types.AttributeValueMemberL{Value: f})
		}
		it[attrBCommits] = &types.AttributeValueMemberL{Value: list}
		it[attrBObject], it[attrBAt], it[attrBExpires] = avS(obj), avN(5), avN(6)
	}
	return it
}

// FuzzDecodeTopicItem: a topic item (as GetItem or a stream image gives it) decodes or
// fails with an error, never panics, and a decoded one is in bounds: every commit of the
// newest batch lies below its partition's high watermark, a partition's commits are
// consecutive, and a log start never passes a high watermark.
func FuzzDecodeTopicItem(f *testing.F) {
	f.Add("orders#tc01abc", int64(2), []byte{0, 0, 5, 1, 0, 2, 0, 1, 3, 2, 0, 1}, []byte{0, 2, 0, 10, 1, 0, 1, 3, 10, 10, 1, 1, 0, 3, 20, 10, 2, 0}, []byte{}, "v1/orders/tc01abc/x")
	f.Add("orders#tc01abc", int64(0), []byte{}, []byte{}, []byte{}, "")
	f.Add("orders", int64(1), []byte{0, 0, 1}, []byte{0, 1, 0, 1, 0, 2}, []byte{}, "o")
	f.Add("a#tc1", int64(-1), []byte{2, 0, 9, 0, 0, 3}, []byte{255, 1, 0, 1, 0, 0}, []byte{}, "o")
	f.Add("orders#tc01abc", int64(3), []byte{0, 0, 2, 1, 0, 1}, []byte{0, 2, 0, 10, 1, 0}, []byte{1, 2, 1, 0, 2, 1, 3, 0}, "o")
	for shape := range byte(8) {
		f.Add("orders#tc01abc", int64(3), []byte{0, 0, 2, 1, 0, 1}, []byte{0, 2, 0, 10, 1, 0}, []byte{1, 2, 1, shape}, "o")
	}
	f.Add("orders#tc01abc", int64(3), []byte{}, []byte{}, []byte{1, 0, 1, 0, 2, 1, 255, 0}, "")
	f.Fuzz(func(t *testing.T, topic string, batches int64, counters, commits, fences []byte, obj string) {
		it := fuzzTopicItem(topic, batches, counters, commits, fences, obj)
		sts, err := DecodeSequencerImages(it)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		bi, err := decodeBatchItem(it)
		if err != nil {
			t.Fatalf("DecodeSequencerImages accepted what decodeBatchItem refuses: %v", err)
		}
		next := map[int32]int64{}
		for _, st := range sts {
			c := st.Last
			if c == nil || c.Entry.BaseOffset < 0 || c.Entry.End() != st.NextOffset || st.LogStart > st.NextOffset || st.LogStart < 0 {
				t.Fatalf("state out of bounds: %+v", st)
			}
			p := c.Entry.Partition
			if c.Entry.End() > bi.parts[p].next {
				t.Fatalf("commit %+v ends past partition %d's high watermark %d", c.Entry, p, bi.parts[p].next)
			}
			if prev, ok := next[p]; ok && c.Entry.BaseOffset != prev {
				t.Fatalf("partition %d: commit at %d after one ending at %d", p, c.Entry.BaseOffset, prev)
			}
			next[p] = c.Entry.End()
			if !store.TopicCommits(st.Topic) {
				t.Fatalf("decoded a topic item of %q", st.Topic)
			}
			if c.Batch != bi.batches || !reflect.DeepEqual(c.Fences, bi.fences) {
				t.Fatalf("state of batch %d with fences %+v, the item's are %d and %+v", c.Batch, c.Fences, bi.batches, bi.fences)
			}
		}
		for i, fc := range bi.fences {
			if fc.Attempt < 1 || fc.Batch < 0 || fc.Batch > bi.batches || it[fenceName(fc.Key)] == nil ||
				i > 0 && bi.fences[i-1].Key >= fc.Key {
				t.Fatalf("fence %d out of bounds or order: %+v of %d batches", i, fc, bi.batches)
			}
		}
		for p, pc := range bi.parts {
			if st := bi.state(p); st.NextOffset != pc.next || st.LogStart > st.NextOffset {
				t.Fatalf("state(%d) = %+v from %+v", p, st, pc)
			}
		}
		if len(bi.batch) > 0 {
			again, err := decodeBatchItem(withBatch(it, encodeBatch(bi.batch)))
			if err != nil || !sameBatch(again.batch, bi.batch) {
				t.Fatalf("the batch does not round-trip: %v", err)
			}
		}
	})
}

// addFuzzFences adds a fence per group of 4 bytes (key suffix, attempt, batch, shape):
// the shape keeps it well formed or breaks one part of it — its batch attribute
// missing or alone, a wrong key for its name, a field of the wrong type, an extra field.
func addFuzzFences(it item, topic string, fences []byte) {
	for i := 0; i+3 < len(fences); i += 4 {
		f := store.RequestFence{Key: topic + "#" + strconv.Itoa(int(fences[i])), Attempt: int32(int8(fences[i+1])), At: time.UnixMilli(7)}
		name := fenceName(f.Key)
		fv := avFence(f).(*types.AttributeValueMemberM)
		it[name], it[fenceBatchName(name, f.Attempt)] = fv, avN(int64(int8(fences[i+2])))
		switch fences[i+3] % 8 {
		case 1:
			delete(it, fenceBatchName(name, f.Attempt))
		case 2:
			delete(it, name)
		case 3:
			fv.Value[fenceKeyField] = avS(f.Key + "x")
		case 4:
			fv.Value[fenceAttempt] = avS("1")
		case 5:
			fv.Value["z"] = avN(1)
		case 6:
			it[name] = avS(f.Key)
		}
	}
}

func withBatch(it item, list types.AttributeValue) item {
	out := item{}
	for k, v := range it {
		out[k] = v
	}
	out[attrBCommits] = list
	return out
}
