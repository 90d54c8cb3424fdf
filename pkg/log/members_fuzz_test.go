package log

import "testing"

// FuzzDecodeMembers: a members table is read back from a segment object (outside
// bytes): decoding never panics, and a table it accepts encodes and decodes to itself.
func FuzzDecodeMembers(f *testing.F) {
	good, _ := encodeMembers([]tableMember{{Key: "t#i#k", BodyHash: "h", Total: 3, Partitions: 4,
		Blocks: []tableBlock{{Partition: 1, Offset: 0, Count: 2}, {Partition: 3, Offset: 7, Count: 1}}}})
	f.Add(good)
	f.Add([]byte(`{"v":1,"members":[]}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"members":[{"key":"k","hash":"h","total":1,"blocks":[{"p":-1,"off":0,"n":1}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := decodeMembers(b)
		if err != nil {
			return
		}
		again, err := encodeMembers(ms)
		if err != nil {
			t.Fatal(err)
		}
		ms2, err := decodeMembers(again)
		if err != nil || len(ms2) != len(ms) {
			t.Fatalf("re-decoding an accepted table: %v, %d members of %d", err, len(ms2), len(ms))
		}
	})
}
