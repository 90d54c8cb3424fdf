package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// KeyLookup is what the key lookup route needs of the log (*log.Log implements it).
type KeyLookup interface {
	Latest(ctx context.Context, topic string, key []byte, partition *int32) (log.KeyValue, error)
}

var _ KeyLookup = (*log.Log)(nil)

// keyRoute answers a key's latest record on a compacted topic.
const keyRoute = "GET /v1/topics/{topic}/keys/{key}"

// keyRecord is the key lookup's answer: the polled record's shape and its partition.
type keyRecord struct {
	Partition int32 `json:"partition"`
	pollRecord
}

// keyRoutes registers the key lookup when the log offers it.
func (s *server) keyRoutes() {
	if _, ok := s.log.(KeyLookup); ok {
		s.mux.HandleFunc(keyRoute, s.latest)
	}
}

// lookupKey is the key a lookup names: the path segment's bytes (percent-decoded), or,
// with encoding=base64, the bytes the segment encodes in URL-safe base64 (padded or not),
// for keys that are not text.
func lookupKey(segment string, q query) ([]byte, *apiError) {
	enc, ok := q.v["encoding"]
	if !ok {
		return []byte(segment), nil
	}
	if enc[0] != "base64" {
		return nil, invalid(fmt.Sprintf(`encoding must be "base64", got %q`, enc[0]))
	}
	key, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(segment, "="))
	if err != nil {
		return nil, invalid("the key is not URL-safe base64: " + err.Error())
	}
	return key, nil
}

// latest answers the latest record of a key of a compacted topic from its key index:
// 200 with the record, 404 key_deleted (with the tombstone's partition and offset) for
// a key whose latest record is a tombstone within its retention, 404 not_found for a
// key never written or whose tombstone's retention passed.
func (s *server) latest(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpRead, topic)); !ok {
		return
	}
	q, e := parseQuery(r.URL.RawQuery, "partition", "encoding")
	if e != nil {
		writeError(w, e)
		return
	}
	key, e := lookupKey(r.PathValue("key"), q)
	if e != nil {
		writeError(w, e)
		return
	}
	var partition *int32
	if q.has("partition") {
		p, e := q.int64In("partition", 0, 0, log.MaxPartitions-1)
		if e != nil {
			writeError(w, e)
			return
		}
		p32 := int32(p)
		partition = &p32
	}
	kv, err := s.log.(KeyLookup).Latest(r.Context(), topic, key, partition)
	var del *log.KeyDeletedError
	if errors.As(err, &del) {
		writeError(w, &apiError{status: http.StatusNotFound, code: wire.CodeKeyDeleted, message: err.Error(),
			details: map[string]any{"partition": del.Partition, "offset": del.Offset, "deleted_at_ms": del.AppendedAt.UnixMilli()}})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec := kv.Record
	h, list := pollHeaders(rec.Headers)
	writeJSON(w, http.StatusOK, keyRecord{Partition: kv.Partition, pollRecord: pollRecord{Offset: rec.Offset, TimestampMs: rec.Timestamp, Key: rec.Key, Value: rec.Value, Headers: h, HeaderList: list}})
}
