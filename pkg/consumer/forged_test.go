package consumer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
)

var errPoison = errors.New("poison record")

// TestForgedDeadLetterKeyDoesNotSkipPoison: dead-letter keys are predictable
// (DeadLetterKey), so an HTTP caller allowed only to append to the dead-letter topic
// appends a decoy under the key the poison record's dead-letter will use — with auth
// on, and with auth off. The in-process consumer's dead-letter still lands: its key is
// the in-process principal's, which no HTTP caller can produce, so it is not taken as
// "already dead-lettered". The poison record is in the dead-letter topic, counted, and
// the group commits past it. Both backends.
func TestForgedDeadLetterKeyDoesNotSkipPoison(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 4)
		if _, err := f.log.CreateTopic(ctx, "orders.dlq", 1, 0); err != nil {
			t.Fatal(err)
		}
		const token = "mallory-token-0123456789abcdef"
		auth, err := httpapi.ParseAuth([]byte(`{"principals": {"` + token + `": {"name": "mallory",
			"allow": [{"resource": "topic:orders.dlq", "ops": ["append"]}]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		for grp, h := range map[string]http.Handler{
			"billing": httpapi.New(httpapi.Config{Log: f.log, Groups: f.coord, Auth: auth}),
			"audit":   httpapi.New(httpapi.Config{Log: f.log, Groups: f.coord}),
		} {
			req := httptest.NewRequest(http.MethodPost, "/v1/topics/orders.dlq/records",
				strings.NewReader(`{"records": [{"value": "ZGVjb3k="}]}`)) // "decoy"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Idempotency-Key", consumer.DeadLetterKey(grp, "orders", 0, 2))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("%s: the decoy append: %d %s", grp, w.Code, w.Body.String())
			}
			poison := func(_ context.Context, r consumer.Record) error {
				if r.Offset == 2 {
					return errPoison
				}
				return nil
			}
			c := f.consumer(t, grp, "m-1", poison, func(c *consumer.Config) { c.MaxAttempts, c.DeadLetterTopic = 1, "orders.dlq" })
			st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if err != nil {
				t.Fatalf("%s: %v", grp, err)
			}
			if st.DeadLettered != 1 || f.committed(t, grp) != 4 {
				t.Fatalf("%s: stats %+v, committed %d; want 1 dead-lettered, 4 committed", grp, st, f.committed(t, grp))
			}
		}
		res, err := f.log.Poll(ctx, "orders.dlq", 0, 0, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		landed := 0
		for _, r := range res.Records {
			if string(r.Value) == "event-2" {
				landed++
			}
		}
		if landed != 2 || len(res.Records) != 4 {
			t.Fatalf("the dead-letter topic holds %d records, %d of them the poison record; want the two decoys and the poison record once per group",
				len(res.Records), landed)
		}
	})
}
