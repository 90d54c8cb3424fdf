package checkpoint

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// BenchmarkCompletions64Workers: 64 goroutines each take the next offset from
// a shared dispatcher (which Starts it), do nothing, and complete it. A random
// quarter of the handlers yield first, so completions arrive out of order.
func BenchmarkCompletions64Workers(b *testing.B) {
	const workers = 64
	tr := New(0)
	var (
		mu   sync.Mutex
		next int64
	)
	// dispatch hands out offsets in order, as a poll loop does.
	dispatch := func() (int64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= int64(b.N) {
			return 0, false
		}
		o := next
		if err := tr.Start(o); err != nil {
			b.Error(err)
			return 0, false
		}
		next++
		return o, true
	}
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for {
				o, ok := dispatch()
				if !ok {
					return
				}
				if rng.IntN(4) == 0 {
					runtime.Gosched()
				}
				if err := tr.Done(o); err != nil {
					b.Error(err)
					return
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	b.StopTimer()
	if got := tr.Next(); got != int64(b.N) {
		b.Fatalf("Next() = %d after %d completions", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "completions/s")
	b.ReportMetric(float64(tr.copied)/float64(b.N), "copied-bits/op")
}

// benchRandomWindow completes offsets in random order on one goroutine while
// keeping started − committed at window: each step completes a random
// in-flight offset, then starts offsets until the window is full again.
func benchRandomWindow(b *testing.B, window int64) {
	rng := rand.New(rand.NewPCG(3, 4))
	tr := New(0)
	inFlight := make([]int64, 0, window)
	next := int64(0)
	fill := func() {
		for next-tr.Next() < window {
			if err := tr.Start(next); err != nil {
				b.Fatal(err)
			}
			inFlight = append(inFlight, next)
			next++
		}
	}
	fill()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		i := rng.IntN(len(inFlight))
		if err := tr.Done(inFlight[i]); err != nil {
			b.Fatal(err)
		}
		inFlight[i] = inFlight[len(inFlight)-1]
		inFlight = inFlight[:len(inFlight)-1]
		fill()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "completions/s")
	b.ReportMetric(float64(tr.capBits()), "ring-bits")
}

// BenchmarkCompletionsRandomWindow64 is random-order completion within a
// window of 64 on one goroutine.
func BenchmarkCompletionsRandomWindow64(b *testing.B) { benchRandomWindow(b, 64) }

// BenchmarkCompletionsRandomWindow4096 shows the per-completion cost does not
// depend on the window size.
func BenchmarkCompletionsRandomWindow4096(b *testing.B) { benchRandomWindow(b, 4096) }
