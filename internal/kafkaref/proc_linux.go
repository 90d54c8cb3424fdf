package kafkaref

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the process that started it dies (a test
// binary that panics leaves no broker behind).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
