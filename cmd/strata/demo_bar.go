package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// demoBar is the demo's progress bar: drawn only when it has a writer (a terminal's
// stderr), with a rate averaged since the bar started rather than over the first
// instant, which read as absurd figures.
type demoBar struct {
	bar   *progressbar.ProgressBar
	start time.Time
}

// minRateWindow is how long the bar runs before it shows a rate.
const minRateWindow = 500 * time.Millisecond

func newDemoBar(w io.Writer, total int) *demoBar {
	if w == nil {
		return &demoBar{}
	}
	return &demoBar{
		start: time.Now(),
		bar: progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("producing"),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) })),
	}
}

func (b *demoBar) set(n int64) {
	if b.bar == nil {
		return
	}
	if el := time.Since(b.start); el >= minRateWindow {
		b.bar.Describe(fmt.Sprintf("producing (%.0f events/s)", float64(n)/el.Seconds()))
	}
	_ = b.bar.Set64(n)
}

func (b *demoBar) finish(n int64) {
	if b.bar == nil {
		return
	}
	b.set(n)
	_ = b.bar.Finish()
}

// terminalStderr returns stderr when it is a terminal (the only place a bar of \r
// frames belongs), nil otherwise.
func terminalStderr(stderr io.Writer) io.Writer {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}
