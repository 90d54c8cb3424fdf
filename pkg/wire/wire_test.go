package wire

import (
	"testing"

	"pgregory.net/rapid"
)

// TestMurmur2Kafka pins murmur2 to the values of Kafka's own test (UtilsTest.testMurmur2):
// the partitioner is part of the contract, and a Kafka producer must place keys alike.
func TestMurmur2Kafka(t *testing.T) {
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := int32(murmur2([]byte(key))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestPartitionForKeyInRange: every key maps into [0, n), the same way every time.
func TestPartitionForKeyInRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.SliceOf(rapid.Byte()).Draw(t, "key")
		n := rapid.Int32Range(1, MaxPartitions).Draw(t, "n")
		p := PartitionForKey(key, n)
		if p < 0 || p >= n || PartitionForKey(key, n) != p {
			t.Fatalf("PartitionForKey(%x, %d) = %d", key, n, p)
		}
	})
}
