package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// FuzzConn feeds an arbitrary byte stream to the pipelined connection loop (serveConn)
// on a live log with group commit: it never panics or hangs, and every answer it writes
// is one frame, in the order of the requests whose correlation ids it carries.
func FuzzConn(f *testing.F) {
	ctx := context.Background()
	st := backendtest.Local(ctx, f)
	l, err := log.New(log.Config{Objects: st.Objects, Meta: st.Meta, GroupCommitWindow: time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "t", 2, 0); err != nil {
		f.Fatal(err)
	}
	frames := func(reqs ...kmsg.Request) []byte {
		var out []byte
		for i, r := range reqs {
			out = append(out, kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, r, int32(i+1))...)
		}
		return out
	}
	produce := func(p int32, seq int32) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = testBatch(f, codecNone, []kmsg.Record{rec("", "v")}, func(b *kmsg.RecordBatch) {
			b.ProducerID, b.ProducerEpoch, b.FirstSequence = 1, 0, seq
		}, true)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis, fetch.MinBytes = 20, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	f.Add(frames(produce(0, 0), md, produce(0, 1), produce(1, 0), fetch, av, produce(0, 5)))
	f.Add(frames(av, md))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})

	f.Fuzz(func(t *testing.T, stream []byte) {
		s, err := New(Config{Log: l})
		if err != nil {
			t.Fatal(err)
		}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serveConn(server, broker{host: "127.0.0.1", port: 9092})
			_ = server.Close()
		}()
		answers := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(client)
			answers <- b
		}()
		go func() {
			_, _ = client.Write(stream)
			// Give the answers time to come, then end the connection's requests.
			time.Sleep(20 * time.Millisecond)
			_ = s.Close()
			_ = client.Close()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection loop did not end")
		}
		out := <-answers
		// The requests' correlation ids, in stream order, as far as the stream frames.
		var ids []int32
		for in := stream; len(in) >= 4; {
			n := int(int32(binary.BigEndian.Uint32(in)))
			if n < minFrame || n > len(in)-4 {
				break
			}
			ids = append(ids, int32(binary.BigEndian.Uint32(in[8:])))
			in = in[4+n:]
		}
		for len(out) > 0 {
			if len(out) < 8 {
				t.Fatalf("%d bytes left over after the answers", len(out))
			}
			n := int(binary.BigEndian.Uint32(out))
			if n < 4 || n > len(out)-4 {
				t.Fatalf("an answer of %d bytes in %d", n, len(out)-4)
			}
			corr := int32(binary.BigEndian.Uint32(out[4:]))
			// Each answer answers a later request than the one before (some get none).
			for len(ids) > 0 && ids[0] != corr {
				ids = ids[1:]
			}
			if len(ids) == 0 {
				t.Fatalf("answer with correlation id %d is not the answer of a request after the last answered", corr)
			}
			ids = ids[1:]
			out = out[4+n:]
		}
	})
}
