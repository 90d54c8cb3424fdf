//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive lock on the file at path (creating it), held until the
// file is closed: a second process opening the store gets an error, not a share of it.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("in use by another process (%s is locked)", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
