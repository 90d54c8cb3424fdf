package wire

import "regexp"

// NamePattern is the pattern every topic and group name must match (docs/API.md,
// "Names"; docs/openapi.yaml's Name schema): 1–200 characters, letters, digits, '.',
// '_' and '-', starting with a letter or digit. Names never contain '/' or '#', which
// the object key layout and the metadata tables' composite keys rely on.
const NamePattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`

// MaxNameLength is the longest topic or group name NamePattern admits.
const MaxNameLength = 200

var nameRE = regexp.MustCompile(NamePattern)

// ValidName reports whether s is a valid topic or group name (it matches NamePattern).
func ValidName(s string) bool { return nameRE.MatchString(s) }
