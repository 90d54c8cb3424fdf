package retention_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// putExpired stores n segment objects of topic "r" named at t0 (expired once the
// fixture's clock is past t0 + 1h + margin), and returns their keys with, last, the key
// of a non-segment neighbour sharing their prefix that retention must leave alone.
func putExpired(t *testing.T, f *fixture, n int) (keys []string, neighbour string) {
	t.Helper()
	ctx := context.Background()
	tp, err := f.s.Meta.GetTopic(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := ulid.MustNew(ulid.Timestamp(t0), &countingEntropy{n: uint64(i)})
		k := segment.ObjectKey(tp.Name, tp.Incarnation, id)
		if err := f.s.Objects.Put(ctx, k, []byte{byte(i)}, store.Kept); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	neighbour = segment.ObjectPrefix(tp.Name, tp.Incarnation) + "not-a-segment"
	if err := f.s.Objects.Put(ctx, neighbour, []byte("keep"), store.Kept); err != nil {
		t.Fatal(err)
	}
	return keys, neighbour
}

// countingEntropy makes ULIDs of one millisecond distinct and ordered.
type countingEntropy struct{ n uint64 }

func (e *countingEntropy) Read(p []byte) (int, error) {
	clear(p)
	for i := len(p) - 1; i >= 0 && e.n > 0; i-- {
		p[i] = byte(e.n)
		e.n >>= 8
	}
	return len(p), nil
}

// TestExpiredObjectsCostOneDeletePerThousand: a pass deleting N expired objects on S3
// sends ceil(N/1000) DeleteObjects requests and no DeleteObject, and leaves a neighbour
// key with the objects' prefix.
func TestExpiredObjectsCostOneDeletePerThousand(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	f := newFixture(t, s)
	const n = 1001
	_, neighbour := putExpired(t, f, n)
	f.now = t0.Add(2 * time.Hour)
	counter.Reset()
	st := f.run(t, retention.Job{})
	if st.ObjectsDeleted != n {
		t.Fatalf("ObjectsDeleted = %d, want %d", st.ObjectsDeleted, n)
	}
	if got, want := counter.Requests("S3.DeleteObjects"), int64((n+999)/1000); got != want {
		t.Fatalf("%d DeleteObjects requests for %d objects, want %d", got, n, want)
	}
	if got := counter.Requests("S3.DeleteObject"); got != 0 {
		t.Fatalf("%d DeleteObject requests, want none", got)
	}
	if left := f.objects(t); left != 1 {
		t.Fatalf("%d objects left, want only the neighbour %q", left, neighbour)
	}
	if _, err := s.Objects.GetRange(ctx, neighbour, 0, 4); err != nil {
		t.Fatalf("neighbour %q: %v", neighbour, err)
	}
}

// failingOnce is an object store whose DeleteBatch fails the given keys the first time
// it is asked to delete them, deleting the rest, as an S3 answer with per-key errors does.
type failingOnce struct {
	store.ObjectStore
	mu   sync.Mutex
	fail map[string]bool
}

func (o *failingOnce) DeleteBatch(ctx context.Context, keys []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var rest, failed []string
	var errs []error
	for _, k := range keys {
		if o.fail[k] {
			delete(o.fail, k)
			failed, errs = append(failed, k), append(errs, fmt.Errorf("delete %q: %w", k, store.ErrUnavailable))
			continue
		}
		rest = append(rest, k)
	}
	if err := o.ObjectStore.(store.BatchDeleter).DeleteBatch(ctx, rest); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &store.DeleteBatchError{Failed: failed, Errs: errs}
	}
	return nil
}

// TestPartialObjectDeleteRetriedNextPass: keys a batch fails to delete are reported (the
// pass's error, the deleted count without them) and deleted by the next pass.
func TestPartialObjectDeleteRetriedNextPass(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		keys, _ := putExpired(t, f, 5)
		objs := &failingOnce{ObjectStore: s.Objects, fail: map[string]bool{keys[1]: true, keys[3]: true}}
		f.now = t0.Add(2 * time.Hour)
		j := retention.Job{Meta: s.Meta, Objects: objs, Clock: func() time.Time { return f.now }}
		st, err := j.Run(context.Background())
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("first pass: %v, want the failed keys' ErrUnavailable", err)
		}
		var be *store.DeleteBatchError
		if !errors.As(err, &be) || !slices.Equal(be.Failed, []string{keys[1], keys[3]}) {
			t.Fatalf("first pass error %v, want keys %q and %q failed", err, keys[1], keys[3])
		}
		if st.ObjectsDeleted != 3 || f.objects(t) != 3 {
			t.Fatalf("first pass %+v, %d objects left; want 3 deleted, the 2 failed and the neighbour left", st, f.objects(t))
		}
		st, err = j.Run(context.Background())
		if err != nil || st.ObjectsDeleted != 2 || f.objects(t) != 1 {
			t.Fatalf("second pass %+v, %v, %d objects left; want the 2 retried, the neighbour left", st, err, f.objects(t))
		}
	})
}

// TestPassListsOnlyWhatExpired: a pass stops listing a topic's objects at the first one
// named after its cutoff (keys list in ULID, so time, order): with 5 expired objects
// before 1,500 retained ones it reads one page (1,000 keys) of the listing, not two, and
// deletes exactly the 5.
func TestPassListsOnlyWhatExpired(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	f := newFixture(t, s)
	expired, _ := putExpired(t, f, 5)
	tp, err := s.Meta.GetTopic(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	young := t0.Add(90 * time.Minute)
	for i := range 1500 {
		id := ulid.MustNew(ulid.Timestamp(young), &countingEntropy{n: uint64(i)})
		if err := s.Objects.Put(ctx, segment.ObjectKey(tp.Name, tp.Incarnation, id), []byte{1}, store.Kept); err != nil {
			t.Fatal(err)
		}
	}
	f.now = t0.Add(2 * time.Hour) // cutoff t0 + 1h − 5m margin: the 5 at t0 go, the young stay
	counter.Reset()
	st := f.run(t, retention.Job{})
	if st.ObjectsDeleted != len(expired) {
		t.Fatalf("ObjectsDeleted = %d, want %d", st.ObjectsDeleted, len(expired))
	}
	if got := counter.Requests("S3.ListObjectsV2"); got != 1 {
		t.Fatalf("%d ListObjectsV2 requests, want 1 (the page holding the expired objects)", got)
	}
	if left := f.objects(t); left != 1501 {
		t.Fatalf("%d objects left, want the 1,500 retained and the neighbour", left)
	}
}
