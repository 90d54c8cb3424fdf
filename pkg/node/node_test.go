package node_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// TestOpenBuildsOnlyWhatIsAsked: the stores always, the log, the coordinator and the
// retention pass only when asked.
func TestOpenBuildsOnlyWhatIsAsked(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		parts               node.Parts
		log, groups, retain bool
	}{
		{0, false, false, false},
		{node.PartRetention, false, false, true},
		{node.PartLog, true, false, false},
		{node.PartGroups, true, true, false},
	} {
		n, err := node.Open(ctx, node.Config{DataDir: t.TempDir()}, c.parts)
		if err != nil {
			t.Fatal(err)
		}
		if n.Objects() == nil || n.Meta() == nil {
			t.Errorf("parts %b: no stores", c.parts)
		}
		if (n.Log() != nil) != c.log || (n.Coordinator() != nil) != c.groups {
			t.Errorf("parts %b: log %v, coordinator %v", c.parts, n.Log() != nil, n.Coordinator() != nil)
		}
		if _, err := n.RunRetention(ctx); (err == nil) != c.retain {
			t.Errorf("parts %b: retention %v", c.parts, err)
		}
		if _, ok := n.AWS(); ok {
			t.Errorf("parts %b: an AWS configuration on the local backend", c.parts)
		}
		if err := errors.Join(n.Close(), n.Close()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]node.Config{
		"unknown backend":       {Backend: "nope", DataDir: t.TempDir()},
		"no data directory":     {},
		"default above maximum": {DataDir: t.TempDir(), Topics: log.TopicDefaults{MaxRetention: time.Hour}},
	} {
		if _, err := node.Open(ctx, cfg, node.PartLog); !errors.Is(err, node.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// TestOpenAWS: the aws backend on the emulator, bootstrapped, with the topic defaults
// applied by its log; the SDK configuration is loaded once and shared.
func TestOpenAWS(t *testing.T) {
	ctx := context.Background()
	sdk := awstest.Config(ctx, t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	dcfg := dynamo.Config{TablePrefix: "node-" + id + "-", Bucket: "node-" + id}
	t.Cleanup(func() {
		_ = dynamo.Teardown(ctx, awstest.DynamoDBClient(ctx, t), dcfg)
		_ = s3store.DeleteBucket(ctx, awstest.S3Client(ctx, t), dcfg.Bucket)
	})
	n, err := node.Open(ctx, node.Config{Backend: node.BackendAWS, Topics: log.TopicDefaults{Partitions: 2, MaxRetention: 48 * time.Hour},
		AWS: node.AWSConfig{SDK: &sdk, Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}}, node.PartGroups|node.PartRetention)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if _, ok := n.AWS(); !ok {
		t.Error("no AWS configuration on the aws backend")
	}
	tp, err := n.Log().CreateTopic(ctx, "orders", 0, 0)
	if err != nil || tp.Partitions != 2 {
		t.Fatalf("%+v, %v", tp, err)
	}
	if _, err := n.Log().CreateTopic(ctx, "long", 1, 72*time.Hour); !errors.Is(err, log.ErrInvalid) {
		t.Fatalf("72h on a 48h maximum: %v", err)
	}
	p := int32(1)
	if _, err := n.Log().Append(ctx, "orders", []log.Record{{Value: []byte("x"), Partition: &p}}, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
}
