package kafkacompat_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/kafkaref"
)

// TestConnectFileSource: a Kafka Connect standalone worker (connect-runtime 4.3, offsets
// in a local file) runs the FileStreamSource connector, which writes a file's lines into
// a Strata topic through the gateway; the topic then holds the lines in order.
func TestConnectFileSource(t *testing.T) {
	cp := kafkaref.ClasspathT(t)
	g := startGateway(t)
	gw := target{name: "strata", addr: g.addr}
	topic := uniqueName(t)
	createTopic(t, kadm.NewClient(gw.client(t)), topic, 1)
	dir := t.TempDir()
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("line %d of the source file", i))
	}
	input := filepath.Join(dir, "input.txt")
	must(t, os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644), "input")
	rest, err := kafkaref.FreePort()
	must(t, err, "port")
	_, idempotent := advertised(t, gw.addr)[keyInitProducerID]
	worker := strings.Join([]string{
		"bootstrap.servers=" + gw.addr,
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms=1000",
		fmt.Sprintf("listeners=http://127.0.0.1:%d", rest),
		fmt.Sprintf("producer.enable.idempotence=%v", idempotent),
		"plugin.discovery=only_scan",
	}, "\n")
	connector := strings.Join([]string{
		"name=file-source",
		"connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max=1",
		"file=" + input,
		"topic=" + topic,
	}, "\n")
	wp, cpath := filepath.Join(dir, "worker.properties"), filepath.Join(dir, "connector.properties")
	must(t, os.WriteFile(wp, []byte(worker), 0o644), "worker config")
	must(t, os.WriteFile(cpath, []byte(connector), 0o644), "connector config")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := kafkaref.JavaCommand(ctx, cp, []string{"-Xmx384m", "-XX:+UseSerialGC"}, "org.apache.kafka.connect.cli.ConnectStandalone", wp, cpath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start(), "start connect-standalone")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	cl := gw.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer rcancel()
	var got []string
	for len(got) < len(lines) {
		select {
		case err := <-exited:
			t.Fatalf("connect-standalone exited (%v) after %d of %d lines\n%s", err, len(got), len(lines), lastLines(out.String(), 60))
		default:
		}
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("read %d of %d lines\n%s", len(got), len(lines), lastLines(out.String(), 60))
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Errorf("the topic holds\n%s\nwant the file's lines\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
	}
}
