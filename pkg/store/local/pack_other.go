//go:build !unix

package local

import "os"

// lockDir opens the lock file without locking it: this platform has no flock, so one
// process per directory is the operator's to keep.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
