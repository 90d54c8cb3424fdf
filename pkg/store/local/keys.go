package local

import "encoding/binary"

// Keys of the bbolt buckets are tuples encoded so that byte order is tuple order and no
// encoded key is a prefix of another with a different first component, which is what
// cursor seeks and prefix scans rely on.

// appendString appends s order-preservingly and self-delimited: NUL becomes 00 FF and
// the string ends with 00 01, so "a" < "a\x00" < "ab" holds for the encodings too.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0, 0xFF)
			continue
		}
		b = append(b, s[i])
	}
	return append(b, 0, 1)
}

// appendInt32 appends v big-endian with the sign bit flipped, so negative values sort
// before positive ones.
func appendInt32(b []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(v)^(1<<31))
}

// appendInt64 is appendInt32 for 64-bit values.
func appendInt64(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

// prefixEnd returns the smallest key greater than every key starting with p, or nil
// when there is none (p is all 0xFF).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func partitionKey(topic string, partition int32) []byte {
	return appendInt32(appendString(nil, topic), partition)
}

func indexKey(topic string, partition int32, base int64) []byte {
	return appendInt64(partitionKey(topic, partition), base)
}

func groupTopicPartitionKey(group, topic string, partition int32) []byte {
	return appendInt32(appendString(appendString(nil, group), topic), partition)
}

func memberKey(group, id string) []byte {
	return appendString(appendString(nil, group), id)
}

func idempotencyKey(key string, partition int32) []byte {
	return appendInt32(appendString(nil, key), partition)
}
