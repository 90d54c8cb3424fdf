package kafkaref_test

import (
	"encoding/base64"
	"testing"

	"github.com/stratalog/strata/internal/kafkaref"
)

// TestClusterID: a cluster id is a 16-byte UUID in Kafka's URL-safe base64 (22
// characters), fresh each time, never starting with '-' (kafka-storage format took one
// such for a flag and failed). The broker itself is started by internal/kafkacompat's
// tests, which share one.
func TestClusterID(t *testing.T) {
	a, b := kafkaref.ClusterID(), kafkaref.ClusterID()
	if a == b {
		t.Fatalf("two cluster ids are both %s", a)
	}
	raw, err := base64.RawURLEncoding.DecodeString(a)
	if err != nil || len(a) != 22 || len(raw) != 16 {
		t.Fatalf("cluster id %q: %d bytes, %v", a, len(raw), err)
	}
	for range 2000 {
		if id := kafkaref.ClusterID(); id[0] == '-' {
			t.Fatalf("cluster id %q starts with '-'", id)
		}
	}
}
