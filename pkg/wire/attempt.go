package wire

import (
	"errors"
	"fmt"
	"strconv"
)

// HeaderAttempt names which attempt of an idempotent append a request is: "0" on its
// first send, 1, 2… on the retries of the very same body under the same
// Idempotency-Key. On attempt 0 the server skips reading the key's claim (no earlier
// attempt can hold one); the claim it writes after its commits still makes a key reused
// by mistake exactly-once. A request without the header is read as a possible retry.
const HeaderAttempt = "Strata-Attempt"

// MaxAttempt bounds the Strata-Attempt header's value.
const MaxAttempt = 1 << 16

// ErrAttempt says a Strata-Attempt header is not one decimal number in [0, MaxAttempt].
var ErrAttempt = errors.New("wire: bad Strata-Attempt header")

// ParseAttempt reads the values of a request's Strata-Attempt header: present is false
// when there is none. More than one value, signs, spaces, leading zeros or a number
// beyond MaxAttempt are ErrAttempt.
func ParseAttempt(values []string) (attempt int, present bool, err error) {
	switch len(values) {
	case 0:
		return 0, false, nil
	case 1:
	default:
		return 0, false, fmt.Errorf("%w: %d values, want one", ErrAttempt, len(values))
	}
	v := values[0]
	if v == "" || len(v) > len(strconv.Itoa(MaxAttempt)) || (len(v) > 1 && v[0] == '0') {
		return 0, false, fmt.Errorf("%w: %q", ErrAttempt, v)
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, false, fmt.Errorf("%w: %q", ErrAttempt, v)
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > MaxAttempt {
		return 0, false, fmt.Errorf("%w: %q", ErrAttempt, v)
	}
	return n, true, nil
}
