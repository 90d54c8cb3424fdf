package stackrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/awsfault"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// crashedAppender plays an api host that dies after an idempotent append's commit,
// before its index entry and its claim: a node on the stack's tables and bucket (the
// api function's settings), straight to the emulator, every DynamoDB PutItem refused.
// Dispatch, run by the stream mapping under its own role, must then index the commit —
// reading the batch object's members table to make the claim — so the record becomes
// readable through the API. It returns the topic it appended to.
func crashedAppender(ctx context.Context, t *testing.T, st *stackrun.Stack, c *client.Client) string {
	t.Helper()
	const topic = "crashed"
	if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	env := st.Function("Strata api").Env
	cfg, err := node.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	faults, err := awsfault.New(awsfault.Config{Rate: 1, Faults: []awsfault.Fault{{Kind: awsfault.Status500, Phase: awsfault.Before}},
		Services: []string{"DynamoDB"}, Operations: []string{"DynamoDB.PutItem"}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend, cfg.AWS.Endpoint, cfg.AWS.Faults, cfg.AWS.Bootstrap = "aws", awstest.Endpoint(t), faults, false
	n, err := node.Open(ctx, cfg, node.PartLog)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	block, err := segment.EncodeBlock([]segment.Record{{Timestamp: time.Now().UnixMilli(), Key: []byte("k"), Value: []byte("committed, then the host died")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Log().AppendBlocks(ctx, topic, []log.Block{{Partition: 0, Data: block}}, log.AppendOptions{IdempotencyKey: "crashed-1"}); err == nil {
		t.Fatal("the append with every PutItem refused succeeded: the crash was not simulated")
	}
	return topic
}
