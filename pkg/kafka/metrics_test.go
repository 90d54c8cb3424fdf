package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHasServerError: a server error code anywhere in an answer (top level, per topic,
// per partition) counts; a client's error codes and record bytes do not.
func TestHasServerError(t *testing.T) {
	produce := func(code int16) kmsg.Response {
		r := kmsg.NewPtrProduceResponse()
		tp := kmsg.NewProduceResponseTopic()
		p := kmsg.NewProduceResponseTopicPartition()
		p.ErrorCode = code
		tp.Partitions = append(tp.Partitions, p)
		r.Topics = append(r.Topics, tp)
		return r
	}
	fetch := kmsg.NewPtrFetchResponse()
	ft := kmsg.NewFetchResponseTopic()
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = []byte{0, 0, 0, 56, 0, 56} // bytes that look like codes are not codes
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	coord := kmsg.NewPtrFindCoordinatorResponse()
	coord.ErrorCode = coordinatorNotAvailable
	for _, c := range []struct {
		name string
		resp kmsg.Response
		want bool
	}{
		{"ok", produce(0), false},
		{"client error", produce(unknownTopicOrPartition), false},
		{"storage error per partition", produce(storageError), true},
		{"unknown server error", produce(unknownServerError), true},
		{"fetch with records", fetch, false},
		{"top-level coordinator not available", coord, true},
		{"api versions", kmsg.NewPtrApiVersionsResponse(), false},
	} {
		if got := hasServerError(c.resp); got != c.want {
			t.Errorf("%s: hasServerError = %v, want %v", c.name, got, c.want)
		}
	}
}
