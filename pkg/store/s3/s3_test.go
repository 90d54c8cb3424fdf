package s3_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
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
	if err := a.Put(ctx, "k", []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "k", []byte("from b")); err != nil {
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
		if err := o.Put(ctx, k, []byte(k)); err != nil {
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
