package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
)

// source is a Source answering a fixed list and error.
type source struct {
	subs []deploy.Subscription
	err  error
}

func (s source) Subscriptions(context.Context) ([]deploy.Subscription, error) { return s.subs, s.err }

// TestAttachedSubscriptions: subscriptions another app attached (a Source) are invoked
// beside the deployment's own, on the stream path and on the sweep; a bad or duplicate
// one, or a failing Source, is skipped and counted, never fails a stream batch, and is
// reported by the sweep.
func TestAttachedSubscriptions(t *testing.T) {
	ctx := context.Background()
	static := subs("orders", "ship", "shipFn")
	tests := []struct {
		name       string
		src        source
		want       []string // invocations, sorted
		sourceErrs int
		errHas     string // what Sweep's error says ("" = no error)
	}{
		{
			name: "attached invoked beside static",
			src:  source{subs: subs("orders", "bill", "billFn")},
			want: []string{"billFn:bill/orders/0", "shipFn:ship/orders/0"},
		},
		{
			name: "attached of another topic only on its topic",
			src:  source{subs: subs("payments", "bill", "billFn")},
			want: []string{"shipFn:ship/orders/0"},
		},
		{
			name:       "duplicate of a static subscription skipped",
			src:        source{subs: subs("orders", "ship", "otherFn")},
			want:       []string{"shipFn:ship/orders/0"},
			sourceErrs: 1,
			errHas:     "already subscribed",
		},
		{
			name:       "duplicate among attached: the first kept",
			src:        source{subs: subs("orders", "bill", "billFn", "orders", "bill", "billFn2")},
			want:       []string{"billFn:bill/orders/0", "shipFn:ship/orders/0"},
			sourceErrs: 1,
			errHas:     "already subscribed",
		},
		{
			name:       "invalid attached skipped",
			src:        source{subs: subs("or ders", "bill", "billFn")},
			want:       []string{"shipFn:ship/orders/0"},
			sourceErrs: 1,
			errHas:     "not a valid name",
		},
		{
			name:       "failing source: what it still knows, and the static ones",
			src:        source{subs: subs("orders", "bill", "billFn"), err: errors.New("ThrottlingException")},
			want:       []string{"billFn:bill/orders/0", "shipFn:ship/orders/0"},
			sourceErrs: 1,
			errHas:     "ThrottlingException",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			n.topic(t, "orders", 1)
			n.topic(t, "payments", 1)
			commits := n.appendN(t, "orders", 0, 2)
			for _, path := range []string{"stream", "sweep"} {
				rec := &recorder{}
				d, err := dispatch.New(dispatch.Config{Subscriptions: static, Source: tc.src, Leases: n.meta, Offsets: n.log, Invoker: rec})
				if err != nil {
					t.Fatal(err)
				}
				var st dispatch.Stats
				if path == "stream" {
					st, err = d.HandleCommits(ctx, commits)
					if err != nil {
						t.Fatalf("stream: %v (a Source problem must not fail the batch)", err)
					}
				} else {
					st, err = d.Sweep(ctx)
					switch {
					case tc.errHas == "" && err != nil:
						t.Fatalf("sweep: %v", err)
					case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
						t.Fatalf("sweep: error %v, want one saying %q", err, tc.errHas)
					}
				}
				if got := rec.sorted(); !equal(got, tc.want) {
					t.Errorf("%s: invoked %v, want %v", path, got, tc.want)
				}
				if st.SourceErrors != tc.sourceErrs {
					t.Errorf("%s: SourceErrors %d, want %d", path, st.SourceErrors, tc.sourceErrs)
				}
			}
		})
	}
}
