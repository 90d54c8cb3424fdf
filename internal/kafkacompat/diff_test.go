package kafkacompat_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seen is one consumed record as both systems must show it.
type seen struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
	NullValue bool
	Headers   string
	Timestamp int64
}

func seenOf(r *kgo.Record) seen {
	var hs []string
	for _, h := range r.Headers {
		v := string(h.Value)
		if h.Value == nil {
			v = "<null>"
		}
		hs = append(hs, h.Key+"="+v)
	}
	return seen{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), NullValue: r.Value == nil, Headers: strings.Join(hs, ","), Timestamp: r.Timestamp.UnixMilli()}
}

func createTopic(t testing.TB, adm *kadm.Client, name string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxT(t), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	must(t, err, "create %s", name)
}

// readAll reads n records of topic from the start without a group, sorted by partition
// and offset.
func readAll(t testing.TB, tg target, topic string, n int) []seen {
	t.Helper()
	cl := tg.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)
	var out []seen
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, seenOf(r)) })
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

func keyedRecords(n int) []*kgo.Record {
	ts := time.UnixMilli(1750000000123)
	var recs []*kgo.Record
	for i := range n {
		key := fmt.Sprintf("key-%d", i%7)
		recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("%s/%d", key, i)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "n", Value: []byte(strconv.Itoa(i))}, {Key: "h", Value: []byte("2")}}})
	}
	return recs
}

// TestDiffKeyedProduce: keyed records with ordered, repeated headers and producer
// timestamps land on the same partitions at the same offsets and read back the same.
func TestDiffKeyedProduce(t *testing.T) {
	differential(t, nil, func(t *testing.T, tg target, topic string) []seen {
		cl := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		createTopic(t, kadm.NewClient(cl), topic, 3)
		recs := keyedRecords(40)
		must(t, cl.ProduceSync(ctxT(t), recs...).FirstErr(), "produce")
		return readAll(t, tg, topic, len(recs))
	})
}

// TestDiffIdempotentProduce: the same through an idempotent producer (InitProducerId,
// sequence numbers); the records carry a producer id on both.
func TestDiffIdempotentProduce(t *testing.T) {
	type result struct {
		Records     []seen
		ProducerIDs bool
	}
	differential(t, func(t *testing.T, gw target) { requireAPIs(t, gw.addr, keyInitProducerID) },
		func(t *testing.T, tg target, topic string) result {
			cl := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
			createTopic(t, kadm.NewClient(cl), topic, 3)
			recs := keyedRecords(40)
			must(t, cl.ProduceSync(ctxT(t), recs...).FirstErr(), "produce")
			ids := true
			for _, r := range recs {
				ids = ids && r.ProducerID >= 0
			}
			return result{Records: readAll(t, tg, topic, len(recs)), ProducerIDs: ids}
		})
}

// TestDiffTombstone: a null value and a null header value stay null, distinct from
// empty ones. Null values are not an API the gateway advertises: it refuses them with
// INVALID_RECORD until the log keeps them, and the scenario skips on exactly that answer.
func TestDiffTombstone(t *testing.T) {
	gate := func(t *testing.T, gw target) {
		cl := gw.client(t, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
		probe := uniqueName(t)
		createTopic(t, kadm.NewClient(cl), probe, 1)
		err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: probe, Key: []byte("k")}).FirstErr()
		if errName(err) == kerr.InvalidRecord.Message {
			t.Skipf("gateway refuses null values (INVALID_RECORD) yet: %v", err)
		}
		must(t, err, "probe a null value")
	}
	differential(t, gate, func(t *testing.T, tg target, topic string) []seen {
		cl := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		createTopic(t, kadm.NewClient(cl), topic, 1)
		ts := time.UnixMilli(1750000000000)
		recs := []*kgo.Record{
			{Key: []byte("a"), Value: []byte("1"), Timestamp: ts},
			{Key: []byte("a"), Value: nil, Timestamp: ts},
			{Key: []byte("b"), Value: []byte{}, Timestamp: ts},
			{Key: []byte("c"), Value: []byte("x"), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "n", Value: nil}, {Key: "e", Value: []byte{}}}},
		}
		must(t, cl.ProduceSync(ctxT(t), recs...).FirstErr(), "produce")
		return readAll(t, tg, topic, len(recs))
	})
}

// TestDiffRestartAssigned: a consumer of assigned partitions commits through the group
// (kadm's commit outside a membership), stops, and a new one resumes at the commit.
func TestDiffRestartAssigned(t *testing.T) {
	type result struct {
		Committed int64
		Resumed   []string
	}
	differential(t, nil, func(t *testing.T, tg target, topic string) result {
		cl := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		adm := kadm.NewClient(cl)
		createTopic(t, adm, topic, 1)
		for i := range 10 {
			must(t, cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(), "produce")
		}
		grp := topic + "-g"
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 6, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctxT(t), grp, os)
		if err == nil {
			err = resp.Error()
		}
		must(t, err, "commit")
		fetched, err := adm.FetchOffsets(ctxT(t), grp)
		if err == nil {
			err = fetched.Error()
		}
		must(t, err, "fetch offsets")
		at, _ := fetched.Lookup(topic, 0)
		rd := tg.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(at.At)}}))
		var vals []string
		ctx := ctxT(t)
		for len(vals) < 4 && ctx.Err() == nil {
			rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
		}
		return result{Committed: at.At, Resumed: vals}
	})
}

// TestDiffRestartGroup: a group member commits what it processed and leaves; the next
// member of the group resumes at the commit.
func TestDiffRestartGroup(t *testing.T) {
	differential(t, func(t *testing.T, gw target) {
		requireAPIs(t, gw.addr, keyJoinGroup, keySyncGroup, keyHeartbeat, keyLeaveGroup, keyOffsetCommit, keyOffsetFetch)
	}, func(t *testing.T, tg target, topic string) []string {
		cl := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		createTopic(t, kadm.NewClient(cl), topic, 1)
		for i := range 10 {
			must(t, cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(), "produce")
		}
		grp := topic + "-g"
		member := func() *kgo.Client {
			c, err := kgo.NewClient(kgo.SeedBrokers(tg.addr), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(grp), kgo.DisableAutoCommit(),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
			must(t, err, "member")
			return c
		}
		first := member()
		var recs []*kgo.Record
		ctx := ctxT(t)
		for len(recs) < 6 && ctx.Err() == nil {
			recs = append(recs, first.PollFetches(ctx).Records()...)
		}
		if len(recs) < 6 {
			t.Fatalf("the group's first member read %d of 10 records: %v", len(recs), ctx.Err())
		}
		must(t, first.CommitRecords(ctx, recs[:6]...), "commit")
		first.Close()
		second := member()
		defer second.Close()
		var vals []string
		for len(vals) < 4 && ctx.Err() == nil {
			second.PollFetches(ctx).EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
		}
		return vals
	})
}

// TestDiffTwoMemberGroup: two members of one group split four partitions, and every
// record produced once the group is stable is read exactly once, in order per key.
func TestDiffTwoMemberGroup(t *testing.T) {
	type result struct {
		PerKey      map[string][]int
		Duplicates  int
		BothMembers bool
		Described   string
		Listed      bool
		AfterLeave  string
	}
	differential(t, func(t *testing.T, gw target) {
		requireAPIs(t, gw.addr, keyJoinGroup, keySyncGroup, keyHeartbeat, keyLeaveGroup, keyOffsetCommit, keyOffsetFetch, keyDescribeGroups, keyListGroups)
	}, func(t *testing.T, tg target, topic string) result {
		const partitions, keys, total = 4, 20, 400
		prod := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		adm := kadm.NewClient(prod)
		createTopic(t, adm, topic, partitions)
		grp := topic + "-g"
		var mu sync.Mutex
		assigned := map[int]int{}
		var members []*kgo.Client
		for m := range 2 {
			c, err := kgo.NewClient(kgo.SeedBrokers(tg.addr), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(grp),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
					mu.Lock()
					assigned[m] += len(a[topic])
					mu.Unlock()
				}),
				kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, r map[string][]int32) {
					mu.Lock()
					assigned[m] -= len(r[topic])
					mu.Unlock()
					_ = c.CommitMarkedOffsets(ctx)
				}))
			must(t, err, "member %d", m)
			members = append(members, c)
		}
		defer func() {
			for _, c := range members {
				c.Close()
			}
		}()
		ctx := ctxT(t)
		got := make(chan *kgo.Record, total*2)
		var wg sync.WaitGroup
		pollCtx, stop := context.WithCancel(ctx)
		for _, c := range members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for pollCtx.Err() == nil {
					c.PollFetches(pollCtx).EachRecord(func(r *kgo.Record) { got <- r })
				}
			}()
		}
		// Wait until the group is stable with a partition on each member.
		for {
			mu.Lock()
			stable := assigned[0] > 0 && assigned[1] > 0 && assigned[0]+assigned[1] == partitions
			mu.Unlock()
			if stable {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("group never stable: %v", assigned)
			}
			time.Sleep(100 * time.Millisecond)
		}
		var recs []*kgo.Record
		for i := range total {
			k := i % keys
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%02d", k)), Value: []byte(strconv.Itoa(i / keys))})
		}
		must(t, prod.ProduceSync(ctx, recs...).FirstErr(), "produce")
		res := result{PerKey: map[string][]int{}}
		count := map[string]int{}
		for n := 0; n < total; n++ {
			select {
			case r := <-got:
				id := string(r.Key) + "/" + string(r.Value)
				if count[id]++; count[id] > 1 {
					res.Duplicates++
				}
				v, _ := strconv.Atoi(string(r.Value))
				res.PerKey[string(r.Key)] = append(res.PerKey[string(r.Key)], v)
			case <-ctx.Done():
				t.Fatalf("read %d of %d", n, total)
			}
		}
		mu.Lock()
		res.BothMembers = assigned[0] > 0 && assigned[1] > 0
		mu.Unlock()
		dg, err := adm.DescribeGroups(ctx, grp)
		must(t, err, "describe")
		d := dg[grp]
		must(t, d.Err, "describe %s", grp)
		var parts []int32
		for _, m := range d.Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, tp := range a.Topics {
					parts = append(parts, tp.Partitions...)
				}
			}
		}
		slices.Sort(parts)
		res.Described = fmt.Sprintf("state=%s type=%s protocol=%s members=%d partitions=%v", d.State, d.ProtocolType, d.Protocol, len(d.Members), parts)
		lg, err := adm.ListGroups(ctx)
		must(t, err, "list")
		_, res.Listed = lg[grp]
		stop()
		wg.Wait()
		for _, c := range members {
			c.Close()
		}
		members = nil
		dg, err = adm.DescribeGroups(ctx, grp)
		must(t, err, "describe after leave")
		res.AfterLeave = fmt.Sprintf("state=%s members=%d", dg[grp].State, len(dg[grp].Members))
		return res
	})
}

// TestDiffOffsetsByTime: ListOffsets earliest, latest and by time (before, between and
// after two produced batches) agree.
func TestDiffOffsetsByTime(t *testing.T) {
	differential(t, nil, func(t *testing.T, tg target, topic string) []string {
		cl := tg.client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		adm := kadm.NewClient(cl)
		createTopic(t, adm, topic, 1)
		ctx := ctxT(t)
		start := time.Now().Add(-time.Second).UnixMilli()
		for i := range 5 {
			must(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(), "produce")
		}
		time.Sleep(150 * time.Millisecond)
		mid := time.Now().UnixMilli()
		time.Sleep(150 * time.Millisecond)
		for i := range 5 {
			must(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(5 + i))}).FirstErr(), "produce")
		}
		var out []string
		add := func(what string, l kadm.ListedOffsets, err error) {
			must(t, err, "%s", what)
			o, _ := l.Lookup(topic, 0)
			out = append(out, fmt.Sprintf("%s=%d %s", what, o.Offset, errName(o.Err)))
		}
		l, err := adm.ListStartOffsets(ctx, topic)
		add("earliest", l, err)
		l, err = adm.ListEndOffsets(ctx, topic)
		add("latest", l, err)
		l, err = adm.ListOffsetsAfterMilli(ctx, start, topic)
		add("before", l, err)
		l, err = adm.ListOffsetsAfterMilli(ctx, mid, topic)
		add("between", l, err)
		// After every record Kafka answers -1 (kadm: the end offset).
		l, err = adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), topic)
		add("after", l, err)
		return out
	})
}

// TestDiffTopicAdmin: create, create again, grow, shrink, delete, delete again and
// create again give the same answers; the new incarnation has a new topic id.
func TestDiffTopicAdmin(t *testing.T) {
	differential(t, nil, func(t *testing.T, tg target, topic string) []string {
		adm := kadm.NewClient(tg.client(t))
		ctx := ctxT(t)
		var out []string
		create := func(what string) [16]byte {
			r, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kmsg.StringPtr("86400000")}, topic)
			must(t, err, "%s", what)
			c := r[topic]
			out = append(out, fmt.Sprintf("%s: %s", what, errName(c.Err)))
			return c.ID
		}
		id1 := create("create")
		create("create again")
		md, err := adm.Metadata(ctx, topic)
		must(t, err, "metadata")
		out = append(out, fmt.Sprintf("partitions=%d", len(md.Topics[topic].Partitions)))
		pr, err := adm.UpdatePartitions(ctx, 5, topic)
		must(t, err, "grow")
		out = append(out, "grow to 5: "+errName(pr[topic].Err))
		pr, err = adm.UpdatePartitions(ctx, 2, topic)
		must(t, err, "shrink")
		out = append(out, "shrink to 2: "+errName(pr[topic].Err))
		dr, err := adm.DeleteTopics(ctx, topic)
		must(t, err, "delete")
		out = append(out, "delete: "+errName(dr[topic].Err))
		// Kafka forgets a deleted topic asynchronously: wait until Metadata says so.
		for {
			md, err := adm.Metadata(ctx, topic)
			must(t, err, "metadata after delete")
			if md.Topics[topic].Err != nil {
				out = append(out, "metadata after delete: "+errName(md.Topics[topic].Err))
				break
			}
			if ctx.Err() != nil {
				t.Fatal("topic still listed after its deletion")
			}
			time.Sleep(200 * time.Millisecond)
		}
		dr, err = adm.DeleteTopics(ctx, topic)
		must(t, err, "delete again")
		out = append(out, "delete again: "+errName(dr[topic].Err))
		var id2 [16]byte
		for {
			r, err := adm.CreateTopics(ctx, 1, 1, nil, topic)
			must(t, err, "create after delete")
			if c := r[topic]; c.Err == nil || ctx.Err() != nil {
				out = append(out, "create after delete: "+errName(c.Err))
				id2 = c.ID
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		out = append(out, fmt.Sprintf("new topic id: %v", id1 != id2 && id2 != [16]byte{}))
		return out
	})
}

// TestDiffRefusals: a batch with a bad CRC, a produce to an unknown topic and a batch
// over the size limit get the same error codes, and the connection serves on.
func TestDiffRefusals(t *testing.T) {
	differential(t, nil, func(t *testing.T, tg target, topic string) []string {
		createTopic(t, kadm.NewClient(tg.client(t)), topic, 1)
		r := dial(t, tg.addr)
		corrupt := batch([]byte("a"), []byte("b"))
		corrupt[len(corrupt)-1] ^= 1
		big := batch(make([]byte, 7<<20))
		var out []string
		for _, c := range []struct {
			what    string
			topic   string
			records []byte
		}{
			{"corrupt crc", topic, corrupt},
			{"unknown topic", topic + "-missing", batch([]byte("a"))},
			{"oversize batch", topic, big},
			{"valid", topic, batch([]byte("a"))},
		} {
			p := r.roundTrip(produceReq(c.topic, 0, c.records)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			out = append(out, fmt.Sprintf("%s: %s base=%d", c.what, errName(kerr.ErrorForCode(p.ErrorCode)), p.BaseOffset))
		}
		return out
	})
}
