// Package wire is the single source of Strata's HTTP contract (docs/API.md,
// docs/openapi.yaml): topic and group names and their pattern, the limits, the error
// codes, the key partitioner, the JSON shapes of requests and answers and the framing of
// the binary ones. The server answers with these shapes, the Go SDK (pkg/client) sends
// and reads them and the CLI prints them, so none of them can drift; the server's
// request decoders keep presence-checking twins whose members a test holds equal to
// these. It imports only the standard library and pkg/segment (the block format the
// binary bodies carry and the object key layout, itself a leaf), so the SDK stands
// alone without any server package.
package wire

import "time"

// Limits of the API contract (docs/API.md).
const (
	// MaxRecordBytes bounds one record: key + value + header names and values.
	MaxRecordBytes = 1 << 20
	// MaxRecordsPerBatch bounds the records of one append request.
	MaxRecordsPerBatch = 10000
	// MaxBatchBytes bounds the decoded record bytes of one append request.
	MaxBatchBytes = 6 << 20
	// MaxPollRecords bounds max_records of one poll.
	MaxPollRecords = 10000
	// MaxPollWait bounds wait_ms of one poll.
	MaxPollWait = 20 * time.Second
	// MaxTimestampMs is the largest record timestamp (9999-12-31T23:59:59.999Z); the
	// smallest is 0. Beyond them times have no RFC 3339 form, which stores may need.
	MaxTimestampMs = 253402300799999
	// MaxIdempotencyKey bounds the length of an append's Idempotency-Key (at least 1).
	MaxIdempotencyKey = 128
	// MaxPartitions bounds a topic's partition count.
	MaxPartitions = 1024
	// Lease TTL bounds (ttl_ms); a request without one gets DefaultLeaseTTL.
	DefaultLeaseTTL = 30 * time.Second
	MinLeaseTTL     = 100 * time.Millisecond
	MaxLeaseTTL     = 5 * time.Minute
)

// PartitionForKey maps a key to a partition as Kafka's default partitioner does:
// murmur2(key) with the sign bit cleared, modulo the partition count. The mapping is
// stable across releases (it is part of the contract: changing it moves keys), and a
// Kafka producer with the same partition count places keys identically.
func PartitionForKey(key []byte, partitions int32) int32 {
	return int32((murmur2(key) & 0x7fffffff) % uint32(partitions))
}

// murmur2 is the 32-bit MurmurHash2 variant with Kafka's seed.
func murmur2(data []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for len(data) >= 4 {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
