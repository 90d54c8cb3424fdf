package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HeaderAttempt names which attempt of an idempotent append a request is: "0" on its
// first send, 1, 2… on the retries of the very same body under the same
// Idempotency-Key. On attempt 0 the server skips reading the key's claim (no earlier
// attempt can hold one); the claim it writes after its commits still makes a key reused
// by mistake exactly-once. A request without the header is read as a possible retry.
const HeaderAttempt = "Strata-Attempt"

// HeaderIdempotency, set to IdempotencyProducer on an append with an Idempotency-Key,
// says the key names one request of a producer session (the SDK's producer id and the
// request's sequence number) that is retried only with Strata-Attempt and, on a retry,
// HeaderRetryElapsed: the server then keeps no claim per request (fenced idempotency).
// Another value is refused; without the header the key is claimed.
const (
	HeaderIdempotency   = "Strata-Idempotency"
	IdempotencyProducer = "producer"
)

// HeaderRetryElapsed is, on a producer request's retry (Strata-Attempt above 0), the
// milliseconds since its first attempt was sent, by the client's clock: the retry
// searches the log for earlier attempts appended since then. At most MaxRetryElapsed.
const HeaderRetryElapsed = "Strata-Retry-Elapsed-Ms"

// MaxRetryElapsed bounds HeaderRetryElapsed: a producer request may be retried up to this
// long after its first send (the SDK's delivery timeout is below it).
const MaxRetryElapsed = 5 * time.Minute

// ErrIdempotency says a Strata-Idempotency header is not the one value the contract
// knows (IdempotencyProducer), or is repeated.
var ErrIdempotency = errors.New("wire: bad Strata-Idempotency header")

// ParseIdempotency reads the values of a request's Strata-Idempotency header: producer
// is true for exactly one value IdempotencyProducer, false without the header; any
// other value, or more than one, is ErrIdempotency.
func ParseIdempotency(values []string) (producer bool, err error) {
	switch {
	case len(values) == 0:
		return false, nil
	case len(values) > 1:
		return false, fmt.Errorf("%w: %d values, want one", ErrIdempotency, len(values))
	case values[0] != IdempotencyProducer:
		return false, fmt.Errorf("%w: %q, want %q", ErrIdempotency, values[0], IdempotencyProducer)
	}
	return true, nil
}

// ProducerRequestKey is the Idempotency-Key of a producer session's request seq
// (HeaderIdempotency): the producer id, a dot, the sequence number in decimal. With a
// 26-character ULID for id it is at most 47 characters, within MaxIdempotencyKey.
func ProducerRequestKey(id string, seq uint64) string {
	return id + "." + strconv.FormatUint(seq, 10)
}

// ErrRetryElapsed says a Strata-Retry-Elapsed-Ms header is not one decimal number of
// milliseconds in [0, MaxRetryElapsed].
var ErrRetryElapsed = errors.New("wire: bad Strata-Retry-Elapsed-Ms header")

// ParseRetryElapsed reads the values of a request's Strata-Retry-Elapsed-Ms header:
// present is false when there is none. More than one value, signs, spaces, leading
// zeros or a number beyond MaxRetryElapsed are ErrRetryElapsed.
func ParseRetryElapsed(values []string) (elapsed time.Duration, present bool, err error) {
	ms, present, err := parseDecimal(values, MaxRetryElapsed.Milliseconds(), ErrRetryElapsed)
	return time.Duration(ms) * time.Millisecond, present, err
}

// FormatRetryElapsed is the Strata-Retry-Elapsed-Ms value for a retry sent d after
// its request's first attempt: whole milliseconds rounded up (the server's search for
// earlier attempts then starts no later than the first send), within [0,
// MaxRetryElapsed].
func FormatRetryElapsed(d time.Duration) string {
	d = min(max(d, 0), MaxRetryElapsed)
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(ms), 10)
}

// MaxAttempt bounds the Strata-Attempt header's value.
const MaxAttempt = 1 << 16

// MaxFencedAttempt is the last attempt of a producer request a server fences: a later
// one is refused (429, nothing appended), since every fencing attempt adds to the topic's
// item. A producer retries a request at most this many times.
const MaxFencedAttempt = 16

// ErrAttempt says a Strata-Attempt header is not one decimal number in [0, MaxAttempt].
var ErrAttempt = errors.New("wire: bad Strata-Attempt header")

// ParseAttempt reads the values of a request's Strata-Attempt header: present is false
// when there is none. More than one value, signs, spaces, leading zeros or a number
// beyond MaxAttempt are ErrAttempt.
func ParseAttempt(values []string) (attempt int, present bool, err error) {
	n, present, err := parseDecimal(values, MaxAttempt, ErrAttempt)
	return int(n), present, err
}

// parseDecimal reads a header that is absent or one decimal number in [0, most]: more
// than one value, signs, spaces, leading zeros or a larger number are bad (wrapped).
func parseDecimal(values []string, most int64, bad error) (n int64, present bool, err error) {
	switch len(values) {
	case 0:
		return 0, false, nil
	case 1:
	default:
		return 0, false, fmt.Errorf("%w: %d values, want one", bad, len(values))
	}
	v := values[0]
	if v == "" || len(v) > len(strconv.FormatInt(most, 10)) || (len(v) > 1 && v[0] == '0') {
		return 0, false, fmt.Errorf("%w: %q", bad, v)
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, false, fmt.Errorf("%w: %q", bad, v)
		}
	}
	n, err = strconv.ParseInt(v, 10, 64)
	if err != nil || n > most {
		return 0, false, fmt.Errorf("%w: %q", bad, v)
	}
	return n, true, nil
}

// HeaderMaxBody is, on a server's answers, the largest append request body it accepts,
// in bytes as the client sends them: the api function behind API Gateway or a function
// URL sends it on every answer (Lambda's 6 MB payload holds 4 MiB of body once
// base64-encoded), as well as in a 413's "max_body_bytes". The SDK's producer caps its
// requests by it. A server without the header takes the contract's limits.
const HeaderMaxBody = "Strata-Max-Body-Bytes"

// minMaxBody is the smallest limit a client takes from HeaderMaxBody: below it no
// request of one record of MaxRecordBytes would fit, so a smaller value is a bad answer.
const minMaxBody = 64 << 10

// ParseMaxBody reads a HeaderMaxBody value: a decimal number of bytes in
// [64 KiB, 1 GiB], else 0 (absent or not understood: no limit learnt).
func ParseMaxBody(v string) int { return parseCount(v, minMaxBody, 1<<30) }

// parseCount reads an answer's header value that is one decimal number in [lo, hi]
// (lo at least 1) without sign, space or leading zero, else 0.
func parseCount(v string, lo, hi int) int {
	if v == "" || len(v) > 10 || v[0] == '0' {
		return 0
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0
	}
	return n
}

// HeaderPartitions is, on the answers to appends, the topic's partition count as the
// server knows it (its topic cache, up to 5 s old). The SDK's producer follows a raised
// count from it instead of describing the topic, so a producer that appends describes
// nothing; one that has sent nothing for a while describes as before.
const HeaderPartitions = "Strata-Partitions"

// ParsePartitions reads a HeaderPartitions value: a decimal count in [1,
// MaxPartitions] without sign or leading zero, else 0 (absent or not understood).
func ParsePartitions(v string) int32 { return int32(parseCount(v, 1, MaxPartitions)) }

// HeaderTopicBatch is, on the answers to appends and to GET /v1/topics/{topic} of a
// topic of the topic commit layout, the topic's batch mark: a number of a batch the
// topic had committed before the answer was sent, with the topic's incarnation
// (FormatBatchMark). Batches are numbered from 1 in commit order, one number per topic
// incarnation, so every batch committed after the answer is numbered above it. The
// value may lag the topic (a cached one): any number the topic had reached is a mark.
const HeaderTopicBatch = "Strata-Topic-Batch"

// HeaderBatchFloor is, on every attempt of a producer request (HeaderIdempotency), the
// highest HeaderTopicBatch mark of the topic the client had received when it sent the
// request's first attempt, the same on every retry (or "0" when it had received none).
// Every batch that can hold an attempt of the request committed after that first send,
// hence is numbered above the floor: a retry searches the log only down to the floor,
// decided by the batch numbers the store keeps, never by a clock. A retry needs it.
const HeaderBatchFloor = "Strata-Batch-Floor"

// MaxBatchNumber bounds a batch mark's number.
const MaxBatchNumber = 1<<53 - 1

// BatchMark is a topic's batch number with the incarnation it numbers (the value of
// HeaderTopicBatch and HeaderBatchFloor). The zero mark (number 0, no incarnation) is a
// floor below every batch of every incarnation.
type BatchMark struct {
	Batch       int64
	Incarnation string
}

// ErrBatchMark says a Strata-Topic-Batch or Strata-Batch-Floor value is not a batch
// mark: "<number>@<incarnation>" (the number a decimal in [0, MaxBatchNumber] without
// leading zeros, the incarnation 1 to 64 lowercase letters and digits) or "0".
var ErrBatchMark = errors.New("wire: bad batch mark")

// String is the mark's header value: "<number>@<incarnation>", or "0" for the zero mark.
func (m BatchMark) String() string {
	if m.Incarnation == "" {
		return strconv.FormatInt(m.Batch, 10)
	}
	return strconv.FormatInt(m.Batch, 10) + "@" + m.Incarnation
}

// ParseBatchMark reads one batch mark (BatchMark.String's form); a number without an
// incarnation is only taken as "0", the zero mark.
func ParseBatchMark(v string) (BatchMark, error) {
	num, inc, hasInc := strings.Cut(v, "@")
	n, _, err := parseDecimal([]string{num}, MaxBatchNumber, ErrBatchMark)
	switch {
	case err != nil:
		return BatchMark{}, fmt.Errorf("%w: %q", ErrBatchMark, v)
	case !hasInc && n != 0:
		return BatchMark{}, fmt.Errorf("%w: %q names no incarnation", ErrBatchMark, v)
	case hasInc && !validIncarnation(inc):
		return BatchMark{}, fmt.Errorf("%w: %q: the incarnation must be 1 to 64 lowercase letters and digits", ErrBatchMark, v)
	}
	return BatchMark{Batch: n, Incarnation: inc}, nil
}

// ParseBatchFloor reads the values of a request's Strata-Batch-Floor header: present is
// false when there is none; more than one value, or one that is not a batch mark, is
// ErrBatchMark.
func ParseBatchFloor(values []string) (floor BatchMark, present bool, err error) {
	switch len(values) {
	case 0:
		return BatchMark{}, false, nil
	case 1:
	default:
		return BatchMark{}, false, fmt.Errorf("%w: %d values, want one", ErrBatchMark, len(values))
	}
	m, err := ParseBatchMark(values[0])
	return m, err == nil, err
}

// validIncarnation reports whether s can be a topic incarnation in a batch mark.
func validIncarnation(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
