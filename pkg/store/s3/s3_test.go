package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/s3"
	"github.com/stratalog/strata/pkg/store/storetest"
)

// testBucket is shared by every test run; each harness works under its own random prefix.
const testBucket = "strata-test-objects"

type harness struct {
	t      *testing.T
	client *awss3.Client
	prefix string
}

func newHarness(ctx context.Context, t *testing.T) (storetest.Harness, error) {
	client := awstest.S3Client(ctx, t)
	if err := s3.CreateBucket(ctx, client, testBucket); err != nil {
		return nil, err
	}
	return &harness{t: t, client: client, prefix: randomPrefix(t)}, nil
}

func (h *harness) MakeObjectStore(ctx context.Context) (store.ObjectStore, error) {
	return s3.New(h.client, testBucket, h.prefix), nil
}

func (h *harness) MakeMetaStore(ctx context.Context) (store.MetaStore, error) {
	return nil, fmt.Errorf("s3 holds objects only: %w", errors.ErrUnsupported)
}

func (h *harness) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s3.DeletePrefix(ctx, h.client, testBucket, h.prefix); err != nil {
		h.t.Errorf("harness cleanup: %v", err)
	}
}

func randomPrefix(t testing.TB) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "test-" + hex.EncodeToString(b[:]) + "/"
}

func TestConformance(t *testing.T) {
	storetest.RunConformanceTests(t, newHarness)
}

// TestPrefixIsolation checks that stores with different prefixes on one bucket never see
// each other's objects, and that the cleanup really empties a prefix.
func TestPrefixIsolation(t *testing.T) {
	ctx := t.Context()
	client := awstest.S3Client(ctx, t)
	if err := s3.CreateBucket(ctx, client, testBucket); err != nil {
		t.Fatal(err)
	}
	pa, pb := randomPrefix(t), randomPrefix(t)
	a, b := s3.New(client, testBucket, pa), s3.New(client, testBucket, pb)
	t.Cleanup(func() {
		for _, p := range []string{pa, pb} {
			if err := s3.DeletePrefix(context.Background(), client, testBucket, p); err != nil {
				t.Error(err)
			}
		}
	})
	if err := a.Put(ctx, "k", []byte("from a"), store.Kept); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "k", []byte("from b"), store.Kept); err != nil {
		t.Fatalf("Put of the same key under another prefix: %v", err)
	}
	if got, err := b.GetRange(ctx, "k", 0, 6); err != nil || string(got) != "from b" {
		t.Fatalf("b.GetRange = %q, %v; want \"from b\"", got, err)
	}
	var keys []string
	if err := a.List(ctx, "", func(oi store.ObjectInfo) error { keys = append(keys, oi.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("a.List = %v, want [k] (keys relative to the prefix, none of b's)", keys)
	}
	if err := s3.DeletePrefix(ctx, client, testBucket, pa); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetRange(ctx, "k", 0, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRange after DeletePrefix: %v, want ErrNotFound", err)
	}
	if _, err := b.GetRange(ctx, "k", 0, 1); err != nil {
		t.Fatalf("DeletePrefix of a's prefix touched b: %v", err)
	}
}

// TestMissingBucketIsNotNotFound: a misconfigured bucket must not look like a missing object.
func TestMissingBucketIsNotNotFound(t *testing.T) {
	ctx := t.Context()
	client := awstest.S3Client(ctx, t)
	o := s3.New(client, "strata-test-no-such-bucket", "")
	_, err := o.GetRange(ctx, "k", 0, 1)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRange in a missing bucket: %v, want an error other than ErrNotFound", err)
	}
}

func apiErr(code string, status int) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "Op", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "m"},
		},
	}}
}

// TestErrorMapping pins the native-error classification without an emulator: throttling
// and 5xx must be ErrUnavailable, precondition failures ErrExists, missing keys ErrNotFound.
func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{apiErr("NoSuchKey", 404), store.ErrNotFound},
		{apiErr("NotFound", 404), store.ErrNotFound},
		{apiErr("PreconditionFailed", 412), store.ErrExists},
		{apiErr("ConditionalRequestConflict", 409), store.ErrExists},
		{apiErr("", 412), store.ErrExists},
		{apiErr("SlowDown", 503), store.ErrUnavailable},
		{apiErr("InternalError", 500), store.ErrUnavailable},
		{apiErr("Whatever", 502), store.ErrUnavailable},
		{apiErr("InvalidRange", 416), s3.ErrRange},
		{apiErr("AccessDenied", 403), nil},
		{apiErr("NoSuchBucket", 404), nil},
		{context.Canceled, context.Canceled},
	} {
		got := s3.MapErrorForTest("op", "k", tc.err)
		for _, sentinel := range []error{store.ErrNotFound, store.ErrExists, store.ErrUnavailable, s3.ErrRange} {
			if errors.Is(got, sentinel) != (sentinel == tc.want) {
				t.Errorf("mapError(%v) = %v; errors.Is(%v) = %v", tc.err, got, sentinel, errors.Is(got, sentinel))
			}
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("mapError(%v) = %v dropped the native error from the chain", tc.err, got)
		}
	}
}

// TestDeleteBucket: DeleteBucket empties and removes a bucket, and a missing one is fine.
func TestDeleteBucket(t *testing.T) {
	ctx := t.Context()
	client := awstest.S3Client(ctx, t)
	bucket := "strata-test-delete-" + strings.TrimSuffix(strings.TrimPrefix(randomPrefix(t), "test-"), "/")
	if err := s3.CreateBucket(ctx, client, bucket); err != nil {
		t.Fatal(err)
	}
	if err := s3.CreateBucket(ctx, client, bucket); err != nil {
		t.Fatalf("CreateBucket of a bucket we own: %v", err)
	}
	o := s3.New(client, bucket, "")
	for _, k := range []string{"a", "b/c", "d"} {
		if err := o.Put(ctx, k, []byte(k), store.Kept); err != nil {
			t.Fatal(err)
		}
	}
	if err := s3.DeleteBucket(ctx, client, bucket); err != nil {
		t.Fatalf("DeleteBucket of a bucket with objects: %v", err)
	}
	if _, err := client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket}); err == nil {
		t.Fatalf("bucket %s still exists after DeleteBucket", bucket)
	}
	if err := s3.DeleteBucket(ctx, client, bucket); err != nil {
		t.Fatalf("DeleteBucket of a missing bucket: %v", err)
	}
}

// lostAnswer is the error a request whose answer was dropped on the way back yields;
// the SDK's retryer retries it, as it would a timeout or a reset connection.
type lostAnswer struct{}

func (lostAnswer) Error() string        { return "test: answer lost after the request was applied" }
func (lostAnswer) RetryableError() bool { return true }

// loseAnswers returns a client whose first n PutObject attempts reach the emulator and
// are applied there, but whose answers are replaced by a retryable error; with failGets,
// every GetObject fails before it is sent.
func loseAnswers(ctx context.Context, t *testing.T, n int32, failGets ...bool) *awss3.Client {
	var left atomic.Int32
	left.Store(n)
	lose := middleware.FinalizeMiddlewareFunc("TestLoseAnswer",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if awsmiddleware.GetOperationName(ctx) == "GetObject" && len(failGets) > 0 && failGets[0] {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, errors.New("test: GetObject refused")
			}
			out, md, err := next.HandleFinalize(ctx, in)
			if awsmiddleware.GetOperationName(ctx) == "PutObject" && left.Add(-1) >= 0 {
				return middleware.FinalizeOutput{}, md, lostAnswer{}
			}
			return out, md, err
		})
	return awss3.NewFromConfig(awstest.Config(ctx, t), func(o *awss3.Options) {
		o.UsePathStyle = true
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(lose, middleware.After)
		})
	})
}

// TestRetryOfAppliedPut (defect 9): when the SDK retries a PutObject whose first attempt
// was applied but whose answer was lost, the retry's 412 must not fail the Put: the
// object under the key is byte-for-byte the one this call wrote. A retry that finds
// other bytes under the key is still ErrExists, and so is a conflict on a first attempt.
func TestRetryOfAppliedPut(t *testing.T) {
	ctx := t.Context()
	if err := s3.CreateBucket(ctx, awstest.S3Client(ctx, t), testBucket); err != nil {
		t.Fatal(err)
	}
	prefix := randomPrefix(t)
	t.Cleanup(func() {
		if err := s3.DeletePrefix(context.Background(), awstest.S3Client(context.Background(), t), testBucket, prefix); err != nil {
			t.Error(err)
		}
	})
	plain := s3.New(awstest.S3Client(ctx, t), testBucket, prefix)
	data := bytes.Repeat([]byte("segment "), 1000)

	// The first attempt is applied, its answer lost; the retry gets 412.
	o := s3.New(loseAnswers(ctx, t, 1), testBucket, prefix)
	if err := o.Put(ctx, "ours", data, store.Kept); err != nil {
		t.Fatalf("Put whose first answer was lost: %v, want nil (the object is ours)", err)
	}
	got, err := plain.GetRange(ctx, "ours", 0, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object after the retried Put: %d bytes, %v", len(got), err)
	}
	// Two answers lost: the third attempt still finds its own object.
	o = s3.New(loseAnswers(ctx, t, 2), testBucket, prefix)
	if err := o.Put(ctx, "ours-twice", data, store.Kept); err != nil {
		t.Fatalf("Put whose first two answers were lost: %v", err)
	}

	// Someone else's object under the key: every attempt is refused, the answer of the
	// first is lost, the retry's 412 stands because the bytes differ.
	if err := plain.Put(ctx, "theirs", []byte("other bytes"), store.Kept); err != nil {
		t.Fatal(err)
	}
	o = s3.New(loseAnswers(ctx, t, 1), testBucket, prefix)
	if err := o.Put(ctx, "theirs", data, store.Kept); !errors.Is(err, store.ErrExists) {
		t.Fatalf("retried Put over another object: %v, want ErrExists", err)
	}
	// Same length, other bytes: still not ours.
	same := bytes.Repeat([]byte("SEGMENT "), 1000)
	if err := plain.Put(ctx, "theirs-same-size", same, store.Kept); err != nil {
		t.Fatal(err)
	}
	o = s3.New(loseAnswers(ctx, t, 1), testBucket, prefix)
	if err := o.Put(ctx, "theirs-same-size", data, store.Kept); !errors.Is(err, store.ErrExists) {
		t.Fatalf("retried Put over another object of the same size: %v, want ErrExists", err)
	}
	// The retry finds the key taken and the object cannot be read back: whose it is is
	// unknown, so neither success nor ErrExists, and never ErrNotFound (a missing topic
	// upstream); a retryable ErrUnavailable.
	o = s3.New(loseAnswers(ctx, t, 1, true), testBucket, prefix)
	err = o.Put(ctx, "unverifiable", data, store.Kept)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retried Put whose object cannot be read back: %v, want ErrUnavailable only", err)
	}
	// No retry: an identical object already there was put by an earlier call.
	if err := plain.Put(ctx, "ours", data, store.Kept); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second Put of identical bytes without a retry: %v, want ErrExists", err)
	}
	got, err = plain.GetRange(ctx, "theirs", 0, 11)
	if err != nil || string(got) != "other bytes" {
		t.Fatalf("the refused Put changed another object: %q, %v", got, err)
	}
}
