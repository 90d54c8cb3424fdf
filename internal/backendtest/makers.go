package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"

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
func AWS(ctx context.Context, t testing.TB) Stores {
	t.Helper()
	awstest.Endpoint(t) // skips or fails when the emulator is absent
	s3c := awstest.S3Client(ctx, t)
	ddb := awstest.DynamoDBClient(ctx, t)
	id := randomID()
	cfg := dynamo.Config{TablePrefix: "t" + id + "-", Bucket: "strata-test-" + id}
	if err := dynamo.Bootstrap(ctx, ddb, s3c, cfg); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if err := s3store.DeleteBucket(ctx, s3c, cfg.Bucket); err != nil {
			t.Errorf("cleanup bucket %s: %v", cfg.Bucket, err)
		}
		if err := dynamo.Teardown(ctx, ddb, cfg); err != nil {
			t.Errorf("cleanup tables %s*: %v", cfg.TablePrefix, err)
		}
	})
	return Stores{Name: "aws", Objects: s3store.New(s3c, cfg.Bucket, ""), Meta: dynamo.New(ddb, cfg)}
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
