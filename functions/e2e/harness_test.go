package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/internal/lambdarun"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// build builds the emulator and the functions' bootstraps for the host architecture
// (internal/lambdarun, shared with internal/stackrun) and returns where they are.
func build(t *testing.T) lambdarun.Build {
	t.Helper()
	return lambdarun.Built(t)
}

// deployment is one test's resources on the emulator and the environment its
// functions run with.
type deployment struct {
	endpoint string
	ddb      *dynamodb.Client
	s3       *s3.Client
	cfg      dynamo.Config
	business string
}

func newDeployment(t *testing.T) *deployment {
	t.Helper()
	ctx := context.Background()
	ep := awstest.Endpoint(t)
	d := &deployment{endpoint: ep, ddb: awstest.DynamoDBClient(ctx, t), s3: awstest.S3Client(ctx, t)}
	id := randomID()
	d.cfg = dynamo.Config{TablePrefix: "fn" + id + "-", Bucket: "strata-fn-" + id}
	d.business = d.cfg.TablePrefix + "orders"
	if err := dynamo.Bootstrap(ctx, d.ddb, d.s3, d.cfg); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	// The business table as the stack's OrdersTable: keyed by deploy.BusinessKey, with
	// TTL on the effect markers' expiry.
	if err := dynamo.CreateEffectsTable(ctx, d.ddb, d.business); err != nil {
		t.Fatalf("create the business table: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = d.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(d.business)})
		if err := s3store.DeleteBucket(ctx, d.s3, d.cfg.Bucket); err != nil {
			t.Errorf("cleanup bucket: %v", err)
		}
		if err := dynamo.Teardown(ctx, d.ddb, d.cfg); err != nil {
			t.Errorf("cleanup tables: %v", err)
		}
	})
	return d
}

// env is the functions' environment: what the stack sets, plus the SDK's endpoint
// variables pointing at the emulator (and, for dispatch, at the test's Lambda service).
func (d *deployment) env(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"AWS_ENDPOINT_URL=" + d.endpoint,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_REGION=" + awstest.Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=60",
		deploy.EnvBucket + "=" + d.cfg.Bucket,
		deploy.EnvTablePrefix + "=" + d.cfg.TablePrefix,
		deploy.EnvBusinessTable + "=" + d.business,
		// The e2e callers are unsigned; the api function denies by default.
		deploy.EnvEveryPrincipalAdmin + "=1",
	}
	return append(env, extra...)
}

// rie is one function's bootstrap running under the Runtime Interface Emulator.
type rie struct {
	name string
	url  string
	log  *lambdarun.LockedBuffer
	p    *lambdarun.Process
}

// startRIE runs build/e2e/functions/<name>/bootstrap under the emulator, listening on
// loopback ports only.
func startRIE(t *testing.T, name string, env []string) *rie {
	t.Helper()
	b := build(t)
	p := lambdarun.Start(t, b.RIE, name, filepath.Join(b.Functions, name, "bootstrap"), env)
	return &rie{name: name, url: p.URL, log: p.Log, p: p}
}

// invoke calls the function synchronously over the emulator's HTTP endpoint and
// returns its response; a function error is an error.
func (r *rie) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return r.p.Invoke(ctx, payload)
}

// logged reports whether the function's output contains s, waiting up to 10 s for it:
// the emulator copies a function's output after the invocation's answer, so a line
// printed during the invocation may arrive a little after it.
func (r *rie) logged(s string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(r.log.String(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// tryInvoke invokes the function and decodes its answer into out, returning the
// function's error (or a garbled answer) instead of failing the test.
func (r *rie) tryInvoke(payload []byte, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	body, err := r.invoke(ctx, payload)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s answered %s: %w", r.name, body, err)
	}
	return nil
}

func (r *rie) mustInvoke(t *testing.T, payload []byte, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	body, err := r.invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s answered %s: %v", r.name, body, err)
		}
	}
}

// lambdaService is the Lambda Invoke API dispatch calls (AWS_ENDPOINT_URL_LAMBDA points
// its SDK client here): it accepts asynchronous invocations (202) and runs each on the
// consumer function under the emulator, as Lambda would.
type lambdaService struct {
	t        *testing.T
	srv      *httptest.Server
	consumer *rie
	wg       sync.WaitGroup

	mu      sync.Mutex
	events  []deploy.ConsumerEvent
	results []consumerResult
	errs    []error
}

// consumerResult is the consumer library's result (pkg/lambdaconsumer.Result).
type consumerResult struct {
	Topic             string `json:"topic"`
	Partition         int32  `json:"partition"`
	Group             string `json:"group"`
	LeaseHeld         bool   `json:"lease_held"`
	Fenced            bool   `json:"fenced"`
	Handled           int64  `json:"handled"`
	Remembered        int64  `json:"remembered"`
	Lost              int64  `json:"records_lost"`
	Committed         int64  `json:"committed"`
	StoppedAtDeadline bool   `json:"stopped_at_deadline"`
}

func newLambdaService(t *testing.T, consumer *rie) *lambdaService {
	t.Helper()
	s := &lambdaService{t: t, consumer: consumer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *lambdaService) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/2015-03-31/functions/") || !strings.HasSuffix(r.URL.Path, "/invocations") {
		http.Error(w, "not the Invoke API", http.StatusNotFound)
		return
	}
	if r.Header.Get("X-Amz-Invocation-Type") != "Event" {
		http.Error(w, "dispatch must invoke asynchronously", http.StatusBadRequest)
		return
	}
	payload, err := io.ReadAll(r.Body)
	var ev deploy.ConsumerEvent
	if err == nil {
		err = json.Unmarshal(payload, &ev)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		body, err := s.consumer.invoke(ctx, payload)
		var res consumerResult
		if err == nil {
			err = json.Unmarshal(body, &res)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.errs = append(s.errs, err)
			return
		}
		s.results = append(s.results, res)
	}()
	w.WriteHeader(http.StatusAccepted)
}

// wait waits for every invocation accepted so far to finish and returns the results.
func (s *lambdaService) wait() ([]deploy.ConsumerEvent, []consumerResult, error) {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]deploy.ConsumerEvent(nil), s.events...), append([]consumerResult(nil), s.results...), errors.Join(s.errs...)
}

func randomID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
