package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// crashDirEnv names the data directory of the writer process TestKill9KeepsAcknowledgedWrites
// starts, and crashStoreEnv its object store: "packs" (PackStore) or "files" (ObjectStore).
const (
	crashDirEnv   = "STRATA_LOCAL_CRASH_DIR"
	crashStoreEnv = "STRATA_LOCAL_CRASH_STORE"
)

// openObjects opens the object store kind names ("packs" or "files") in dir.
func openObjects(t testing.TB, kind, dir string) store.ObjectStore {
	t.Helper()
	var objs store.ObjectStore
	var err error
	if kind == "packs" {
		objs, err = openPacks(context.Background(), t, dir)
	} else {
		objs, err = NewObjectStore(dir)
	}
	if err != nil {
		t.Fatalf("open %s: %v", kind, err)
	}
	return objs
}

func crashPayload(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("record-%06d;", i)), 64+i%97)
}

// TestCrashWriter is the writer process: it appends forever, each step an object Put, an
// index entry and a commit, and prints "ack N" only after all three returned.
func TestCrashWriter(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestKill9KeepsAcknowledgedWrites")
	}
	ctx := context.Background()
	objs := openObjects(t, os.Getenv(crashStoreEnv), filepath.Join(dir, "objects"))
	meta, err := OpenMetaStore(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := meta.AcquireLease(ctx, "g", "t", 0, "writer", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		data := crashPayload(i)
		key := fmt.Sprintf("v1/t/%06d", i)
		if err := objs.Put(ctx, key, data, store.Kept); err != nil {
			t.Fatal(err)
		}
		e := store.IndexEntry{Topic: "t", Partition: 0, BaseOffset: int64(i), Count: 1, ObjectKey: key, ByteLength: int64(len(data)), AppendedAt: t0}
		if err := meta.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		c := store.CommitRow{Group: "g", Topic: "t", Partition: 0, NextOffset: int64(i + 1), Generation: a.Generation, CommittedAt: t0}
		if err := meta.Commit(ctx, c, "writer"); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "ack %d\n", i)
	}
}

// TestKill9KeepsAcknowledgedWrites kills a writer process with SIGKILL mid-stream and
// checks, for each object store, that every write it acknowledged is readable after
// reopening, that the bbolt file opens cleanly, and that no object is visible half-written.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, kind := range []string{"packs", "files"} {
		t.Run(kind, func(t *testing.T) { testKill9(t, kind) })
	}
}

func testKill9(t *testing.T, kind string) {
	ctx := context.Background()
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStoreEnv+"="+kind)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 20 + round*37
		acked := -1
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "ack ") {
				continue
			}
			n, err := strconv.Atoi(strings.TrimPrefix(line, "ack "))
			if err != nil || n != acked+1 {
				t.Fatalf("writer printed %q after ack %d", line, acked)
			}
			acked = n
			if acked == killAfter {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		_ = cmd.Wait()
		if acked != killAfter {
			t.Fatalf("round %d: writer stopped at ack %d before the kill", round, acked)
		}

		objs := openObjects(t, kind, filepath.Join(dir, "objects"))
		meta, err := OpenMetaStore(filepath.Join(dir, "meta.db"))
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		entries, err := meta.IndexEntries(ctx, "t", 0, 0, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) < acked+1 {
			t.Fatalf("round %d: %d index entries after kill, %d acknowledged", round, len(entries), acked+1)
		}
		for i, e := range entries {
			if e.BaseOffset != int64(i) {
				t.Fatalf("round %d: entry %d has base %d", round, i, e.BaseOffset)
			}
			got, err := objs.GetRange(ctx, e.ObjectKey, 0, e.ByteLength)
			if err != nil || !bytes.Equal(got, crashPayload(i)) {
				t.Fatalf("round %d: object of entry %d: %v", round, i, err)
			}
		}
		c, err := meta.GetCommit(ctx, "g", "t", 0)
		if err != nil || c.NextOffset < int64(acked+1) {
			t.Fatalf("round %d: commit after kill = %+v, %v; acknowledged up to %d", round, c, err, acked+1)
		}
		// Objects past the last entry may exist (put, then killed before the index
		// write); each must still be whole.
		err = objs.List(ctx, "v1/t/", func(oi store.ObjectInfo) error {
			i, err := strconv.Atoi(strings.TrimPrefix(oi.Key, "v1/t/"))
			if err != nil {
				return err
			}
			if want := crashPayload(i); oi.Size != int64(len(want)) {
				return fmt.Errorf("object %s has %d bytes, want %d", oi.Key, oi.Size, len(want))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := meta.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
