package wire

import (
	"errors"
	"fmt"
	"strconv"
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
func ParseMaxBody(v string) int {
	if v == "" || len(v) > 10 || v[0] == '0' {
		return 0
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minMaxBody || n > 1<<30 {
		return 0
	}
	return n
}
