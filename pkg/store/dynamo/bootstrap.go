package dynamo

import (
	"github.com/stratalog/strata/pkg/store"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	strata3 "github.com/stratalog/strata/pkg/store/s3"
)

// Config names a deployment's resources.
type Config struct {
	// TablePrefix is prepended to every table suffix (schema.go), e.g. "strata-".
	TablePrefix string
	// Bucket is the segment bucket Bootstrap creates; "" skips it.
	Bucket string
	// MaxTransactItems caps the items of one TransactWriteItems call; 0 means 100,
	// DynamoDB's limit. ResetCommits splits larger resets (see its doc).
	MaxTransactItems int
	// CommitResolveWait bounds how long a commit whose answer was lost is looked for in
	// the index, waiting for the materialiser, before its outcome is unknown; 0 means 10 s.
	CommitResolveWait time.Duration
	// FenceLimits bound the request fences a topic item holds; zero fields are the
	// store's defaults (store.FenceLimits).
	FenceLimits store.FenceLimits
}

func (cfg Config) resolveWait() time.Duration {
	if cfg.CommitResolveWait <= 0 {
		return 10 * time.Second
	}
	return cfg.CommitResolveWait
}

// DefaultConfig is the configuration of a single Strata deployment per account and
// region, and what the LocalStack init hook creates.
func DefaultConfig() Config {
	return Config{TablePrefix: "strata-", Bucket: "strata-segments"}
}

func (cfg Config) maxTransactItems() int {
	if cfg.MaxTransactItems <= 0 || cfg.MaxTransactItems > 100 {
		return 100
	}
	return cfg.MaxTransactItems
}

// Bootstrap creates the bucket (when s3client is non-nil and cfg.Bucket is set) and every
// table of Tables(), on-demand, with their streams, TTL and point-in-time recovery, and
// waits until the tables are ACTIVE. It is idempotent: what exists already is kept as it
// is. It is meant for emulators and development; in AWS the CDK stack creates the same
// resources from the same schema.
func Bootstrap(ctx context.Context, ddb *dynamodb.Client, s3client *awss3.Client, cfg Config) error {
	if s3client != nil && cfg.Bucket != "" {
		if err := strata3.CreateBucket(ctx, s3client, cfg.Bucket); err != nil {
			return fmt.Errorf("dynamo: bootstrap: %w", err)
		}
	}
	for _, ts := range Tables() {
		name := cfg.TableName(ts.Suffix)
		out, err := ddb.CreateTable(ctx, createTableInput(cfg, ts))
		var inUse *types.ResourceInUseException
		created := err == nil
		if err != nil && !errors.As(err, &inUse) {
			return mapError("bootstrap: create table "+name, err)
		}
		if !created || out.TableDescription == nil || out.TableDescription.TableStatus != types.TableStatusActive {
			waiter := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) {
				o.MinDelay, o.MaxDelay = 200*time.Millisecond, 2*time.Second
			})
			if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
				return fmt.Errorf("dynamo: bootstrap: wait for table %s: %w", name, err)
			}
		}
		if err := enableTTL(ctx, ddb, name, ts.TTLAttribute, created); err != nil {
			return err
		}
		if ts.PointInTimeRecovery {
			_, err := ddb.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{
				TableName: aws.String(name),
				PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{
					PointInTimeRecoveryEnabled: aws.Bool(true),
				},
			})
			if err != nil {
				return mapError("bootstrap: enable point-in-time recovery on "+name, err)
			}
		}
	}
	return nil
}

func createTableInput(cfg Config, ts TableSchema) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(cfg.TableName(ts.Suffix)),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{
			AttributeName: aws.String(ts.PartitionKey.Name),
			AttributeType: types.ScalarAttributeType(ts.PartitionKey.Type),
		}},
		KeySchema: []types.KeySchemaElement{{
			AttributeName: aws.String(ts.PartitionKey.Name),
			KeyType:       types.KeyTypeHash,
		}},
	}
	if ts.SortKey.Name != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(ts.SortKey.Name),
			AttributeType: types.ScalarAttributeType(ts.SortKey.Type),
		})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{
			AttributeName: aws.String(ts.SortKey.Name),
			KeyType:       types.KeyTypeRange,
		})
	}
	if ts.Stream != "" {
		in.StreamSpecification = &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewType(ts.Stream),
		}
	}
	return in
}

// enableTTL turns on TTL for attr unless it is already on (DynamoDB refuses to enable it
// twice); a table just created has it off, so fresh skips the check.
func enableTTL(ctx context.Context, ddb *dynamodb.Client, table, attr string, fresh bool) error {
	if attr == "" {
		return nil
	}
	if !fresh {
		desc, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
		if err != nil {
			return mapError("bootstrap: describe TTL of "+table, err)
		}
		if d := desc.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attr &&
			(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
			return nil
		}
	}
	_, err := ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return mapError("bootstrap: enable TTL on "+table, err)
	}
	return nil
}

// Teardown deletes every table of Tables() under cfg.TablePrefix; missing tables are
// fine. It does not wait for the deletions to finish nor touch the bucket. Tests use it.
func Teardown(ctx context.Context, ddb *dynamodb.Client, cfg Config) error {
	var errs []error
	for _, ts := range Tables() {
		_, err := ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(cfg.TableName(ts.Suffix))})
		var missing *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &missing) {
			errs = append(errs, mapError("teardown: delete table "+cfg.TableName(ts.Suffix), err))
		}
	}
	return errors.Join(errs...)
}
