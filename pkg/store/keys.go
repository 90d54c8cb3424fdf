package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// RecordKey is the key of a consumer group's one-off action on one record of a topic
// incarnation (the dead-letter and parking appends' Idempotency-Keys): prefix, then 32
// hex digits of SHA-256 over the group and the topic's TopicID, then
// ":partition:offset". Every key a consumer derives from a record comes from here, so
// that each carries the incarnation: a record of a topic created again under a name
// never shares a key with the deleted incarnation's record at its offset. The legacy
// incarnation's ID is the name, so its keys are those made before incarnations. The
// key is at most len(prefix) + 63 characters whatever the names' length.
func RecordKey(prefix, group, topicID string, partition int32, offset int64) string {
	h := sha256.New()
	h.Write([]byte(group))
	h.Write([]byte{0}) // names never hold NUL: group and topic stay apart
	h.Write([]byte(topicID))
	return prefix + hex.EncodeToString(h.Sum(nil)[:16]) + ":" + strconv.Itoa(int(partition)) + ":" + strconv.FormatInt(offset, 10)
}

// TopicRef names the topic incarnation a lease, commit, park write or fenced effect is
// of: the TopicID (name#incarnation) of the incarnation the caller's lease was taken
// on, or a plain name, which means the live incarnation. A caller that knows its
// lease's incarnation passes the ID, and group.ByIncarnation fences the call unless
// that incarnation is still the live one: a run of a deleted incarnation never acts on
// a topic created again under the name. ParseTopicRef is its inverse.
func TopicRef(name, incarnation string) string { return TopicID(name, incarnation) }

// ParseTopicRef splits a TopicRef into the name and, when the ref names one, the
// incarnation (pinned is false for a plain name).
func ParseTopicRef(ref string) (name, incarnation string, pinned bool) {
	name, incarnation = SplitTopicID(ref)
	return name, incarnation, len(ref) > len(name)
}
