package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestConsumeGroupParks: `strata consume --group` on a group whose on_failure is park
// is a parking member over HTTP: a key the group parked has its later records forwarded
// to GROUP.parked, not printed, while the other keys print; released with `strata
// groups release`, the next run prints the key's parked records in their order and
// unparks it. Before the member-side parked routes it refused to run
// (consumer.ErrParkingUnsupported).
func TestConsumeGroupParks(t *testing.T) {
	url := startNode(t, runtime.Config{})
	ctx := context.Background()
	cli(t, url, "", "topics", "create", "orders", "--partitions", "1")
	cli(t, url, "", "groups", "settings", "refunds", "--reset-policy", "earliest", "--max-attempts", "1", "--on-failure", "park")
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	var recs []client.Record
	for _, kv := range [][2]string{{"bad", "b0"}, {"ok", "o1"}, {"bad", "b2"}, {"ok", "o3"}, {"bad", "b4"}} {
		recs = append(recs, client.Record{Key: []byte(kv[0]), Value: []byte(kv[1]), Partition: &p})
	}
	if _, err := c.Append(ctx, "orders", recs, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// The group's member parked key "bad" at offset 0 (its handler failed there) and
	// stopped before forwarding the record: the row is what the next member reads.
	l, err := c.Lease(ctx, "refunds", "orders", 0, "earlier-member", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutParked(ctx, "refunds", "orders", 0, "earlier-member", l.Generation, client.ParkedRow{Key: []byte("bad"),
		FirstOffset: 0, LastOffset: 0, Records: 1, Error: "refund declined", Attempts: 1, ParkedAt: time.UnixMilli(1), ParkOffset: -1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "refunds", "orders", 0, "earlier-member", l.Generation); err != nil {
		t.Fatal(err)
	}

	out, errOut, err := cliCtx(ctx, "", "--url", url, "consume", "orders", "--group", "refunds", "--until-caught-up", "--partition", "0")
	if err != nil || strings.Contains(out, "b0") || strings.Contains(out, "b2") || strings.Contains(out, "b4") ||
		!strings.Contains(out, "o1") || !strings.Contains(out, "o3") {
		t.Fatalf("consume on a parking group: %v\nstdout %q\nstderr %q\nwant the ok records printed and the parked key's forwarded", err, out, errOut)
	}
	parked := cli(t, url, "", "groups", "parked", "refunds")
	if !strings.Contains(parked, "bad") || !strings.Contains(parked, "refund declined") {
		t.Fatalf("groups parked: %q", parked)
	}
	if got := firstTable(cli(t, url, "", "groups", "describe", "refunds")); len(got) != 2 || strings.Fields(got[1])[8] != "1" {
		t.Fatalf("groups describe: %q, want PARKED 1 on orders/0", got)
	}
	keys, err := c.ParkedKeys(ctx, "refunds")
	if err != nil || len(keys) != 1 || keys[0].Records != 3 {
		t.Fatalf("parked keys %+v, %v; want bad with its 3 records", keys, err)
	}
	pt, err := c.DescribeTopic(ctx, "refunds.parked")
	if err != nil {
		t.Fatal(err)
	}
	var inParking []string
	for pp := range pt.Partitions {
		res, err := c.Poll(ctx, "refunds.parked", pp, 0, client.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			inParking = append(inParking, string(r.Value))
		}
	}
	if strings.Join(inParking, ",") != "b0,b2,b4" {
		t.Fatalf("refunds.parked holds %v, want b0,b2,b4", inParking)
	}

	cli(t, url, "", "groups", "release", "refunds", "--topic", "orders", "--key", "bad")
	out, errOut, err = cliCtx(ctx, "", "--url", url, "consume", "orders", "--group", "refunds", "--until-caught-up", "--partition", "0")
	if err != nil {
		t.Fatalf("consume after the release: %v (stderr %q)", err, errOut)
	}
	i0, i2, i4 := strings.Index(out, "b0"), strings.Index(out, "b2"), strings.Index(out, "b4")
	if i0 < 0 || i0 > i2 || i2 > i4 || strings.Contains(out, "o1") {
		t.Fatalf("after the release printed %q, want b0, b2, b4 in order and nothing else of the topic again", out)
	}
	if keys, err := c.ParkedKeys(ctx, "refunds"); err != nil || len(keys) != 0 {
		t.Fatalf("parked keys after the replay: %+v, %v; want none", keys, err)
	}
}
