package httpapi

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// searchRoute scans one partition for the records of a key, server-side and bounded:
// a browser finds a key without pulling the partition through itself.
const searchRoute = "GET /v1/topics/{topic}/partitions/{p}/search"

// searchBatch is how many records one step of a search reads.
const searchBatch = 1000

// groupLagSeries is one partition's stored lag samples.
type groupLagSeries = store.LagSeries

// notFound reports an error that names a topic or group that does not exist (any more).
func notFound(err error) bool {
	return err != nil && !errors.Is(err, log.ErrCorrupt) &&
		(errors.Is(err, log.ErrTopicNotFound) || errors.Is(err, store.ErrNotFound))
}

// search answers the records whose key is key among at most max_scan offsets from
// offset (the log start when below it), at most max_records of them, and where to go on.
// It needs read on the topic, as a poll.
func (s *server) search(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpRead, topic)); !ok {
		return
	}
	partition, e := partitionParam(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q, e := parseQuery(r.URL.RawQuery, "key", "offset", "max_scan", "max_records")
	if e != nil {
		writeError(w, e)
		return
	}
	keyText := q.str("key")
	if keyText == nil {
		writeError(w, invalid(`query parameter "key" is required (base64)`))
		return
	}
	key, e := decodeBase64("key", *keyText)
	if e != nil {
		writeError(w, e)
		return
	}
	offset, e1 := q.int64In("offset", 0, 0, 1<<62)
	scan, e2 := q.int64In("max_scan", wire.DefaultSearchScan, 1, wire.MaxSearchScan)
	limit, e3 := q.int64In("max_records", 100, 1, wire.MaxSearchRecords)
	if e := firstError(e1, e2, e3); e != nil {
		writeError(w, e)
		return
	}
	info, err := s.log.DescribeTopic(r.Context(), topic)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if partition < 0 || int(partition) >= len(info.Partitions) {
		writeError(w, invalid("partition out of range"))
		return
	}
	pi := info.Partitions[partition]
	start := min(max(offset, pi.LogStartOffset), pi.HighWatermark)
	out := wire.KeySearch{NextOffset: start, HighWatermark: pi.HighWatermark, LogStartOffset: pi.LogStartOffset}
	found := []pollRecord{}
	for out.NextOffset < out.HighWatermark && out.NextOffset-start < scan && int64(len(found)) < limit {
		from := out.NextOffset
		res, err := s.log.Poll(r.Context(), topic, partition, from,
			log.PollOptions{MaxRecords: int(min(searchBatch, scan-(from-start))), MaxBytes: MaxPollBytes})
		var oor *log.OffsetOutOfRangeError
		if errors.As(err, &oor) && oor.LogStartOffset > from {
			// Retention moved the log start past the scan: go on from there.
			out.NextOffset, out.LogStartOffset = oor.LogStartOffset, oor.LogStartOffset
			continue
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.HighWatermark, out.LogStartOffset = res.HighWatermark, res.LogStartOffset
		for _, rec := range res.Records {
			out.NextOffset = rec.Offset + 1
			if rec.Key != nil && bytes.Equal(rec.Key, key) {
				h, list := pollHeaders(rec.Headers)
				found = append(found, pollRecord{Offset: rec.Offset, TimestampMs: rec.Timestamp, Key: rec.Key, Value: rec.Value, Headers: h, HeaderList: list})
				if int64(len(found)) == limit {
					break
				}
			}
		}
		if int64(len(found)) < limit {
			out.NextOffset = max(out.NextOffset, res.NextOffset) // past holes the poll skipped
		}
		if out.NextOffset <= from {
			break
		}
	}
	out.Scanned = out.NextOffset - start
	out.Complete = out.NextOffset >= out.HighWatermark
	writeJSON(w, http.StatusOK, searchJSON{Records: found, NextOffset: out.NextOffset, Scanned: out.Scanned,
		Complete: out.Complete, HighWatermark: out.HighWatermark, LogStartOffset: out.LogStartOffset})
}

// searchJSON is wire.KeySearch with the records as the poll encodes them.
type searchJSON struct {
	Records        []pollRecord `json:"records"`
	NextOffset     int64        `json:"next_offset"`
	Scanned        int64        `json:"scanned"`
	Complete       bool         `json:"complete"`
	HighWatermark  int64        `json:"high_watermark"`
	LogStartOffset int64        `json:"log_start_offset"`
}
