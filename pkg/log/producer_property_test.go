package log_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// deliveryTimeout is the SDK's: the longest a request's attempts are spread over.
const deliveryTimeout = 2 * time.Minute

// hostMeta is one host's view of the stores: the crash its next attempt meets (mode, as
// crashingMeta's) and how long its next fence write takes (the host's clock moves on by
// that much while it is in flight).
type hostMeta struct {
	store.MetaStore
	clk        *clocktest.Clock
	mode       atomic.Int32
	fenceDelay atomic.Int64
}

func (h *hostMeta) crash() crashingMeta { return crashingMeta{h.MetaStore, int(h.mode.Load())} }

func (h *hostMeta) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	return h.crash().Sequence(ctx, c)
}

func (h *hostMeta) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	return h.crash().SequenceBatch(ctx, cs)
}

func (h *hostMeta) PutIndexEntry(ctx context.Context, e store.IndexEntry) error {
	return h.crash().PutIndexEntry(ctx, e)
}

func (h *hostMeta) FenceRequest(ctx context.Context, topic string, f store.RequestFence) (store.FencePoint, error) {
	fp, err := h.MetaStore.FenceRequest(ctx, topic, f)
	h.clk.Advance(time.Duration(h.fenceDelay.Load()))
	return fp, err
}

// propHost is a host: a Log with its own clock offset and commit window.
type propHost struct {
	l    *log.Log
	meta *hostMeta
	skew time.Duration
	win  time.Duration
}

// refusedNothingAppended reports whether err refuses an attempt saying that the attempt
// appended nothing: superseded, undecided, a 503 that says so, or a refused commit.
func refusedNothingAppended(err error) bool {
	return errors.Is(err, log.ErrSuperseded) || errors.Is(err, log.ErrRetryUndecided) ||
		errors.Is(err, log.ErrUnavailable) && strings.Contains(err.Error(), "nothing was appended")
}

// TestPropertyProducerRetriesExactlyOnce (rapid, both backends): producer requests sent
// through 2–4 hosts, each with its own clock offset (up to the delivery timeout either
// way) and commit window (1 s to 90 s), the client's clock off by its own amount (the
// elapsed time it reports is wrong by up to the delivery timeout), while other producers
// append through random hosts. Each attempt of a request goes to a random host after a
// random delay in transit and in reading its body (up to the delivery timeout in all),
// its fence write takes a random time, it may crash at any step (its commit refused, its
// commit applied and the answer lost, its entries not written) or be held mid-commit
// while the next attempt runs; any answer may be lost; the client's last attempt goes to a
// healthy host. Every request is then readable exactly once, at the offsets every
// successful attempt answered, or its last attempt is refused with an error that says
// nothing of it was appended and it is readable at most once; no record is ever
// readable twice.
func TestPropertyProducerRetriesExactlyOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		setup := newLog(t, s)
		backendtest.Materialise(t, s, setup)
		if s.Commits != nil {
			// The emulator serialises every request: fewer, small histories.
			checks := flag.Lookup("rapid.checks")
			old := checks.Value.String()
			if err := checks.Value.Set("12"); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = checks.Value.Set(old) }()
		}
		histories := 0
		rapid.Check(t, func(rt *rapid.T) {
			histories++
			topic := fmt.Sprintf("prop-retries-%d", histories)
			mustTopic(t, setup, topic, 2)
			base := clocktest.New(time.Now())
			hosts := make([]*propHost, rapid.IntRange(2, 4).Draw(rt, "hosts"))
			for i := range hosts {
				skew := time.Duration(rapid.Int64Range(-int64(deliveryTimeout), int64(deliveryTimeout)).Draw(rt, "skew"))
				win := time.Duration(rapid.IntRange(1, 90).Draw(rt, "window")) * time.Second
				hm := &hostMeta{MetaStore: s.Meta, clk: base}
				hosts[i] = &propHost{meta: hm, skew: skew, win: win,
					l: host(t, s, func() time.Time { return base.Now().Add(skew) }, win, hm)}
			}
			// The client's mark: the highest batch mark its answers carried.
			var mark wire.BatchMark
			saw := func(h *propHost) {
				if m, ok := h.l.BatchMark(topic); ok && m.Batch > mark.Batch {
					mark = m
				}
			}
			clientSkew := time.Duration(rapid.Int64Range(-int64(deliveryTimeout), int64(deliveryTimeout)).Draw(rt, "client skew"))
			background := 0
			others := func() {
				for range rapid.IntRange(0, 2).Draw(rt, "others") {
					h := hosts[rapid.IntRange(0, len(hosts)-1).Draw(rt, "other host")]
					background++
					key := fmt.Sprintf("bg.%d", background)
					if _, err := h.l.Append(ctx, topic, producerRecords(key, 1, 2), firstSend(key)); err == nil {
						saw(h)
					}
				}
			}
			type request struct {
				recs []log.Record
				ok   [][]log.Result // the answers of its successful attempts
				last error
			}
			var reqs []request
			for r := range rapid.IntRange(1, 3).Draw(rt, "requests") {
				others()
				key := fmt.Sprintf("p.%d", r)
				req := request{recs: producerRecords(fmt.Sprintf("h%d-r%d", histories, r), 1+rapid.IntRange(0, 2).Draw(rt, "records"), 2)}
				floor := mark
				budget := deliveryTimeout
				attempts := rapid.IntRange(1, 4).Draw(rt, "attempts")
				var held chan struct{} // an attempt held mid-commit, released after the next
				var heldOut chan error
				var heldRes *[]log.Result
				firstSent := base.Now()
				for a := 0; a <= attempts; a++ {
					final := a == attempts
					h := hosts[rapid.IntRange(0, len(hosts)-1).Draw(rt, "host")]
					delay := time.Duration(rapid.Int64Range(0, int64(budget)).Draw(rt, "transit and body read"))
					budget -= delay
					sentAt := base.Now()
					base.Advance(delay)
					elapsed := min(max(sentAt.Sub(firstSent)+clientSkew, 0), wire.MaxRetryElapsed)
					opt := firstSend(key)
					if a > 0 {
						opt = delayedRetry(key, int32(a), floor, elapsed)
					}
					mode := int32(0)
					if !final && rapid.IntRange(0, 2).Draw(rt, "crashes") == 0 {
						mode = int32(1 + rapid.IntRange(0, 2).Draw(rt, "crash mode"))
					}
					h.meta.mode.Store(mode)
					fenceDelay := time.Duration(rapid.Int64Range(0, int64(min(budget, 90*time.Second))).Draw(rt, "fence write"))
					budget -= fenceDelay
					h.meta.fenceDelay.Store(int64(fenceDelay))
					hold := !final && held == nil && mode == 0 && rapid.IntRange(0, 3).Draw(rt, "held") == 0
					if hold {
						gm := newGatedMeta(s.Meta)
						slow := host(t, s, func() time.Time { return base.Now().Add(h.skew) }, h.win, gm)
						held, heldOut, heldRes = gm.release, make(chan error, 1), new([]log.Result)
						go func() {
							res, err := slow.Append(ctx, topic, req.recs, opt)
							*heldRes = res
							heldOut <- err
						}()
						select {
						case <-gm.entered:
						case err := <-heldOut:
							heldOut <- err // refused before its commit (a search, an old request)
						}
						continue
					}
					res, err := h.l.Append(ctx, topic, req.recs, opt)
					h.meta.mode.Store(0)
					h.meta.fenceDelay.Store(0)
					if err == nil {
						req.ok = append(req.ok, res)
						if rapid.Bool().Draw(rt, "answer received") {
							saw(h)
						}
					}
					req.last = err
					if held != nil {
						close(held)
						if err := <-heldOut; err == nil {
							req.ok = append(req.ok, *heldRes)
						}
						held = nil
					}
					others()
				}
				reqs = append(reqs, req)
			}
			seen := countValues(t, setup, topic, 2)
			for v, n := range seen {
				if n > 1 {
					rt.Fatalf("history %d: record %q read %d times", histories, v, n)
				}
			}
			for r, req := range reqs {
				if req.last != nil {
					if !refusedNothingAppended(req.last) {
						rt.Fatalf("history %d, request %d: the last attempt failed with %v, which does not say nothing was appended", histories, r, req.last)
					}
					continue
				}
				mustOnce(t, seen, req.recs)
				for i, res := range req.ok {
					sameResults(t, fmt.Sprintf("history %d, request %d: successful attempt %d against the last", histories, r, i), req.ok[len(req.ok)-1], res)
				}
				mustAt(t, setup, topic, req.ok[len(req.ok)-1], req.recs)
			}
		})
	})
}
