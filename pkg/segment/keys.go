package segment

import (
	"strings"

	"github.com/oklog/ulid/v2"
)

// Segment object keys. Each object is named by the ULID of its writing (its time is the
// ULID's) under the prefix of the topic incarnation it belongs to:
//
//	v1/<topic>/<incarnation>/<ULID>   a topic with an incarnation
//	v1/<topic>/<ULID>                 the legacy layout (topics created before incarnations)
//
// An incarnation never contains '/', so the two layouts never share a key, and a key
// of one incarnation's prefix is never exactly the prefix plus a ULID of another's.

// KeyPrefix is the first element of every segment object key: the layout's version.
// Everything under it (and the deployment's object prefix) is segment data.
const KeyPrefix = "v1/"

// ObjectPrefix is the key prefix of the segment objects of a topic's incarnation (the
// empty incarnation is the legacy layout).
func ObjectPrefix(topic, incarnation string) string {
	if incarnation == "" {
		return KeyPrefix + topic + "/"
	}
	return KeyPrefix + topic + "/" + incarnation + "/"
}

// ObjectKey is the key of the segment object id of a topic's incarnation.
func ObjectKey(topic, incarnation string, id ulid.ULID) string {
	return ObjectPrefix(topic, incarnation) + id.String()
}

// ObjectID returns the ULID of key when key is a segment object of prefix (an
// ObjectPrefix): exactly the prefix followed by a ULID. Anything else — another
// incarnation's object, a key of a longer name, a stray file — is not one.
func ObjectID(prefix, key string) (ulid.ULID, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return ulid.ULID{}, false
	}
	id, err := ulid.ParseStrict(rest)
	return id, err == nil
}
