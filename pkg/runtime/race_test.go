//go:build race

package runtime_test

// raceEnabled: the race detector allows 8,128 live goroutines, so load tests scale down.
const raceEnabled = true
