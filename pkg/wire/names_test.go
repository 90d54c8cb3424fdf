package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestValidName: the topic name rule as docs/API.md states it (Kafka's), at its edges.
func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"A", true},
		{"9.a_b-c", true},
		{"_connect-configs", true},
		{"__consumer_offsets", true},
		{".orders", true},
		{"-orders", true},
		{"...", true},
		{strings.Repeat("a", MaxNameLength), true},
		{strings.Repeat("a", MaxNameLength+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a#1", false},
		{"a b", false},
		{"ä", false},
		{"orders\n", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
	if MaxNameLength != 249 {
		t.Errorf("MaxNameLength = %d, want Kafka's 249", MaxNameLength)
	}
}

// TestValidGroup: a group id is any UTF-8 string of 1 to MaxGroupLength characters
// (code points, as JSON Schema's maxLength counts them) without NUL, as Kafka's group
// ids are (less the NUL Strata's keys keep for a separator).
func TestValidGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a#b/c d", true},
		{"connect-cluster", true},
		{"gruppe ä 消费者 🙂", true},
		{"%2F", true},
		{".", true},
		{"..", true},
		{" ", true},
		{strings.Repeat("ä", MaxGroupLength), true},
		{strings.Repeat("\U0001F600", MaxGroupLength), true},
		{strings.Repeat("a", MaxGroupLength), true},
		{strings.Repeat("a", MaxGroupLength+1), false},
		{strings.Repeat("ä", MaxGroupLength+1), false},
		{"Ṱ̺̺̕o͞ ̷i̲̬͇̪͙n̝̗͕v̟̜̘̦͟o̶̙̰̠kè͚̮̺̪̹̱̤ ̖t̝͕̳̣̻̪͞h̼͓̲̦̳̘̲e͇̣̰̦̬͎ ̢̼̻̱̘h͚͎͙̜̣̲ͅi̦̲̣̰̤v̻͍e̺̭̳̪̰-m̢iͅn̖̺̞̲̯̰d̵̼̟͙̩̼̘̳ ̞̥̱̳̭r̛̗̘e͙p͠r̼̞̻̭̗e̺̠̣͟s̘͇̳͍̝͉e͉̥̯̞̲͚̬͜ǹ̬͎͎̟̖͇̤t͍̬̤͓̼̭͘ͅi̪̱n͠g̴͉ ͏͉ͅc̬̟h͡a̫̻̯͘o̫̟̖͍̙̝͉s̗̦̲.̨̹͈̣", true},
		{"", false},
		{"a\x00b", false},
		{"\xff", false},
	} {
		if got := ValidGroup(tc.name); got != tc.ok {
			t.Errorf("ValidGroup(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// FuzzValidGroup: ValidGroup admits exactly the strings of its rule, and every valid
// topic name is a valid group.
func FuzzValidGroup(f *testing.F) {
	for _, s := range []string{"a#b/c d", "", "\x00", "ä", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) >= 1 && len([]rune(s)) <= MaxGroupLength && utf8.ValidString(s) && !strings.Contains(s, "\x00")
		if got := ValidGroup(s); got != want {
			t.Fatalf("ValidGroup(%q) = %v, want %v", s, got, want)
		}
		if ValidName(s) && !ValidGroup(s) {
			t.Fatalf("topic name %q is not a valid group", s)
		}
	})
}
