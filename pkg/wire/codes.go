package wire

// Error codes of the contract (docs/API.md, "Errors"): the "code" of every error object
// the server answers with, and what the SDK maps to its sentinel errors.
const (
	CodeInvalidRequest   = "invalid_request"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeTopicExists      = "topic_exists"
	CodeLeaseHeld        = "lease_held"
	CodeFenced           = "fenced"
	// CodeSuperseded (409) answers an attempt of a producer request (Strata-Idempotency:
	// producer) that another delivery of the request fenced: that delivery decides the
	// request's outcome and the client retries with its next attempt.
	CodeSuperseded = "superseded"
	// CodeRetryUndecided (409) refuses a producer request's retry, with nothing of it
	// appended, when the server cannot tell from what it stores whether an earlier
	// attempt was appended (retention removed it, or the search would pass its bound):
	// the request may or may not be in the log, and is never appended twice. Retrying
	// again is refused alike.
	CodeRetryUndecided       = "retry_undecided"
	CodeStaleCommit          = "stale_commit"
	CodeGroupActive          = "group_active"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeOffsetOutOfRange     = "offset_out_of_range"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeBeyondHighWatermark  = "beyond_high_watermark"
	CodeRateLimited          = "rate_limited"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
)

// CodeKeyDeleted (404) answers the key lookup of a compacted topic's key whose latest
// record is a tombstone still within its retention; the error carries the tombstone's
// partition and offset.
const CodeKeyDeleted = "key_deleted"

// CodeKafkaGroup (409) refuses a Strata member's lease or first heartbeat in a group
// that has live Kafka members (JoinGroup through the Kafka gateway); nothing changed.
const CodeKafkaGroup = "kafka_group"
