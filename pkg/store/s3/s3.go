// Package s3 implements store.ObjectStore on Amazon S3 (or an emulator) with
// aws-sdk-go-v2: put-if-absent via If-None-Match, ranged GETs, paged listing.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/stratalog/strata/pkg/store"
)

// ErrRange is returned by GetRange when the requested range does not lie within the object.
var ErrRange = errors.New("s3: range outside the object")

// ObjectStore stores objects in one bucket under a key prefix. It is safe for concurrent use.
type ObjectStore struct {
	client *s3.Client
	bucket string
	prefix string
}

var _ store.ObjectStore = (*ObjectStore)(nil)

// New returns an ObjectStore keeping objects in bucket, each S3 key being prefix+key.
// The prefix isolates deployments or test runs sharing a bucket (end it with "/").
func New(client *s3.Client, bucket, prefix string) *ObjectStore {
	return &ObjectStore{client: client, bucket: bucket, prefix: prefix}
}

// Put stores data under key only if the key is free, using a conditional PutObject
// (If-None-Match: *), which S3 evaluates atomically; a 200 means S3 has stored the
// object durably.
//
// The SDK retries a PutObject whose answer was lost (a timeout, a reset connection, a
// 5xx after S3 applied it); the retry then finds the key taken by the first attempt and
// gets 412 PreconditionFailed (or 409 ConditionalRequestConflict while the first is
// still completing). When this call made more than one attempt and the stored object is
// byte-identical to data, the object is this call's own and Put returns nil. A conflict
// on the first attempt stays ErrExists: the key was taken before this call.
//
// An Expiring object is tagged ExpiryTagKey=ExpiryTagValue by the PutObject itself
// (x-amz-tagging; the caller needs s3:PutObjectTagging beside s3:PutObject): no request
// more, and no moment at which the object exists without its mark. A Kept object has no
// tag, which the bucket's backstop rule requires.
func (s *ObjectStore) Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error {
	var attempts atomic.Int32
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		IfNoneMatch:   aws.String("*"),
	}
	switch expiry {
	case store.Kept:
	case store.Expiring:
		in.Tagging = aws.String(expiryTagging)
	default:
		return fmt.Errorf("s3: put %q: unknown %v", key, expiry)
	}
	_, err := s.client.PutObject(ctx, in, countAttempts(&attempts))
	if err == nil {
		return nil
	}
	err = mapError("put", key, err)
	if !errors.Is(err, store.ErrExists) || attempts.Load() < 2 {
		return err
	}
	same, verr := s.holds(ctx, key, data)
	switch {
	case verr != nil && ctx.Err() != nil:
		return fmt.Errorf("s3: put %q: a retry found the key taken, then: %w", key, verr)
	case verr != nil:
		// Whether the object is ours is unknown (a 409 may mean our first attempt is still
		// completing, so even "no such key" proves nothing): neither success nor ErrExists
		// is true, and ErrNotFound would read as a missing topic upstream. Retryable.
		return fmt.Errorf("s3: put %q: a retry found the key taken and reading it back failed (%v): %w", key, verr, store.ErrUnavailable)
	case same:
		return nil
	}
	return err
}

// expiryTagging is an Expiring object's tag set in PutObject's query-string form.
var expiryTagging = url.QueryEscape(store.ExpiryTagKey) + "=" + url.QueryEscape(store.ExpiryTagValue)

// Keep replaces the object's tags with ExpiryTagKey=KeptTagValue, one PutObjectTagging
// (priced as a PUT; the caller needs s3:PutObjectTagging, as an Expiring Put does). The
// backstop's filter requires ExpiryTagValue, so the object is no longer one it takes.
// Strata sets no other tag. (An empty set would do as well on S3; the emulator refuses
// one.)
func (s *ObjectStore) Keep(ctx context.Context, key string) error {
	_, err := s.client.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
		Tagging: &types.Tagging{TagSet: []types.Tag{
			{Key: aws.String(store.ExpiryTagKey), Value: aws.String(KeptTagValue)},
		}},
	})
	if err != nil {
		return mapError("keep", key, err)
	}
	return nil
}

// KeptTagValue is the value of ExpiryTagKey on an object Keep took away from the
// backstop.
const KeptTagValue = "kept"

var _ store.ExpiryReader = (*ObjectStore)(nil)

// ObjectExpiry reads the object's tags (GetObjectTagging): Expiring when they hold the
// backstop's tag.
func (s *ObjectStore) ObjectExpiry(ctx context.Context, key string) (store.Expiry, error) {
	out, err := s.client.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	})
	if err != nil {
		return store.Kept, mapError("get tags of", key, err)
	}
	for _, t := range out.TagSet {
		if aws.ToString(t.Key) == store.ExpiryTagKey && aws.ToString(t.Value) == store.ExpiryTagValue {
			return store.Expiring, nil
		}
	}
	return store.Kept, nil
}

// holds reports whether key holds exactly data.
func (s *ObjectStore) holds(ctx context.Context, key string, data []byte) (bool, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	})
	if err != nil {
		return false, mapError("get", key, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength != int64(len(data)) {
		return false, nil
	}
	got, err := io.ReadAll(io.LimitReader(out.Body, int64(len(data))+1))
	if err != nil {
		return false, mapError("get", key, err)
	}
	return bytes.Equal(got, data), nil
}

// countAttempts counts the attempts of one operation: a Finalize middleware placed after
// the SDK's retry loop runs once per attempt.
func countAttempts(n *atomic.Int32) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("StrataCountAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), "Retry", middleware.After)
		})
	}
}

// GetRange returns exactly length bytes of key starting at offset, with one ranged GET.
// An empty, negative or overflowing range is ErrRange (HTTP cannot express an empty one).
func (s *ObjectStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 1 || offset > math.MaxInt64-length {
		return nil, fmt.Errorf("s3: get %q: invalid range offset %d length %d: %w", key, offset, length, ErrRange)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)),
	})
	if err != nil {
		return nil, mapError("get", key, err)
	}
	defer out.Body.Close()
	// Read one byte more than asked: a server ignoring Range must not go unnoticed.
	data, err := io.ReadAll(io.LimitReader(out.Body, length+1))
	if err != nil {
		return nil, mapError("get", key, err)
	}
	if int64(len(data)) != length {
		return nil, fmt.Errorf("s3: get %q: range %d+%d returned %d bytes (past the end of the object?): %w",
			key, offset, length, len(data), ErrRange)
	}
	return data, nil
}

// Delete removes key; S3 treats deleting a missing key as success.
func (s *ObjectStore) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	})
	if err != nil {
		if err := mapError("delete", key, err); !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// maxDeleteBatch is the most keys one DeleteObjects request may name.
const maxDeleteBatch = 1000

var _ store.BatchDeleter = (*ObjectStore)(nil)

// DeleteBatch removes keys with DeleteObjects, up to 1,000 keys a request (quiet mode:
// S3 answers only the keys it failed on). A key S3 reports as missing counts as deleted;
// a key of a failed request or with an error in the answer is in the returned
// *store.DeleteBatchError, its error mapped by mapError.
func (s *ObjectStore) DeleteBatch(ctx context.Context, keys []string) error {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	var failed []string
	var errs []error
	for start := 0; start < len(keys); start += maxDeleteBatch {
		chunk := keys[start:min(start+maxDeleteBatch, len(keys))]
		ids := make([]types.ObjectIdentifier, len(chunk))
		for i, k := range chunk {
			ids[i] = types.ObjectIdentifier{Key: aws.String(s.prefix + k)}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(s.bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			err = mapError("delete", chunk[0], err)
			for _, k := range chunk {
				failed, errs = append(failed, k), append(errs, err)
			}
			continue
		}
		f, e := keyErrors(s.prefix, out.Errors)
		failed, errs = append(failed, f...), append(errs, e...)
	}
	if len(failed) > 0 {
		return &store.DeleteBatchError{Failed: failed, Errs: errs}
	}
	return nil
}

// keyErrors maps the per-key errors of a DeleteObjects answer with mapError, returning
// the keys (without prefix) not deleted and their errors; a missing key is deleted.
func keyErrors(prefix string, answer []types.Error) (failed []string, errs []error) {
	for _, e := range answer {
		key := strings.TrimPrefix(aws.ToString(e.Key), prefix)
		err := mapError("delete", key, &smithy.GenericAPIError{Code: aws.ToString(e.Code), Message: aws.ToString(e.Message)})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		failed, errs = append(failed, key), append(errs, err)
	}
	return failed, errs
}

// List calls fn for every object whose key starts with prefix, in key order (S3 lists
// keys in UTF-8 byte order, which is Go's string order), paging with ListObjectsV2.
func (s *ObjectStore) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return mapError("list", prefix, err)
		}
		for _, o := range page.Contents {
			key, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok {
				return fmt.Errorf("s3: list %q: key %q outside prefix %q", prefix, aws.ToString(o.Key), s.prefix)
			}
			if err := fn(store.ObjectInfo{Key: key, Size: aws.ToInt64(o.Size)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapError is the one place where S3's native errors become store errors: a missing key
// is store.ErrNotFound, a failed or conflicting If-None-Match is store.ErrExists, an
// unsatisfiable range is ErrRange, and throttling, 5xx and network failures (after the
// SDK's own retries) are store.ErrUnavailable. The native error stays in the chain.
func mapError(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3: %s %q: %w", op, key, err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchBucket":
			return fmt.Errorf("s3: %s %q: bucket missing (deploy the stack, or create the tables and bucket with `strata dev --backend aws --bootstrap`): %w", op, key, err)
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrNotFound, err)
		case "PreconditionFailed", "ConditionalRequestConflict":
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrExists, err)
		case "InvalidRange":
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, ErrRange, err)
		case "SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestTimeTooSkewed",
			"ServiceUnavailable", "InternalError":
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrUnavailable, err)
		}
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		switch status := respErr.HTTPStatusCode(); {
		case status == 404:
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrNotFound, err)
		case status == 412:
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrExists, err)
		case status == 416:
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, ErrRange, err)
		case status == 429 || status >= 500:
			return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrUnavailable, err)
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("s3: %s %q: %w: %w", op, key, store.ErrUnavailable, err)
	}
	return fmt.Errorf("s3: %s %q: %w", op, key, err)
}
