package group

import (
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// Errors callers branch on with errors.Is. The ones the store decides are the store's
// own sentinels, so errors.Is(err, group.ErrFenced) and errors.Is(err, store.ErrFenced)
// are the same test. A call that returns one of them changed nothing.
var (
	// ErrFenced: the member is not the owner at that generation (obsolete or never was).
	ErrFenced = store.ErrFenced
	// ErrLeaseHeld: a live lease of another member blocks an acquire; the error is a
	// *store.LeaseHeldError carrying the owner and the expiry.
	ErrLeaseHeld = store.ErrLeaseHeld
	// ErrStaleCommit: the commit is below the committed offset.
	ErrStaleCommit = store.ErrStaleCommit
	// ErrGroupActive: a reset found a live lease of the group on the topic.
	ErrGroupActive = store.ErrGroupActive
	// ErrNotFound: unknown topic or group.
	ErrNotFound = store.ErrNotFound
	// ErrUnavailable: a retryable failure of the backend.
	ErrUnavailable = store.ErrUnavailable
	// ErrInvalid: a malformed request (bad name, negative offset, partition out of range,
	// TTL out of range); the message says which.
	ErrInvalid = errors.New("group: invalid request")
	// ErrBeyondHighWatermark: a commit above the partition's high watermark; the error
	// is a *BeyondHighWatermarkError.
	ErrBeyondHighWatermark = errors.New("group: offset beyond high watermark")
	// ErrOffsetOutOfRange: a reset to an offset outside [log start, high watermark]; the
	// error is an *OffsetOutOfRangeError carrying both bounds.
	ErrOffsetOutOfRange = errors.New("group: offset out of range")
	// ErrKafkaGroup: the group has live Kafka members (JoinGroup through the Kafka
	// gateway), so a Strata member may not start in it; nothing was changed.
	ErrKafkaGroup = errors.New("group: the group has live Kafka members")
)

// LeaseHeldError is the store's error for a lease held by another member, re-exported so
// callers need not import store to read the owner and expiry with errors.As.
type LeaseHeldError = store.LeaseHeldError

// BeyondHighWatermarkError reports a commit above the high watermark.
type BeyondHighWatermarkError struct {
	Topic         string
	Partition     int32
	Offset        int64
	HighWatermark int64
}

func (e *BeyondHighWatermarkError) Error() string {
	return fmt.Sprintf("group: offset %d beyond high watermark %d of %s/%d", e.Offset, e.HighWatermark, e.Topic, e.Partition)
}

// Is makes errors.Is(err, ErrBeyondHighWatermark) true.
func (e *BeyondHighWatermarkError) Is(target error) bool { return target == ErrBeyondHighWatermark }

// OffsetOutOfRangeError reports a reset offset outside a partition's readable bounds.
type OffsetOutOfRangeError struct {
	Topic          string
	Partition      int32
	Offset         int64
	LogStartOffset int64
	HighWatermark  int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("group: offset %d outside [%d, %d] of %s/%d", e.Offset, e.LogStartOffset, e.HighWatermark, e.Topic, e.Partition)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OffsetOutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// invalidf returns an ErrInvalid with a message for the caller.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// LeaseHolder extracts the owner and expiry from an ErrLeaseHeld error.
func LeaseHolder(err error) (owner string, expiresAt time.Time, ok bool) {
	var h *store.LeaseHeldError
	if !errors.As(err, &h) {
		return "", time.Time{}, false
	}
	return h.Owner, h.ExpiresAt, true
}
