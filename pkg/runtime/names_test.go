package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

// TestKafkaNamesAndCommitMetadataHTTP: through the assembled server, on both backends,
// a Kafka-style topic name ("_connect-configs", 249 characters) and a hostile group id
// ('#', '/', a space, non-ASCII letters, percent-encoded in the path) lease and commit;
// a commit's metadata comes back in its answer and the group's description; a
// backward commit is refused unless asked for, then accepted from the owner; and
// metadata over wire.MaxCommitMetadata bytes is 400 and changes nothing.
func TestKafkaNamesAndCommitMetadataHTTP(t *testing.T) {
	for _, backend := range []string{"local", "aws"} {
		t.Run(backend, func(t *testing.T) {
			cfg := runtime.Config{Node: node.Config{DataDir: t.TempDir()}}
			if backend == "aws" {
				emulatorEnv(t)
				dcfg := emulatedTables(t, "nm")
				cfg = runtime.Config{Node: node.Config{Backend: node.BackendAWS,
					AWS: node.AWSConfig{Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}}}
			}
			rt, c, _ := start(t, cfg)
			testKafkaNames(t, rt, c)
		})
	}
}

func testKafkaNames(t *testing.T, rt *runtime.Runtime, c *client.Client) {
	ctx := context.Background()
	long := "." + strings.Repeat("x", wire.MaxNameLength-1)
	for _, name := range []string{"_connect-configs", long} {
		if _, err := c.CreateTopic(ctx, name, client.TopicConfig{Partitions: 1}); err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
		recs := make([]client.Record, 10)
		for i := range recs {
			p := int32(0)
			recs[i] = client.Record{Value: []byte("v"), Partition: &p}
		}
		if _, err := c.Append(ctx, name, recs, client.AppendOptions{}); err != nil {
			t.Fatalf("append to %q: %v", name, err)
		}
	}
	for _, bad := range []string{".", "..", "a#b", strings.Repeat("x", wire.MaxNameLength+1)} {
		if _, err := c.CreateTopic(ctx, bad, client.TopicConfig{Partitions: 1}); !errors.Is(err, client.ErrInvalid) && !errors.Is(err, client.ErrNotFound) {
			t.Errorf("create %q: %v, want refused", bad, err)
		}
	}

	const group = "a#b/c d ä 消费 %2F"
	topic := "_connect-configs"
	l, err := c.Lease(ctx, group, topic, 0, "m-1", 10*time.Second)
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	ref := client.TopicRef(topic, l.Incarnation)
	if _, err := c.CommitAt(ctx, group, ref, 0, "m-1", l.Generation, 8, client.CommitOptions{Metadata: "first"}); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// The contract's own JSON, on the percent-encoded path.
	path := "/v1/groups/" + url.PathEscape(group) + "/topics/" + topic + "/partitions/0/commit"
	post := func(body map[string]any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(rt.URL()+path, "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}
	base := func(next int64) map[string]any {
		return map[string]any{"member": "m-1", "generation": l.Generation, "next_offset": next, "incarnation": l.Incarnation}
	}
	if code, out := post(base(3)); code != http.StatusConflict {
		t.Fatalf("backward commit without asking: %d %v, want 409", code, out)
	}
	b := base(3)
	b["allow_backward"], b["metadata"] = true, "seek to 3 ä"
	if code, out := post(b); code != http.StatusOK || out["committed_offset"] != float64(3) || out["metadata"] != "seek to 3 ä" {
		t.Fatalf("backward commit: %d %v, want 200 with the metadata", code, out)
	}
	b = base(4)
	b["metadata"] = strings.Repeat("m", wire.MaxCommitMetadata+1)
	if code, out := post(b); code != http.StatusBadRequest {
		t.Fatalf("commit with %d bytes of metadata: %d %v, want 400", wire.MaxCommitMetadata+1, code, out)
	}

	g, err := c.DescribeGroup(ctx, group)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if g.Name != group || len(g.Partitions) != 1 || g.Partitions[0].Topic != topic || g.Partitions[0].CommittedOffset == nil ||
		*g.Partitions[0].CommittedOffset != 3 || g.Partitions[0].Metadata != "seek to 3 ä" {
		t.Fatalf("describe = %+v %+v, want %q at 3 with its metadata", g, g.Partitions, group)
	}

	// The group id is one group: its neighbours in a naive key are empty.
	for _, other := range []string{"a", "a#b", "a%23b%2Fc%20d"} {
		if g, err := c.DescribeGroup(ctx, other); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("describe %q: %+v, %v; want not found", other, g, err)
		}
	}

	// An obsolete generation stays fenced, backward or not.
	if _, err := c.Lease(ctx, group, topic, 0, "m-1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitAt(ctx, group, ref, 0, "m-1", l.Generation, 1, client.CommitOptions{AllowBackward: true}); !errors.Is(err, client.ErrFenced) {
		t.Fatalf("backward commit of an obsolete generation: %v, want ErrFenced", err)
	}
}
