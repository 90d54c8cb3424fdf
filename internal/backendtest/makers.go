package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	"github.com/stratalog/strata/pkg/store/local"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// Local makes stores in a fresh temp dir.
func Local(ctx context.Context, t testing.TB) Stores {
	t.Helper()
	dir := t.TempDir()
	objs, err := local.NewObjectStore(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := local.OpenMetaStore(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	return Stores{Name: "local", Objects: objs, Meta: meta}
}

// AWS makes a fresh bucket and tables (random prefix) on the emulator and removes them
// when the test ends.
func AWS(ctx context.Context, t testing.TB) Stores { return AWSWith(ctx, t, nil) }

// AWSWith is AWS with the clients' configuration adjusted by adjust (e.g. a request
// counter or an injected fault) when it is not nil.
func AWSWith(ctx context.Context, t testing.TB, adjust func(*aws.Config)) Stores {
	t.Helper()
	awstest.Endpoint(t) // skips or fails when the emulator is absent
	cfg := awstest.Config(ctx, t)
	if adjust != nil {
		adjust(&cfg)
	}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	ddb := dynamodb.NewFromConfig(cfg)
	id := randomID()
	dcfg := dynamo.Config{TablePrefix: "t" + id + "-", Bucket: "strata-test-" + id}
	if err := dynamo.Bootstrap(ctx, ddb, s3c, dcfg); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if err := s3store.DeleteBucket(ctx, s3c, dcfg.Bucket); err != nil {
			t.Errorf("cleanup bucket %s: %v", dcfg.Bucket, err)
		}
		if err := dynamo.Teardown(ctx, ddb, dcfg); err != nil {
			t.Errorf("cleanup tables %s*: %v", dcfg.TablePrefix, err)
		}
	})
	return Stores{Name: "aws", Objects: s3store.New(s3c, dcfg.Bucket, ""), Meta: dynamo.New(ddb, dcfg),
		Commits: dynamo.NewCommitStream(ddb, dynamodbstreams.NewFromConfig(cfg), dcfg).Run}
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
