package local

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new file with no name in dir (O_TMPFILE), for linkUnnamed to
// name. An error means the file system or kernel cannot, and the store writes named
// temporary files instead.
func openUnnamed(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open unnamed", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)"), nil
}

// unnamedUnsupported says openUnnamed's error means the file system or kernel has no
// unnamed files (rather than, say, too many open files now).
func unnamedUnsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL)
}

// linkUnnamed gives f, opened by openUnnamed, the name path; it fails with
// fs.ErrExist (EEXIST) when path exists, so a Put never replaces an object.
func linkUnnamed(f *os.File, path string) error {
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil && err != unix.EEXIST {
		// Without /proc, the descriptor itself (a kernel from 6.10 allows it to the
		// file's opener; earlier ones need CAP_DAC_READ_SEARCH).
		err = unix.Linkat(int(f.Fd()), "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err}
	}
	return nil
}

// syncData makes f's data, and what reading it needs (its size), durable.
func syncData(f *os.File) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
