package stackrun

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func ddbAttr(name, typ string) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeType(typ)}
}

func ddbKey(name, typ string) types.KeySchemaElement {
	return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyType(typ)}
}

func ddbStream(view string) *types.StreamSpecification {
	return &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(view)}
}

func ddbTTL(table, attr string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)}}
}

// cfnLifecycle is AWS::S3::Bucket's LifecycleConfiguration (the parts the stack uses).
type cfnLifecycle struct {
	Rules []struct {
		ID                             string `json:"Id"`
		Prefix                         string
		Status                         string
		ExpirationInDays               int32
		AbortIncompleteMultipartUpload *struct{ DaysAfterInitiation int32 }
		TagFilters                     []struct{ Key, Value string }
	}
}

// putLifecycle gives the bucket the template's lifecycle rules (the emulator stores
// them; it does not expire objects by age).
func (s *Stack) putLifecycle(ctx context.Context, bucket string, raw any) error {
	b, _ := json.Marshal(raw)
	var lc cfnLifecycle
	if err := json.Unmarshal(b, &lc); err != nil {
		return fmt.Errorf("stackrun: bucket %s lifecycle: %w", bucket, err)
	}
	var rules []s3types.LifecycleRule
	for _, r := range lc.Rules {
		rule := s3types.LifecycleRule{ID: aws.String(r.ID), Status: s3types.ExpirationStatus(r.Status),
			Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String(r.Prefix)}}
		if len(r.TagFilters) > 0 { // a prefix and tags: CloudFormation's rule is S3's And filter
			and := &s3types.LifecycleRuleAndOperator{Prefix: aws.String(r.Prefix)}
			for _, tf := range r.TagFilters {
				and.Tags = append(and.Tags, s3types.Tag{Key: aws.String(tf.Key), Value: aws.String(tf.Value)})
			}
			rule.Filter = &s3types.LifecycleRuleFilter{And: and}
		}
		if r.ExpirationInDays > 0 {
			rule.Expiration = &s3types.LifecycleExpiration{Days: aws.Int32(r.ExpirationInDays)}
		}
		if a := r.AbortIncompleteMultipartUpload; a != nil {
			rule.AbortIncompleteMultipartUpload = &s3types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(a.DaysAfterInitiation)}
		}
		rules = append(rules, rule)
	}
	_, err := s.s3c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
		Bucket: aws.String(bucket), LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: rules}})
	if err != nil {
		return fmt.Errorf("stackrun: bucket %s lifecycle: %w", bucket, err)
	}
	return nil
}
