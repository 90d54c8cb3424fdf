package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stratalog/strata/pkg/segment"
)

func block(t testing.TB, values ...string) []byte {
	t.Helper()
	recs := make([]segment.Record, len(values))
	for i, v := range values {
		recs[i] = segment.Record{Timestamp: 1700000000000 + int64(i), Value: []byte(v)}
	}
	b, err := segment.EncodeBlock(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRequestRoundTrip(t *testing.T) {
	frames := []Frame{{Partition: 3, Block: block(t, "a", "b")}, {Partition: 0, Block: block(t, "c")}}
	got, err := DecodeRequest(AppendRequest(nil, frames))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Partition != 3 || got[1].Partition != 0 ||
		!bytes.Equal(got[0].Block, frames[0].Block) || !bytes.Equal(got[1].Block, frames[1].Block) {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestPollRoundTrip(t *testing.T) {
	two := append(block(t, "a", "b"), block(t, "c")...)
	p := PollBlocks{NextOffset: 13, HighWatermark: 20, LogStartOffset: 2,
		Ranges: []Range{{BaseOffset: 9, Data: two}, {BaseOffset: 12, Data: block(t, "d")}}}
	body := AppendPoll(nil, p)
	if len(body) != PollSize(len(two), len(p.Ranges[1].Data)) {
		t.Fatalf("PollSize %d, body %d", PollSize(len(two), len(p.Ranges[1].Data)), len(body))
	}
	got, err := DecodePoll(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.NextOffset != 13 || got.HighWatermark != 20 || got.LogStartOffset != 2 || len(got.Ranges) != 2 ||
		got.Ranges[0].BaseOffset != 9 || !bytes.Equal(got.Ranges[0].Data, two) || got.Ranges[1].BaseOffset != 12 {
		t.Fatalf("round trip: %+v", got)
	}
	recs, err := segment.AppendBlocksRecords(nil, got.Ranges[0].Data, got.Ranges[0].BaseOffset)
	if err != nil || len(recs) != 3 || recs[2].Offset != 11 || string(recs[2].Value) != "c" {
		t.Fatalf("records of the first range: %+v, %v", recs, err)
	}
}

func TestMalformedBodies(t *testing.T) {
	good := AppendRequest(nil, []Frame{{Partition: 1, Block: block(t, "a")}})
	poll := AppendPoll(nil, PollBlocks{NextOffset: 1, HighWatermark: 1, Ranges: []Range{{BaseOffset: 0, Data: block(t, "a")}}})
	many := AppendRequest(nil, nil)
	for range MaxPartitions + 1 {
		many = AppendRequest(many[:0:0], append(framesOf(many), Frame{Block: block(t, "x")}))
	}
	reqs := map[string][]byte{
		"empty":          nil,
		"bad magic":      append([]byte("STRX"), good[4:]...),
		"bad version":    append(append([]byte("STRA"), 9), good[5:]...),
		"no frame":       good[:5],
		"short frame":    good[:7],
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte{}, good...), 0),
		"too many":       many,
		"poll as append": poll,
	}
	for name, b := range reqs {
		if _, err := DecodeRequest(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("request %s: %v, want ErrMalformed", name, err)
		}
	}
	polls := map[string][]byte{
		"empty":           nil,
		"short header":    poll[:20],
		"truncated":       poll[:len(poll)-1],
		"short range":     poll[:pollHeaderSize+5],
		"negative next":   append(append(append([]byte{}, poll[:5]...), 0xff), poll[6:]...),
		"append as poll":  good,
		"zero-length run": AppendPoll(nil, PollBlocks{Ranges: []Range{{BaseOffset: 0}}}),
	}
	for name, b := range polls {
		if _, err := DecodePoll(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("poll %s: %v, want ErrMalformed", name, err)
		}
	}
}

// framesOf decodes a request built by AppendRequest in this test (nil when it has none).
func framesOf(body []byte) []Frame {
	f, _ := DecodeRequest(body)
	return f
}

// FuzzDecodeRequest: arbitrary bytes never panic, fail only with ErrMalformed, and a
// decoded body re-encodes to the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(AppendRequest(nil, []Frame{{Partition: 1, Block: block(f, "a")}, {Partition: -1, Block: block(f, "b", "c")}}))
	f.Add([]byte("STRA\x01\x00\x00\x00\x01STRB\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, err := DecodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if again := AppendRequest(nil, frames); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, was %x", again, b)
		}
	})
}

// FuzzDecodePoll: as FuzzDecodeRequest, for the poll answer.
func FuzzDecodePoll(f *testing.F) {
	f.Add(AppendPoll(nil, PollBlocks{NextOffset: 3, HighWatermark: 4, Ranges: []Range{{BaseOffset: 1, Data: block(f, "a", "b")}}}))
	f.Add(AppendPoll(nil, PollBlocks{}))
	f.Add([]byte("STRP\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePoll(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if again := AppendPoll(nil, p); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, was %x", again, b)
		}
	})
}
