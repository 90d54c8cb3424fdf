//go:build !unix

package measure

import "time"

// processCPU is 0 where getrusage is missing: the group cases then count no CPU.
func processCPU() time.Duration { return 0 }
