package local

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// spares keeps files made ahead of the Puts that will fill and name them, so that making
// a file is off a Put's path: on ext4 without a journal, allocating an inode scans for
// one not recently freed, and took most of a Put's CPU and a third of its time on a file
// system shared with churning neighbours. A spare has no name until its Put links it
// (O_TMPFILE), so a crash or an exit leaves nothing behind. Where unnamed files are not
// supported (another OS, a file system without them, linking refused), Put writes a
// named temporary file instead.
type spares struct {
	dir     string
	files   chan *os.File
	filling atomic.Bool
	off     atomic.Bool
}

// spareFiles bounds the spares kept: more than the Puts a store sees at once.
const spareFiles = 8

func newSpares(dir string) *spares {
	return &spares{dir: dir, files: make(chan *os.File, spareFiles)}
}

// take returns a spare, or nil when unnamed files are off or cannot be made now; each
// take starts the spares' refill.
func (p *spares) take() *os.File {
	if p.off.Load() {
		return nil
	}
	var f *os.File
	select {
	case f = <-p.files:
	default:
		var err error
		if f, err = openUnnamed(p.dir); err != nil {
			if unnamedUnsupported(err) {
				p.off.Store(true)
			}
			return nil
		}
	}
	p.fill()
	return f
}

// fill makes spares in the background until there are spareFiles, one filler at a time.
func (p *spares) fill() {
	if !p.filling.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer p.filling.Store(false)
		for len(p.files) < cap(p.files) {
			f, err := openUnnamed(p.dir)
			if err != nil {
				return
			}
			select {
			case p.files <- f:
			default:
				_ = f.Close()
				return
			}
		}
	}()
}

// errLinkRefused says a spare could not be named for a reason other than the name
// existing: the Put writes a named temporary file instead, and the store stops using
// spares.
var errLinkRefused = errors.New("local: linking an unnamed file was refused")

// writeSpare writes data to f, a spare, makes it durable and names it path (not yet
// durably: the caller syncs path's directory). f is closed whatever happens. A name
// that exists is fs.ErrExist.
func writeSpare(f *os.File, path string, data []byte) error {
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := syncData(f); err != nil {
		return err
	}
	if err := linkUnnamed(f, path); err != nil {
		if os.IsExist(err) {
			return err
		}
		return fmt.Errorf("%w: %w", errLinkRefused, err)
	}
	return nil
}
