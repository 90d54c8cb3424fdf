package main

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
)

// TestTopicsAlterRetentionAtNextPass: on every backend, through the CLI and the HTTP
// API, `topics alter --retention` shortened takes effect at the next retention pass (a
// record past the new retention is gone, one within it kept), lengthened keeps a record
// the old retention would have removed, and infinite is refused naming the stack's
// setting where the deployment has a maximum retention. The clock is the test's.
func TestTopicsAlterRetentionAtNextPass(t *testing.T) {
	t0 := time.UnixMilli(1_780_000_000_000)
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		var now atomic.Int64
		now.Store(t0.UnixMilli())
		clock := func() time.Time { return time.UnixMilli(now.Load()) }
		at := func(d time.Duration) { now.Store(t0.Add(d).UnixMilli()) }
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock,
			Topics: log.TopicDefaults{MaxRetention: 7 * 24 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.New(httpapi.Config{Log: l, Groups: group.New(s.Meta, l, clock)}))
		t.Cleanup(srv.Close)
		url := srv.URL
		pass := func() {
			t.Helper()
			job := retention.Job{Meta: s.Meta, Objects: s.Objects, Clock: clock, ObjectMargin: time.Minute}
			if _, err := job.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		values := func() string {
			t.Helper()
			var vs []string
			for _, r := range rows(cli(t, url, "", "consume", "r", "--from", "earliest", "--until-caught-up"))[1:] {
				f := strings.Fields(r)
				vs = append(vs, f[len(f)-1])
			}
			return strings.Join(vs, ",")
		}

		cli(t, url, "", "topics", "create", "r", "--partitions", "1", "--retention", "1d")
		cli(t, url, "old\n", "produce", "r")
		at(2 * time.Hour)
		cli(t, url, "new\n", "produce", "r")
		at(2*time.Hour + 30*time.Minute)
		pass()
		if got := values(); got != "old,new" {
			t.Fatalf("within a day's retention: %q, want old,new", got)
		}

		// Shortened to 1h: "old" (2h30m) is past it, "new" (30m) within it.
		if got := rows(cli(t, url, "", "topics", "alter", "r", "--retention", "1h")); got[1] != "r 1 1h0m0s - delete" {
			t.Fatalf("alter --retention 1h: %q", got)
		}
		if got := values(); got != "old,new" {
			t.Fatalf("before the next pass: %q, want old,new (a shorter retention takes effect at the pass)", got)
		}
		pass()
		if got := values(); got != "new" {
			t.Fatalf("after the pass: %q, want new alone", got)
		}

		// Lengthened to 3d: "new" at 2h old, past the 1h it had, stays.
		cli(t, url, "", "topics", "alter", "r", "--retention", "3d")
		at(4 * time.Hour)
		pass()
		if got := values(); got != "new" {
			t.Fatalf("lengthened to 3d, 2h later: %q, want new kept", got)
		}

		for _, v := range []string{"infinite", "-1", "8d"} {
			err := cliErr(t, url, "topics", "alter", "r", "--retention", v)
			if exitCode(err) != 1 || !strings.Contains(err.Error(), "strata:maxRetentionDays") {
				t.Errorf("--retention %s with a 7-day maximum: %v, want a refusal naming strata:maxRetentionDays", v, err)
			}
		}
		if got := rows(cli(t, url, "", "topics", "describe", "r")); !strings.HasPrefix(got[1], "r 1 72h0m0s") {
			t.Fatalf("after the refusals: %q, want retention 72h", got)
		}
	})
}
