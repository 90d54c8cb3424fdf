package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record batch v2 layout (KIP-98): the bytes before the CRC, and the fixed header after
// the length field.
const (
	batchHeadBytes     = 12 // base offset, batch length
	batchMinLength     = 49 // everything after the length field, with no record
	batchCRCStart      = 21 // the CRC covers from the attributes on
	batchMagicAt       = 16
	attrCompression    = 0x07
	attrLogAppendTime  = 0x08
	attrTransactional  = 0x10
	attrControl        = 0x20
	recordMinBytes     = 7 // length, attributes, timestamp, offset, key, value, headers
	noTimestamp        = -1
	batchMagic         = 2
	acksNone           = 0
	maxProduceParallel = 16
)

// batchError is why a partition's records were refused, as Kafka says it.
type batchError struct {
	code int16
	msg  string
}

func (e *batchError) Error() string { return e.msg }

func refuse(code int16, format string, args ...any) *batchError {
	return &batchError{code: code, msg: fmt.Sprintf(format, args...)}
}

// decodeBatches decodes one partition's produce payload, one or more record batches v2,
// into the log's records: each batch's CRC-32C, magic, lengths and record count are
// checked, its records decompressed within maxBytes. Null values (tombstones) and null
// header values are kept as such, headers in order with their repeated keys. What
// Strata cannot keep as Kafka means it (a transactional batch) is refused with
// INVALID_RECORD rather than changed.
func decodeBatches(data []byte, maxBytes int) ([]log.Record, *batchError) {
	if len(data) == 0 {
		return nil, refuse(invalidRecord, "the partition's records are empty")
	}
	var recs []log.Record
	total := 0
	for len(data) > 0 {
		if len(data) < batchHeadBytes {
			return nil, refuse(corruptMessage, "a record batch is truncated: %d bytes left", len(data))
		}
		length := int32(binary.BigEndian.Uint32(data[8:12]))
		if length < batchMinLength || int64(length) > int64(len(data)-batchHeadBytes) {
			return nil, refuse(corruptMessage, "record batch length %d does not fit the %d bytes sent", length, len(data)-batchHeadBytes)
		}
		raw := data[:batchHeadBytes+int(length)]
		data = data[len(raw):]
		total += len(raw)
		if total > maxBytes {
			return nil, refuse(messageTooLarge, "the partition's record batches hold %d bytes or more, at most %d", total, maxBytes)
		}
		if magic := int8(raw[batchMagicAt]); magic != batchMagic {
			return nil, refuse(invalidRecord, "record batch magic %d: only record batch v2 (magic 2) is accepted", magic)
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return nil, refuse(corruptMessage, "record batch: %v", err)
		}
		if crc32.Checksum(raw[batchCRCStart:], castagnoli) != uint32(b.CRC) {
			return nil, refuse(corruptMessage, "record batch CRC-32C mismatch")
		}
		got, err := decodeRecords(&b, maxBytes)
		if err != nil {
			return nil, err
		}
		recs = append(recs, got...)
	}
	return recs, nil
}

func decodeRecords(b *kmsg.RecordBatch, maxBytes int) ([]log.Record, *batchError) {
	switch {
	case b.Attributes&(attrTransactional|attrControl) != 0:
		return nil, refuse(invalidRecord, "transactional and control batches are not accepted: transactions are not implemented")
	case b.NumRecords <= 0:
		return nil, refuse(invalidRecord, "a record batch must hold at least one record, it says %d", b.NumRecords)
	}
	body, err := decompress(int(b.Attributes&attrCompression), b.Records, maxBytes)
	if errors.Is(err, errDecompressedTooLarge) {
		return nil, refuse(messageTooLarge, "a record batch decompresses to more than %d bytes", maxBytes)
	}
	if err != nil {
		return nil, refuse(corruptMessage, "record batch: %v", err)
	}
	if int64(b.NumRecords) > int64(len(body)/recordMinBytes) {
		return nil, refuse(corruptMessage, "record batch says %d records in %d bytes", b.NumRecords, len(body))
	}
	appendTime := b.Attributes&attrLogAppendTime != 0 || b.FirstTimestamp == noTimestamp
	recs := make([]log.Record, 0, b.NumRecords)
	for i := range b.NumRecords {
		rd := kbin.Reader{Src: body}
		n := rd.Varint()
		if rd.Complete() != nil || n < 0 || int64(n) > int64(len(rd.Src)) {
			return nil, refuse(corruptMessage, "record %d: bad length", i)
		}
		end := len(body) - len(rd.Src) + int(n)
		var kr kmsg.Record
		if err := kr.ReadFrom(body[:end]); err != nil {
			return nil, refuse(corruptMessage, "record %d: %v", i, err)
		}
		body = body[end:]
		if kr.OffsetDelta != i {
			return nil, refuse(invalidRecord, "record %d has offset delta %d: a batch's offsets must be consecutive from 0", i, kr.OffsetDelta)
		}
		r := log.Record{Key: kr.Key, Value: kr.Value}
		for _, h := range kr.Headers {
			r.Headers = append(r.Headers, segment.Header{Key: h.Key, Value: h.Value})
		}
		if !appendTime {
			ts := b.FirstTimestamp + kr.TimestampDelta64
			if ts < 0 || ts > wire.MaxTimestampMs {
				return nil, refuse(invalidTimestamp, "record %d: timestamp %d outside 0–%d", i, ts, int64(wire.MaxTimestampMs))
			}
			r.Timestamp = &ts
		}
		recs = append(recs, r)
	}
	if len(body) != 0 {
		return nil, refuse(corruptMessage, "record batch has %d bytes after its %d records", len(body), b.NumRecords)
	}
	return recs, nil
}

// produce appends each partition's batches as one append (one commit: the batch's
// records get consecutive offsets), the partitions concurrently. Every acks value gets
// Strata's acknowledgement, durable in the store; acks=0 gets no answer, and a refusal
// then closes the connection so the client refreshes its metadata, as Kafka does.
func (s *Server) produce(ctx context.Context, r *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(r.Version)
	type job struct {
		topic string
		out   *kmsg.ProduceResponseTopicPartition
		data  []byte
	}
	var jobs []job
	for _, rt := range r.Topics {
		out := kmsg.NewProduceResponseTopic()
		out.Topic = rt.Topic
		out.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, out)
	}
	seen := map[topicPartition]bool{}
	for i, rt := range r.Topics {
		for j, rp := range rt.Partitions {
			p := &resp.Topics[i].Partitions[j]
			*p = kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			p.BaseOffset = -1 // as Kafka answers a refused partition; set on success
			if r.TransactionID != nil {
				p.ErrorCode = invalidRequest
				p.ErrorMessage = kmsg.StringPtr("transactions are not implemented")
				continue
			}
			k := topicPartition{rt.Topic, rp.Partition}
			if seen[k] {
				// Two appends of one partition in one request would have no order.
				p.ErrorCode = invalidRequest
				p.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("partition %d of %q appears twice in the request", rp.Partition, rt.Topic))
				continue
			}
			seen[k] = true
			jobs = append(jobs, job{topic: rt.Topic, out: p, data: rp.Records})
		}
	}
	// On a pipelined connection each partition's job goes after the connection's
	// previous one there (pipeline.go).
	var before, mine []*partSlot
	if pt := produceTurnOf(ctx); pt != nil {
		parts := make([]topicPartition, len(jobs))
		for i, j := range jobs {
			parts[i] = topicPartition{j.topic, j.out.Partition}
		}
		var err error
		if before, mine, err = pt.places(ctx, parts); err != nil {
			return nil, err
		}
	}
	sem := make(chan struct{}, maxProduceParallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		var o partOrder
		if mine != nil {
			o = partOrder{before: before[i], mine: mine[i]}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			defer o.mine.release(nil)
			s.producePartition(ctx, j.topic, j.out, j.data, o)
		}()
	}
	wg.Wait()
	if r.Acks == acksNone {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, fmt.Errorf("%w: an acks=0 produce to %s/%d was refused: %s", errClose, t.Topic, p.Partition, *p.ErrorMessage)
				}
			}
		}
		return nil, nil
	}
	return resp, nil
}

// partOrder is a produce job's place among its connection's jobs on the partition:
// its append is enqueued after the one before's (before), and the next may go once it
// released mine. Both nil: the job is not ordered against any other.
type partOrder struct {
	before, mine *partSlot
}

// enqueue appends recs, after the job before on the partition, and lets the next job
// go once the append has its place: the log then commits them in that order.
func (s *Server) enqueue(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions, o partOrder) ([]log.Result, error) {
	after, err := o.before.wait(ctx)
	if err != nil {
		o.mine.release(nil)
		return nil, err
	}
	q := s.log.Enqueue(ctx, topic, recs, opt, after)
	o.mine.release(q)
	return q.Wait()
}

func (s *Server) producePartition(ctx context.Context, topic string, out *kmsg.ProduceResponseTopicPartition, data []byte, o partOrder) {
	fail := func(code int16, msg string) {
		out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(msg)
	}
	t, code := s.topic(ctx, topic, out.Partition)
	if code != 0 {
		fail(code, fmt.Sprintf("topic %q partition %d is unknown (topics are created explicitly)", topic, out.Partition))
		return
	}
	recs, berr := decodeBatches(data, s.cfg.MaxMessageBytes)
	if berr != nil {
		fail(berr.code, berr.msg)
		return
	}
	p := out.Partition
	for i := range recs {
		recs[i].Partition = &p
	}
	if pb, berr := batchProducer(data); berr != nil || pb != nil {
		if berr != nil {
			fail(berr.code, berr.msg)
			return
		}
		s.produceIdempotent(ctx, t, out, recs, *pb, o)
		return
	}
	res, err := s.enqueue(ctx, topic, recs, log.AppendOptions{Principal: appendPrincipal(ctx)}, o)
	if err != nil {
		code := errCode(err)
		if errors.Is(err, log.ErrInvalid) {
			code = invalidRecord
		}
		fail(code, err.Error())
		return
	}
	out.BaseOffset = res[0].Offset
	if res[0].AppendTime != 0 {
		out.LogAppendTime = res[0].AppendTime
	}
}
