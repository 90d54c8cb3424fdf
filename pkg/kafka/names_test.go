package kafka_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestKafkaNamesAndHostileGroup: on both backends, Kafka Connect's internal topic names
// are created, and a group id holding '#', '/', spaces and non-ASCII letters commits
// and fetches offsets with metadata as its own group (its neighbours in a naive key see
// nothing); the empty group id is INVALID_GROUP_ID.
func TestKafkaNamesAndHostileGroup(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		adm := kadm.NewClient(g.client(t))
		ctx := ctxT(t)
		for _, name := range []string{"_connect-configs", "__connect-offsets", ".status"} {
			createTopic(t, adm, name, 1)
		}
		p0 := int32(0)
		if _, err := g.log.Append(ctx, "_connect-configs", []log.Record{{Value: []byte("a"), Partition: &p0}, {Value: []byte("b"), Partition: &p0}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		const grp = "connect#cluster/1 ä 🙂"
		os := kadm.Offsets{"_connect-configs": {0: {Topic: "_connect-configs", Partition: 0, At: 2, LeaderEpoch: -1, Metadata: "m ä"}}}
		if resp, err := adm.CommitOffsets(ctx, grp, os); err != nil || resp.Error() != nil {
			t.Fatalf("commit: %v %v", err, resp.Error())
		}
		resp, err := adm.FetchOffsets(ctx, grp)
		if err == nil {
			err = resp.Error()
		}
		if o, ok := resp.Lookup("_connect-configs", 0); err != nil || !ok || o.At != 2 || o.Metadata != "m ä" {
			t.Fatalf("fetch: %+v %v (%v)", o, ok, err)
		}
		for _, other := range []string{"connect", "connect#cluster", "connect%23cluster%2F1 ä 🙂"} {
			resp, err := adm.FetchOffsets(ctx, other)
			if _, ok := resp.Lookup("_connect-configs", 0); err != nil || ok {
				t.Errorf("group %q sees %v (%v), want no offsets", other, resp, err)
			}
		}
		resp, err = adm.FetchOffsets(ctx, "")
		if err == nil {
			err = resp.Error()
		}
		if !errors.Is(err, kerr.InvalidGroupID) {
			t.Errorf("fetch of the empty group: %v, want INVALID_GROUP_ID", err)
		}
	})
}
