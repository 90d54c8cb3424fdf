package s3

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// CreateBucket creates bucket in the client's region if it does not exist yet; a bucket
// this account already owns is success. It is for emulators and development: a
// production bucket (encryption, public access block, lifecycle) comes from the CDK stack.
func CreateBucket(ctx context.Context, client *s3.Client, bucket string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if region := client.Options().Region; region != "" && region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(region),
		}
	}
	_, err := client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err == nil || errors.As(err, &owned) {
		return nil
	}
	return mapError("create bucket", bucket, err)
}

// DeletePrefix deletes every object whose key starts with prefix (keys as stored, not
// relative to any ObjectStore prefix; "" empties the bucket), in batches of up to 1000.
// Tests use it to clean up.
func DeletePrefix(ctx context.Context, client *s3.Client, bucket, prefix string) error {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{
		Bucket: aws.String(bucket),
		Prefix: aws.String(prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return mapError("list", prefix, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		out, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return mapError("delete objects", prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("s3: delete prefix %q: %d objects not deleted, first %q: %s",
				prefix, len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	return nil
}

// DeleteBucket empties bucket and deletes it; a missing bucket is success. Tests use it
// to remove a bucket they created.
func DeleteBucket(ctx context.Context, client *s3.Client, bucket string) error {
	if err := DeletePrefix(ctx, client, bucket, ""); err != nil {
		if isNoSuchBucket(err) {
			return nil
		}
		return err
	}
	_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	if err != nil && !isNoSuchBucket(err) {
		return mapError("delete bucket", bucket, err)
	}
	return nil
}

func isNoSuchBucket(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchBucket"
}
