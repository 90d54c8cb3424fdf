package stackrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// purgedByRetentionRole deletes a compacted topic a group consumed and parked a key on,
// then runs the retention job's purge of it with the retention function's settings,
// through that function's IAM-checking proxy, with a clock past the purge margin (the
// function's own pass would wait 5 minutes): every request the purge makes must be one
// its role allows, and the purge must remove the group's position and parked key and
// the topic's key index rows. Denials are reported through st.Denials().
func purgedByRetentionRole(ctx context.Context, t *testing.T, st *stackrun.Stack, c *client.Client) {
	t.Helper()
	const topic, groupName = "purged", "purge-readers"
	if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1, Cleanup: client.CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"o-1", "o-2"}
	for _, k := range keys {
		if _, err := c.Append(ctx, topic, []client.Record{{Key: []byte(k), Value: []byte("v")}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The group's position and a parked key, written as the api would, straight to
	// the emulator.
	open := func(desc, endpoint string) *node.Node {
		t.Helper()
		env := st.Function(desc).Env
		cfg, err := node.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Backend, cfg.AWS.Endpoint, cfg.AWS.Bootstrap = "aws", endpoint, false
		n, err := node.Open(ctx, cfg, node.PartGroups)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	}
	api := open("Strata api", awstest.Endpoint(t))
	id, err := api.Log().TopicID(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	coord := api.Coordinator()
	l, err := coord.Acquire(ctx, groupName, topic, 0, "m", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := coord.Commit(ctx, groupName, topic, 0, "m", l.Generation, 1); err != nil {
		t.Fatal(err)
	}
	parked := store.ParkedKey{Group: groupName, Topic: id, Partition: 0, Key: []byte("o-1"), Records: 1, ParkedAt: time.Now(), ParkOffset: -1}
	if err := api.Meta().(store.ParkStore).PutParked(ctx, parked, "m", l.Generation); err != nil {
		t.Fatal(err)
	}
	if err := coord.Release(ctx, groupName, topic, 0, "m", l.Generation); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}

	ret := st.Function("Strata retention")
	n := open("Strata retention", ret.Proxy.URL())
	job := retention.Job{Meta: n.Meta(), Objects: n.Objects(), Clock: func() time.Time { return time.Now().Add(10 * time.Minute) }}
	stats, err := job.RunDeleted(ctx)
	if err != nil {
		t.Fatalf("the purge under the retention function's role: %v", err)
	}
	if stats.TopicsPurged < 1 || stats.KeysDeleted != len(keys) || stats.ParkedDeleted != 1 {
		t.Fatalf("the purge under the retention function's role: %+v; want the topic, its %d key rows and 1 parked key", stats, len(keys))
	}
	if _, err := api.Meta().GetCommit(ctx, groupName, id, 0); err == nil {
		t.Fatalf("the group's position on the purged topic survived")
	}
	if rows, err := api.Meta().(store.ParkStore).ListParked(ctx, groupName); err != nil || len(rows) != 0 {
		t.Fatalf("parked keys after the purge: %+v, %v", rows, err)
	}
}
