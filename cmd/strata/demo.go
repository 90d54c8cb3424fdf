package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// newDemoCmd is the README's main command: the whole story of Strata in one run on the
// embedded backend.
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the order-events demo on a temporary embedded Strata",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Piped into head, stdout closes early: with SIGPIPE notified, the write fails
			// with EPIPE instead of killing the process, the demo stops and its deferred
			// cleanup removes the temporary data.
			pipe := make(chan os.Signal, 1)
			signal.Notify(pipe, syscall.SIGPIPE)
			defer signal.Stop(pipe)
			ctx, cancel := context.WithCancelCause(cmd.Context())
			defer cancel(nil)
			out := &stopOnWriteError{w: cmd.OutOrStdout(), stop: cancel}
			err := runDemo(ctx, out, terminalStderr(cmd.ErrOrStderr()))
			switch {
			case out.failed() && errors.Is(out.failure(), syscall.EPIPE):
				return nil // the reader has what it wanted
			case cmd.Context().Err() != nil:
				return errors.New("demo interrupted; its temporary data is removed")
			}
			return err
		},
	}
}

// stopOnWriteError passes writes to w until one fails, then cancels the demo with the
// failure (a closed pipe: nobody reads any more).
type stopOnWriteError struct {
	w    io.Writer
	stop context.CancelCauseFunc
	mu   sync.Mutex
	err  error
}

func (s *stopOnWriteError) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
		s.stop(err)
	}
	return n, err
}

func (s *stopOnWriteError) failed() bool { return s.failure() != nil }

func (s *stopOnWriteError) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
