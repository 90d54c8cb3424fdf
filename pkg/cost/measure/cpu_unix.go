//go:build unix

package measure

import (
	"syscall"
	"time"
)

// processCPU is this process's user plus system CPU time so far, or 0 when the system
// does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
