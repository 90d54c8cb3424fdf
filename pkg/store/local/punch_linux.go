package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole frees the file system blocks of [off, off+n) of f, keeping its size. A file
// system that cannot is left as it is: the record is dead either way, and its pack is
// removed once all its records are.
func punchHole(f *os.File, off, n int64) {
	_ = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
