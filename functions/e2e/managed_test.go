package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAPIOnManagedInstances (issue 12): the same api bootstrap under the Runtime
// Interface Emulator's Lambda Managed Instances mode (AWS_LAMBDA_MAX_CONCURRENCY=32, one
// execution environment running 32 invocations at once). 32 concurrent single-record
// appends arrive as API Gateway v2 events; group commit coalesces them into a handful of
// segment objects; every one is acknowledged, with its own offset, and readable.
func TestAPIOnManagedInstances(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, "api", d.env("AWS_LAMBDA_MAX_CONCURRENCY=32", "STRATA_GROUP_COMMIT_WINDOW=50ms"))
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "mi", "partitions": 2}, nil), nil)

	const n = 32
	type ack struct {
		Results []struct {
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		} `json:"results"`
	}
	acks := make([]ack, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		body := map[string]any{"records": []map[string]any{{
			"key":   base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "k-%d", i)),
			"value": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "v-%d", i)),
		}}}
		ev := httpEvent(t, "POST", "/v1/topics/mi/records", "", body, nil)
		wg.Go(func() {
			resp, err := invokeConcurrently(api.url, ev)
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if err == nil {
				err = json.Unmarshal([]byte(resp.Body), &acks[i])
			}
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[[2]int64]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		r := acks[i].Results[0]
		if prev, dup := seen[[2]int64{int64(r.Partition), r.Offset}]; dup {
			t.Fatalf("appends %d and %d acknowledged at the same offset %d/%d", prev, i, r.Partition, r.Offset)
		}
		seen[[2]int64{int64(r.Partition), r.Offset}] = i
	}
	objects := 0
	out, err := d.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(d.cfg.Bucket), Prefix: aws.String("v1/mi/")})
	if err != nil {
		t.Fatal(err)
	}
	objects = len(out.Contents)
	t.Logf("%d concurrent appends acknowledged in %d segment objects", n, objects)
	if objects > n/4 {
		t.Fatalf("%d appends made %d objects: group commit did not coalesce them", n, objects)
	}
	// Every acknowledged record reads back at its offset.
	for p := range 2 {
		var poll struct {
			Records []struct {
				Offset int64  `json:"offset"`
				Value  string `json:"value"`
			} `json:"records"`
		}
		call(t, api, 200, httpEvent(t, "GET", fmt.Sprintf("/v1/topics/mi/partitions/%d/records", p), "offset=0&max_records=100", nil, nil), &poll)
		for _, rec := range poll.Records {
			i, ok := seen[[2]int64{int64(p), rec.Offset}]
			v, _ := base64.StdEncoding.DecodeString(rec.Value)
			if !ok || string(v) != fmt.Sprintf("v-%d", i) {
				t.Fatalf("partition %d offset %d holds %q, acknowledged for append %d (%v)", p, rec.Offset, v, i, ok)
			}
			delete(seen, [2]int64{int64(p), rec.Offset})
		}
	}
	if len(seen) != 0 {
		t.Fatalf("%d acknowledged records not read back", len(seen))
	}
}

// invokeConcurrently calls the emulator's invoke endpoint without the harness's
// one-at-a-time lock: in managed-instances mode the emulator runs invocations at once.
// An invocation the emulator refuses with Runtime.Unavailable found none of the
// runtime's pollers back at /next yet and was never delivered (the emulator's invoke
// router answers it before reserving a runtime), so it is sent again, as Lambda's
// callers retry a throttled invoke; anything else is the answer.
func invokeConcurrently(url string, payload []byte) (events.APIGatewayV2HTTPResponse, error) {
	var resp events.APIGatewayV2HTTPResponse
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return resp, err
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return resp, err
		}
		if r.StatusCode != http.StatusOK && strings.Contains(string(body), `"Runtime.Unavailable"`) && attempt < 100 {
			select {
			case <-ctx.Done():
				return resp, fmt.Errorf("emulator answered %d: %s (%w)", r.StatusCode, strings.TrimSpace(string(body)), ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if r.StatusCode != http.StatusOK {
			return resp, fmt.Errorf("emulator answered %d: %s", r.StatusCode, strings.TrimSpace(string(body)))
		}
		return resp, json.Unmarshal(body, &resp)
	}
}
