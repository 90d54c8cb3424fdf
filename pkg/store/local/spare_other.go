//go:build !linux

package local

import (
	"errors"
	"os"
)

var errNoUnnamed = errors.New("local: unnamed files need Linux's O_TMPFILE")

func openUnnamed(string) (*os.File, error) { return nil, errNoUnnamed }

func unnamedUnsupported(error) bool { return true }

func linkUnnamed(*os.File, string) error { return errNoUnnamed }

func syncData(f *os.File) error { return f.Sync() }
