package main

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/pkg/client"
)

// TestDevKafka: `strata dev --kafka` serves the Kafka protocol beside the HTTP API on
// one data directory: a record produced with franz-go is read over HTTP, one appended
// over HTTP is fetched with franz-go, and the command exits cleanly when cancelled.
func TestDevKafka(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"dev", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka", "127.0.0.1:0", "--console=false", "--retention-interval", "1h"})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	lines := regexp.MustCompile(`(?s)^listening on (http://127\.0\.0\.1:[0-9]+)\nkafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = lines.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata dev printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	c, err := client.New(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "both", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[2]), kgo.DefaultProduceTopic("both"), kgo.ConsumeTopics("both"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Key: []byte("k"), Value: []byte("from kafka")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, "both", []client.Record{{Value: []byte("from http")}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Poll(ctx, "both", 0, 0, client.PollOptions{})
	if err != nil || len(res.Records) != 2 || string(res.Records[0].Value) != "from kafka" || string(res.Records[0].Key) != "k" {
		t.Fatalf("HTTP poll: %+v, %v", res, err)
	}
	var got []string
	for len(got) < 2 && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[1] != "from http" {
		t.Fatalf("franz-go read %q", got)
	}
	cl.Close()
	// A group member reads both through the gateway's group protocol and commits them
	// as the group's Strata commit.
	gcl, err := kgo.NewClient(kgo.SeedBrokers(m[2]), kgo.ConsumerGroup("dev-group"), kgo.ConsumeTopics("both"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for len(got) < 2 && pctx.Err() == nil {
		fs := gcl.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if err := gcl.CommitUncommittedOffsets(pctx); err != nil || len(got) != 2 {
		t.Fatalf("group member read %q, commit: %v", got, err)
	}
	gcl.Close()
	if g, err := c.DescribeGroup(ctx, "dev-group"); err != nil || len(g.Partitions) != 1 || g.Partitions[0].CommittedOffset == nil || *g.Partitions[0].CommittedOffset != 2 {
		t.Fatalf("Strata's describe of the Kafka group: %+v, %v", g, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata dev exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata dev still running 10 s after cancel")
	}
}

// TestDevKafkaRefusesAuth: --kafka with --auth is refused, since the gateway has no
// authentication to enforce the grants with.
func TestDevKafkaRefusesAuth(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"dev", "--data-dir", t.TempDir(), "--kafka", "127.0.0.1:0", "--auth", "tokens.yaml"})
	root.SetOut(&syncBuffer{})
	root.SetErr(&syncBuffer{})
	err := root.ExecuteContext(context.Background())
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want a usage error", err)
	}
}

// TestKafkaCommand: `strata kafka` opens the node on its data directory, announces its
// address, serves topic administration, produce and fetch, and exits cleanly when
// cancelled.
func TestKafkaCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := newRootCmd()
	root.SetArgs([]string{"kafka", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--default-partitions", "2"})
	root.SetOut(out)
	root.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	line := regexp.MustCompile(`^kafka listening on (127\.0\.0\.1:[0-9]+)\n$`)
	var m []string
	for deadline := time.Now().Add(15 * time.Second); m == nil; {
		if m = line.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("strata kafka printed %q (stderr %q)", out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.DefaultProduceTopic("k"), kgo.ConsumeTopics("k"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	resp, err := kadm.NewClient(cl).CreateTopic(pctx, -1, -1, nil, "k")
	if err != nil || resp.Err != nil || resp.NumPartitions != 2 {
		t.Fatalf("create: %+v %v", resp, err)
	}
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got []*kgo.Record
	for len(got) < 1 && pctx.Err() == nil {
		got = append(got, cl.PollFetches(pctx).Records()...)
	}
	if len(got) != 1 || string(got[0].Value) != "v" {
		t.Fatalf("read %+v", got)
	}
	cl.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("strata kafka exited with %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("strata kafka still running 10 s after cancel")
	}
}
