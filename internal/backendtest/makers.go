package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// Options adjust the stores a maker opens; the zero Options are a deployment's.
type Options struct {
	// FenceLimits bound a topic's producer retry fences (node.Config.FenceLimits).
	FenceLimits store.FenceLimits
}

// Local makes stores in a fresh temp dir, opened through pkg/node as every node's are.
func Local(ctx context.Context, t testing.TB) Stores { return localWith(ctx, t, Options{}) }

func localWith(ctx context.Context, t testing.TB, o Options) Stores {
	t.Helper()
	n, err := node.Open(ctx, node.Config{Backend: node.BackendLocal, DataDir: t.TempDir(), FenceLimits: o.FenceLimits}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	meta := n.Meta()
	return Stores{Name: "local", Objects: n.Objects(), Meta: meta, Effects: func(_ context.Context, t testing.TB) store.EffectStore {
		es, ok := meta.(store.EffectStore)
		if !ok {
			t.Fatalf("local meta store %T is no store.EffectStore", meta)
		}
		return es
	}}
}

// AWS makes a fresh bucket and tables (random prefix) on the emulator and removes them
// when the test ends.
func AWS(ctx context.Context, t testing.TB) Stores { return AWSWith(ctx, t, nil) }

// AWSWith is AWS with the clients' configuration adjusted by adjust (e.g. a request
// counter or an injected fault) when it is not nil. The stores are opened through
// pkg/node, bootstrapped.
func AWSWith(ctx context.Context, t testing.TB, adjust func(*aws.Config)) Stores {
	t.Helper()
	return awsWith(ctx, t, adjust, Options{})
}

func awsWith(ctx context.Context, t testing.TB, adjust func(*aws.Config), o Options) Stores {
	t.Helper()
	awstest.Endpoint(t) // skips or fails when the emulator is absent
	cfg := awstest.Config(ctx, t)
	if adjust != nil {
		adjust(&cfg)
	}
	id := randomID()
	dcfg := dynamo.Config{TablePrefix: "t" + id + "-", Bucket: "strata-test-" + id}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		clean := awstest.Config(ctx, t) // without the adjustments (no injected faults)
		if err := s3store.DeleteBucket(ctx, s3.NewFromConfig(clean, func(o *s3.Options) { o.UsePathStyle = true }), dcfg.Bucket); err != nil {
			t.Errorf("cleanup bucket %s: %v", dcfg.Bucket, err)
		}
		if err := dynamo.Teardown(ctx, dynamodb.NewFromConfig(clean), dcfg); err != nil {
			t.Errorf("cleanup tables %s*: %v", dcfg.TablePrefix, err)
		}
	})
	n, err := node.Open(ctx, node.Config{Backend: node.BackendAWS, FenceLimits: o.FenceLimits,
		AWS: node.AWSConfig{SDK: &cfg, Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}}, node.PartMaterializer)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	meta := n.Meta()
	effects := func(ctx context.Context, t testing.TB) store.EffectStore {
		t.Helper()
		dm, ok := meta.(*dynamo.MetaStore)
		if !ok {
			t.Fatalf("aws meta store %T is no *dynamo.MetaStore", meta)
		}
		table := dcfg.TablePrefix + "effects"
		client := dynamodb.NewFromConfig(cfg)
		if err := dynamo.CreateEffectsTable(ctx, client, table); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
				t.Errorf("cleanup table %s: %v", table, err)
			}
		})
		return dm.Effects(table)
	}
	return Stores{Name: "aws", Objects: n.Objects(), Meta: meta, Commits: n.CommitStream().Run, Effects: effects}
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
