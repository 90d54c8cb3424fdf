package log

import (
	"errors"
	"fmt"

	"github.com/stratalog/strata/pkg/store"
)

// Errors callers branch on with errors.Is. A call that returns one of them changed
// nothing, except ErrUnavailable from Append, whose *AppendError says which partitions
// were appended.
var (
	// ErrTopicNotFound also matches store.ErrNotFound, so layers above branch on either.
	ErrTopicNotFound        = fmt.Errorf("log: topic not found (%w)", store.ErrNotFound)
	ErrTopicExists          = errors.New("log: topic exists")
	ErrInvalid              = errors.New("log: invalid request")
	ErrTooLarge             = errors.New("log: payload too large")
	ErrOffsetOutOfRange     = errors.New("log: offset out of range")
	ErrIdempotencyKeyReused = errors.New("log: idempotency key reused with a different body")
	ErrUnavailable          = errors.New("log: unavailable")
	ErrCorrupt              = errors.New("log: corrupt data")
	// ErrSuperseded: a later attempt of the producer request fenced this one (fenced
	// idempotency); that attempt decides the request's outcome, so this one's records,
	// if committed, are skipped and nothing of it is acknowledged.
	ErrSuperseded = errors.New("log: superseded by a later attempt of the request")
	// ErrRetryLimit: a producer request's retry could not fence its earlier attempts —
	// its principal holds fences of store.MaxOwnerFences requests on the topic, or the
	// request had store.MaxFenceAttempts attempts — so it appended nothing; an earlier
	// attempt may have been appended.
	ErrRetryLimit = errors.New("log: producer retries limited")
)

// invalidf returns an ErrInvalid with a message for the caller.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// tooLargef returns an ErrTooLarge with a message for the caller.
func tooLargef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrTooLarge, fmt.Sprintf(format, args...))
}

// OffsetOutOfRangeError reports the readable bounds of a partition.
type OffsetOutOfRangeError struct {
	Offset         int64
	LogStartOffset int64
	HighWatermark  int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("log: offset %d outside [%d, %d]", e.Offset, e.LogStartOffset, e.HighWatermark)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OffsetOutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// AppendError is returned when some partitions of an append failed: Results (Append) or
// Blocks (AppendBlocks) holds, in request order, the offsets of what was appended and
// Err for the others.
type AppendError struct {
	Results []Result
	Blocks  []BlockResult
	Err     error
}

func (e *AppendError) Error() string { return fmt.Sprintf("log: append partly failed: %v", e.Err) }

// Unwrap exposes the cause (ErrUnavailable-wrapped).
func (e *AppendError) Unwrap() error { return e.Err }

// ErrRetryUndecided refuses a producer request's retry, with nothing of it appended,
// when the store's state cannot tell whether an earlier attempt of the request was
// appended: records retention removed, index entries written before they kept their
// batch number, or more entries to search than a retry reads. The request may or may
// not be in the log; it is never appended twice.
var ErrRetryUndecided = errors.New("log: cannot tell whether an earlier attempt of the producer request was appended; this attempt appended nothing")
