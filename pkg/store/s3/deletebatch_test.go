package s3_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/s3"
)

// TestDeleteBatchKeyErrors: a DeleteObjects answer's per-key errors map to the store's
// errors; a missing key counts as deleted.
func TestDeleteBatchKeyErrors(t *testing.T) {
	answer := []types.Error{
		{Key: aws.String("p/gone"), Code: aws.String("NoSuchKey")},
		{Key: aws.String("p/slow"), Code: aws.String("SlowDown"), Message: aws.String("reduce your request rate")},
		{Key: aws.String("p/internal"), Code: aws.String("InternalError")},
		{Key: aws.String("p/denied"), Code: aws.String("AccessDenied")},
	}
	failed, errs := s3.KeyErrorsForTest("p/", answer)
	if want := []string{"slow", "internal", "denied"}; !slices.Equal(failed, want) {
		t.Fatalf("failed keys %q, want %q", failed, want)
	}
	for i, want := range []bool{true, true, false} {
		if got := errors.Is(errs[i], store.ErrUnavailable); got != want {
			t.Fatalf("key %q: %v; ErrUnavailable %v, want %v", failed[i], errs[i], got, want)
		}
		if errors.Is(errs[i], store.ErrNotFound) {
			t.Fatalf("key %q: %v is ErrNotFound", failed[i], errs[i])
		}
	}
}

// TestDeleteBatchRequests: DeleteBatch sends ceil(N/1000) DeleteObjects requests, none
// for an empty list, and no DeleteObject.
func TestDeleteBatchRequests(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	cfg := awstest.Config(ctx, t)
	cfg.APIOptions = append(cfg.APIOptions, counter.Middleware)
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) { o.UsePathStyle = true })
	if err := s3.CreateBucket(ctx, client, testBucket); err != nil {
		t.Fatal(err)
	}
	prefix := randomPrefix(t)
	t.Cleanup(func() { _ = s3.DeletePrefix(context.Background(), client, testBucket, prefix) })
	b := s3.New(client, testBucket, prefix)
	for _, n := range []int{0, 1, 1000, 2001} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("n%d/%05d", n, i)
		}
		counter.Reset()
		if err := b.DeleteBatch(ctx, keys); err != nil {
			t.Fatalf("DeleteBatch of %d keys: %v", n, err)
		}
		if got, want := counter.Requests("S3.DeleteObjects"), int64((n+999)/1000); got != want {
			t.Fatalf("DeleteBatch of %d keys sent %d DeleteObjects, want %d", n, got, want)
		}
		if got := counter.Requests("S3.DeleteObject"); got != 0 {
			t.Fatalf("DeleteBatch of %d keys sent %d DeleteObject", n, got)
		}
	}
}
