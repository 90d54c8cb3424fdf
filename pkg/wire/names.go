package wire

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// NamePattern is the pattern every topic name must match (docs/API.md, "Names";
// docs/openapi.yaml's Name schema), Kafka's topic rule: 1–249 characters, letters,
// digits, '.', '_' and '-', any of them first ("_connect-configs"); "." and ".." are
// refused besides (ValidName). Names never contain '/' or '#', which the object key
// layout and the metadata tables' composite keys rely on.
const NamePattern = `^[A-Za-z0-9._-]{1,249}$`

// MaxNameLength is the longest topic name NamePattern admits (Kafka's 249).
const MaxNameLength = 249

// MaxGroupLength is the longest group id, in characters (Unicode code points, as
// JSON Schema's maxLength counts them; ValidGroup). At four bytes each and '#' escaped
// to three, an id is at most 996 bytes in any key.
const MaxGroupLength = 249

var nameRE = regexp.MustCompile(NamePattern)

// ValidName reports whether s is a valid topic name: it matches NamePattern and is
// neither "." nor "..", which would name a directory, not a topic, as a path segment.
func ValidName(s string) bool { return nameRE.MatchString(s) && s != "." && s != ".." }

// ValidGroup reports whether s is a valid consumer group id: any UTF-8 string of 1 to
// MaxGroupLength characters without NUL, as Kafka's group ids are ('#', '/', spaces and
// non-ASCII letters included). Every store escapes a group in the keys it builds from
// it, and routes carry it percent-encoded.
func ValidGroup(s string) bool {
	return s != "" && utf8.ValidString(s) && utf8.RuneCountInString(s) <= MaxGroupLength && !strings.Contains(s, "\x00")
}
