// Package scalebench holds the scaling benchmarks of docs/BENCHMARKS-cost.md: poll
// latency at the tail of a long partition and append cost against the partition count.
// It has no code of its own, only benchmarks.
package scalebench
