package runtime_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

// TestAttemptHeaderContract (issue 20): on the assembled server, a Strata-Attempt that
// is not one decimal number is a 400 that appends nothing; a key reused with another
// body on a first attempt (Strata-Attempt: 0, no claim read) is a 422 whose records are
// never read; a retry (Strata-Attempt: 1) answers the first attempt's offsets.
func TestAttemptHeaderContract(t *testing.T) {
	ctx := context.Background()
	rt, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	post := func(body string, hdr map[string][]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, rt.URL()+"/v1/topics/t/records", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, vs := range hdr {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(got)
	}
	a, b := `{"records": [{"value": "QQ==", "partition": 0}]}`, `{"records": [{"value": "Qg==", "partition": 0}]}`
	for _, bad := range [][]string{{"01"}, {"-1"}, {"x"}, {""}, {"0", "1"}, {"65537"}} {
		if code, got := post(a, map[string][]string{"Idempotency-Key": {"bad"}, wire.HeaderAttempt: bad}); code != http.StatusBadRequest ||
			!strings.Contains(got, "Strata-Attempt") {
			t.Errorf("Strata-Attempt %q: %d %s, want 400 naming the header", bad, code, got)
		}
	}
	first := func(n string) map[string][]string {
		return map[string][]string{"Idempotency-Key": {"k"}, wire.HeaderAttempt: {n}}
	}
	code, answer := post(a, first("0"))
	if code != http.StatusOK {
		t.Fatalf("first attempt: %d %s", code, answer)
	}
	if code, got := post(b, first("0")); code != http.StatusUnprocessableEntity || !strings.Contains(got, wire.CodeIdempotencyKeyReused) {
		t.Fatalf("key reused with another body on a first attempt: %d %s, want 422 %s", code, got, wire.CodeIdempotencyKeyReused)
	}
	if code, got := post(a, first("1")); code != http.StatusOK || got != answer {
		t.Fatalf("retry: %d %s, want 200 %s", code, got, answer)
	}
	res, err := c.Poll(ctx, "t", 0, 0, client.PollOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 || string(res.Records[0].Value) != "A" {
		t.Fatalf("the partition reads %+v, want the first attempt's one record (the bad headers appended nothing, the reused key's record skipped)", res.Records)
	}
}
