package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// lambdaMaxResponse is Lambda's limit on a synchronous invocation's response payload.
const lambdaMaxResponse = 6 * 1024 * 1024

// TestAnswersFitOnManagedInstances (issue 17 item 5): on Lambda Managed Instances two
// concurrent unkeyed appends of ~2.6 MiB each share one group commit (one index entry of
// ~5.2 MiB of blocks). A binary poll used to answer that entry whole: base64 in the
// function's response made it ~7 MB, over Lambda's 6 MB, so the function answered 500
// and the partition was unreadable. Now every answer, binary and JSON, stays under the
// limit and the records read back whole, each once.
func TestAnswersFitOnManagedInstances(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, "api", d.env("AWS_LAMBDA_MAX_CONCURRENCY=4", "STRATA_GROUP_COMMIT_WINDOW=500ms"))
	call(t, api, 201, httpEvent(t, "POST", "/v1/topics", "", map[string]any{"name": "fit", "partitions": 1}, nil), nil)

	const appends, perAppend, size = 2, 3, 880 << 10 // 3 records of 880 KiB: ~2.6 MiB an append
	value := func(a, r int) []byte { return bytes.Repeat([]byte{byte('a' + a*perAppend + r)}, size) }
	var wg sync.WaitGroup
	errs := make([]error, appends)
	for a := range appends {
		recs := make([]map[string]any, perAppend)
		for r := range recs {
			recs[r] = map[string]any{"value": base64.StdEncoding.EncodeToString(value(a, r))}
		}
		ev := httpEvent(t, "POST", "/v1/topics/fit/records", "", map[string]any{"records": recs}, nil)
		wg.Go(func() {
			resp, err := invokeConcurrently(api.url, ev)
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d: %.300s", resp.StatusCode, resp.Body)
			}
			errs[a] = err
		})
	}
	wg.Wait()
	for a, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", a, err)
		}
	}
	out, err := d.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(d.cfg.Bucket), Prefix: aws.String("v1/fit/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 {
		t.Fatalf("the two appends made %d segment objects, want 1 (one shared commit)", len(out.Contents))
	}
	want := map[string]bool{}
	for a := range appends {
		for r := range perAppend {
			want[string(value(a, r)[:1])] = true
		}
	}
	const total = appends * perAppend

	// Binary polls from 0 to the high watermark.
	got := map[int64]byte{}
	for off, polls := int64(0), 0; off < total; polls++ {
		if polls > 2*total {
			t.Fatalf("binary polls made no progress past %d", off)
		}
		raw := invokeRaw(t, api, httpEvent(t, "GET", "/v1/topics/fit/partitions/0/records",
			fmt.Sprintf("offset=%d&max_records=100", off), nil, map[string]string{"accept": wire.ContentTypeBlocks}))
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(raw, &resp); err != nil || resp.StatusCode != 200 {
			t.Fatalf("binary poll @%d: %d %.300s (%v)", off, resp.StatusCode, resp.Body, err)
		}
		body, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil || !resp.IsBase64Encoded {
			t.Fatalf("binary poll @%d: body not base64 (%v)", off, err)
		}
		p, err := wire.DecodePoll(body)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("binary poll @%d: %d bytes of blocks, %d bytes of response payload", off, len(body), len(raw))
		for _, r := range p.Ranges {
			recs, err := segment.AppendBlocksRecords(nil, r.Data, r.BaseOffset)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				if len(rec.Value) != size {
					t.Fatalf("offset %d: %d bytes, want %d", rec.Offset, len(rec.Value), size)
				}
				got[rec.Offset] = rec.Value[0]
			}
		}
		off = p.NextOffset
	}
	checkRead(t, "binary", got, want, total)

	// JSON polls.
	got = map[int64]byte{}
	for off, polls := int64(0), 0; off < total; polls++ {
		if polls > 2*total {
			t.Fatalf("JSON polls made no progress past %d", off)
		}
		raw := invokeRaw(t, api, httpEvent(t, "GET", "/v1/topics/fit/partitions/0/records",
			fmt.Sprintf("offset=%d&max_records=100", off), nil, nil))
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(raw, &resp); err != nil || resp.StatusCode != 200 {
			t.Fatalf("JSON poll @%d: %d %.300s (%v)", off, resp.StatusCode, resp.Body, err)
		}
		body := []byte(resp.Body)
		if resp.IsBase64Encoded {
			body, _ = base64.StdEncoding.DecodeString(resp.Body)
		}
		var poll struct {
			Records []struct {
				Offset int64  `json:"offset"`
				Value  string `json:"value"`
			} `json:"records"`
			NextOffset int64 `json:"next_offset"`
		}
		if err := json.Unmarshal(body, &poll); err != nil {
			t.Fatal(err)
		}
		t.Logf("JSON poll @%d: %d records, %d bytes of response payload", off, len(poll.Records), len(raw))
		for _, rec := range poll.Records {
			v, err := base64.StdEncoding.DecodeString(rec.Value)
			if err != nil || len(v) != size {
				t.Fatalf("offset %d: %d bytes (%v), want %d", rec.Offset, len(v), err, size)
			}
			got[rec.Offset] = v[0]
		}
		off = poll.NextOffset
	}
	checkRead(t, "JSON", got, want, total)
}

func checkRead(t *testing.T, how string, got map[int64]byte, want map[string]bool, total int) {
	t.Helper()
	if len(got) != total {
		t.Fatalf("%s polls read %d records, want %d", how, len(got), total)
	}
	for off, b := range got {
		if !want[string([]byte{b})] {
			t.Fatalf("%s: offset %d holds a record never appended", how, off)
		}
	}
}

// invokeRaw invokes the function and returns its raw response payload, failing the
// test when it exceeds Lambda's response limit.
func invokeRaw(t *testing.T, api *rie, payload []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	raw, err := api.invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > lambdaMaxResponse {
		t.Fatalf("response payload of %d bytes exceeds Lambda's %d", len(raw), lambdaMaxResponse)
	}
	return raw
}
