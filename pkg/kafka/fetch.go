package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// maxFetchParallel bounds the partitions one fetch reads at once.
const maxFetchParallel = 16

// fetchPart is one partition of a fetch and what reading it found.
type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int

	code    int16
	res     log.PollResult
	batches []byte
}

// fetch answers a Fetch: every partition is read from its offset within its
// partition_max_bytes and the request's max_bytes (the first partition with records
// always gets its first record, so a consumer progresses past a large one). With fewer
// than min_bytes found it long-polls every partition, up to max_wait, through the
// log's poll wait, and reads again once one has records. Fetch sessions are not kept:
// the answer's session id 0 tells the client to send full fetches.
func (s *Server) fetch(ctx context.Context, r *kmsg.FetchRequest) kmsg.Response {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(r.Version)
	if r.SessionID != 0 {
		resp.ErrorCode = fetchSessionNotFound
		return resp
	}
	budget := s.cfg.MaxFetchBytes
	if r.Version >= 3 && r.MaxBytes > 0 {
		budget = min(budget, int(r.MaxBytes))
	}
	var parts []*fetchPart
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, &fetchPart{topic: rt.Topic, partition: rp.Partition, offset: rp.FetchOffset, maxBytes: max(int(rp.PartitionMaxBytes), 1)})
		}
	}
	wait := min(time.Duration(max(r.MaxWaitMillis, 0))*time.Millisecond, wire.MaxPollWait)
	deadline := time.Now().Add(wait)
	minBytes := max(int(r.MinBytes), 1)
	for {
		got := s.readParts(ctx, parts, budget)
		left := time.Until(deadline)
		if got >= min(minBytes, budget) || left <= 0 || ctx.Err() != nil || anyError(parts) {
			break
		}
		s.awaitRecords(ctx, parts, left)
	}
	for _, rt := range r.Topics {
		out := kmsg.NewFetchResponseTopic()
		out.Topic = rt.Topic
		for range rt.Partitions {
			fp := parts[0]
			parts = parts[1:]
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = fp.partition, fp.code
			if fp.code == 0 || fp.code == offsetOutOfRange {
				p.HighWatermark, p.LastStableOffset, p.LogStartOffset = fp.res.HighWatermark, fp.res.HighWatermark, fp.res.LogStartOffset
			}
			p.RecordBatches = fp.batches
			out.Partitions = append(out.Partitions, p)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func anyError(parts []*fetchPart) bool {
	for _, p := range parts {
		if p.code != 0 {
			return true
		}
	}
	return false
}

// readParts reads every partition once, without waiting, and keeps the records that
// fit budget in request order; it returns the bytes kept.
func (s *Server) readParts(ctx context.Context, parts []*fetchPart, budget int) int {
	sem := make(chan struct{}, maxFetchParallel)
	var wg sync.WaitGroup
	for _, fp := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fp.code, fp.res, fp.batches = 0, log.PollResult{}, nil
			t, code := s.topic(ctx, fp.topic, fp.partition)
			if code != 0 {
				fp.code = code
				return
			}
			if fp.offset < 0 {
				// Kafka answers a negative offset as out of range, which resets the
				// consumer as its policy says.
				fp.code = offsetOutOfRange
				fp.res.LogStartOffset, fp.res.HighWatermark, _ = s.log.Bounds(ctx, fp.topic, fp.partition)
				return
			}
			res, err := s.log.Poll(ctx, fp.topic, fp.partition, fp.offset,
				log.PollOptions{MaxRecords: wire.MaxPollRecords, MaxBytes: min(fp.maxBytes, budget)})
			var oor *log.OffsetOutOfRangeError
			if errors.As(err, &oor) {
				fp.code, fp.res.HighWatermark, fp.res.LogStartOffset = offsetOutOfRange, oor.HighWatermark, oor.LogStartOffset
				return
			}
			if err != nil {
				fp.code = errCode(err)
				return
			}
			fp.res = res
			fp.batches = encodeBatches(res.Records, t.LogAppendTime)
		}()
	}
	wg.Wait()
	used := 0
	for _, fp := range parts {
		if len(fp.batches) == 0 {
			continue
		}
		if used > 0 && used+len(fp.batches) > budget {
			fp.batches, fp.res.Records = nil, nil
			continue
		}
		used += len(fp.batches)
	}
	return used
}

// awaitRecords long-polls every partition at the offset after what was read, up to
// wait, and returns once one of them has a record (or failed), or the wait is over.
func (s *Server) awaitRecords(ctx context.Context, parts []*fetchPart, wait time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var wg sync.WaitGroup
	for _, fp := range parts {
		next := fp.offset
		if len(fp.res.Records) > 0 {
			next = fp.res.NextOffset
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.log.Poll(wctx, fp.topic, fp.partition, next, log.PollOptions{MaxRecords: 1, MaxBytes: 1, Wait: wait})
			if err != nil && wctx.Err() == nil || len(res.Records) > 0 {
				cancel()
			}
		}()
	}
	wg.Wait()
}

// encodeBatches encodes records as Kafka record batches v2 (kmsg's encodings, CRC-32C
// over the batch): consecutive records share a batch, which a gap in their offsets (a
// duplicate commit skipped by the log) does not break, as compaction's gaps do not in
// Kafka. On a topic of LogAppendTime each batch carries the timestamp-type attribute,
// whose readers give every record of a batch its max timestamp: a batch then holds
// records of one timestamp only.
func encodeBatches(recs []segment.Record, logAppendTime bool) []byte {
	size := 0
	for i := range recs {
		size += recordSize(&recs[i]) + 5
	}
	out := make([]byte, 0, size+(batchMinLength+12)*(1+len(recs)/1024))
	for len(recs) > 0 {
		n := 1
		for n < len(recs) && recs[n].Offset-recs[0].Offset <= math.MaxInt32 &&
			(!logAppendTime || recs[n].Timestamp == recs[0].Timestamp) {
			n++
		}
		out = appendBatch(out, recs[:n], logAppendTime)
		recs = recs[n:]
	}
	return out
}

// appendBatch appends one record batch of recs to dst: the header first (kmsg's
// encoding), then each record encoded once straight after it, its length prefix
// computed beforehand, then the length and CRC-32C patched in.
func appendBatch(dst []byte, recs []segment.Record, logAppendTime bool) []byte {
	base, firstTs := recs[0].Offset, recs[0].Timestamp
	maxTs := firstTs
	for i := range recs {
		maxTs = max(maxTs, recs[i].Timestamp)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          base,
		PartitionLeaderEpoch: -1,
		Magic:                batchMagic,
		LastOffsetDelta:      int32(recs[len(recs)-1].Offset - base),
		FirstTimestamp:       firstTs,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
	}
	if logAppendTime {
		b.Attributes |= attrLogAppendTime
	}
	start := len(dst)
	dst = b.AppendTo(dst)
	body := len(dst)
	var hs []kmsg.Header
	for i := range recs {
		r := &recs[i]
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - firstTs, OffsetDelta: int32(r.Offset - base), Key: r.Key, Value: r.Value}
		if len(r.Headers) > 0 {
			hs = hs[:0]
			for _, h := range r.Headers {
				hs = append(hs, kmsg.Header{Key: h.Key, Value: h.Value})
			}
			kr.Headers = hs
		}
		kr.Length = int32(recordLength(&kr))
		dst = kr.AppendTo(dst)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(batchMinLength+len(dst)-body))
	binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[start+batchCRCStart:], castagnoli))
	return dst
}

// recordLength is the length Kafka's record encoding (kmsg.Record.AppendTo) gives
// everything of kr after its length prefix.
func recordLength(kr *kmsg.Record) int {
	n := 1 + varintLen(kr.TimestampDelta64) + varintLen(int64(kr.OffsetDelta)) +
		bytesLen(kr.Key) + bytesLen(kr.Value) + varintLen(int64(len(kr.Headers)))
	for _, h := range kr.Headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

// recordSize bounds the encoded size of r without its length prefix.
func recordSize(r *segment.Record) int {
	n := 1 + 10 + 5 + len(r.Key) + 5 + len(r.Value) + 5 + 5
	for _, h := range r.Headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// bytesLen is the encoded length of a nullable varint-prefixed byte string.
func bytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the length of x as a zigzag varint.
func varintLen(x int64) int {
	u := uint64(x)<<1 ^ uint64(x>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// responseSizeHint is about how many bytes resp encodes to beyond its fixed fields:
// a fetch answer's record batches, so the response buffer is sized once instead of
// regrown (and recopied) as megabytes of records are appended; 0 for other answers.
func responseSizeHint(resp kmsg.Response) int {
	r, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 0
	for i := range r.Topics {
		t := &r.Topics[i]
		n += len(t.Topic) + 32
		for j := range t.Partitions {
			n += len(t.Partitions[j].RecordBatches) + 64
		}
	}
	return n
}
