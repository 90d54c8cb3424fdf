package stackrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stratalog/strata/internal/lambdarun"
)

// Function is one AWS::Lambda::Function of the template running here: its environment
// as the template gives it, its role's statements, its proxy and its emulator
// instances.
type Function struct {
	// LogicalID, Name (local physical name) and ARN of the function.
	LogicalID, Name, ARN string
	// Description is the template's.
	Description string
	// Env is the environment the template gives it (references resolved).
	Env map[string]string
	// Timeout and MemoryMB are the template's.
	Timeout  time.Duration
	MemoryMB int
	// SystemLogLevel is its LoggingConfig's level of Lambda's own records (INFO, Lambda's
	// default, when the template sets none). The emulator writes its own text lines
	// whatever the level; the cost run prices the level's records.
	SystemLogLevel string
	// Statements are its role's.
	Statements []Statement
	// AsyncRetries is its EventInvokeConfig's MaximumRetryAttempts (Lambda's default 2).
	AsyncRetries int
	// Bootstrap is the built bootstrap of its asset in the cloud assembly.
	Bootstrap string
	Proxy     *Proxy
	// Concurrency is how many invocations one execution environment runs at once: the
	// template's PerExecutionEnvironmentMaxConcurrency for a function on Lambda Managed
	// Instances (its processes run in the emulator's managed-instances mode, with
	// AWS_LAMBDA_MAX_CONCURRENCY set as Lambda sets it), 1 on demand.
	Concurrency int

	// idle holds a slot per invocation an emulator instance may take: on demand Lambda
	// runs one invocation per execution environment, and so does the emulator; on
	// Managed Instances an instance holds Concurrency slots.
	idle      chan *lambdarun.Process
	instances []*lambdarun.Process
	// logMarks are the instances' log lengths at the last ResetLogs.
	logMarks []int

	mu          sync.Mutex
	invocations int
	errors      int
	busy        time.Duration
	active      map[*time.Time]bool         // start times of the invocations running
	used        map[*lambdarun.Process]bool // instances that ran an invocation
}

// Invoke runs one synchronous invocation on a free instance, waiting for one.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var p *lambdarun.Process
	select {
	case p = <-f.idle:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { f.idle <- p }()
	start := time.Now()
	f.mu.Lock()
	f.invocations++
	if f.active == nil {
		f.active = map[*time.Time]bool{}
		f.used = map[*lambdarun.Process]bool{}
	}
	f.active[&start] = true
	f.used[p] = true
	f.mu.Unlock()
	var out []byte
	var err error
	if f.Concurrency > 1 {
		// The emulator's managed-instances mode refuses an invocation while the
		// runtime's pollers are busy handing back earlier responses ("no idle
		// runtimes") even with slots free; Lambda would hold it for the environment, so
		// the harness waits and asks again.
		for {
			out, err = lambdarun.InvokeURL(ctx, p.Name, p.URL, payload)
			if err == nil || !strings.Contains(err.Error(), "no idle runtimes") || ctx.Err() != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	} else {
		out, err = p.Invoke(ctx, payload)
	}
	f.mu.Lock()
	delete(f.active, &start)
	f.busy += time.Since(start)
	if err != nil {
		f.errors++
	}
	f.mu.Unlock()
	return out, err
}

// Invocations returns how many invocations started and how many failed.
func (f *Function) Invocations() (n, failed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.invocations, f.errors
}

// Busy returns the wall time of the invocations since ResetLogs, those still running
// up to now.
func (f *Function) Busy() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.busy
	for start := range f.active {
		b += time.Since(*start)
	}
	return b
}

// Environments returns how many of f's instances ran an invocation since ResetLogs.
func (f *Function) Environments() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.used)
}

// Logs returns every instance's output.
func (f *Function) Logs() string {
	var out string
	for i, p := range f.instances {
		out += fmt.Sprintf("--- %s instance %d\n%s", f.Name, i, p.Log.String())
	}
	return out
}

// AsyncResult is one asynchronous invocation's outcome.
type AsyncResult struct {
	Function string
	Payload  []byte
	Result   []byte
	Err      error
	Attempts int
}

// lambdaService is the Lambda Invoke API the functions call (through their proxies, so
// lambda:InvokeFunction is checked first): an asynchronous invocation (InvocationType
// Event) is accepted with 202 and run on the function's instances with its async retry
// setting, a synchronous one is run and answered.
type lambdaService struct {
	functions map[string]*Function // by name
	ctx       context.Context
	wg        sync.WaitGroup

	mu      sync.Mutex
	results []AsyncResult
}

func (s *lambdaService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := lambdaInvokePath.FindStringSubmatch(r.URL.EscapedPath())
	if r.Method != http.MethodPost || m == nil {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "only Invoke is served")
		return
	}
	fn, ok := s.functions[FunctionName(m[1])]
	if !ok {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+m[1])
		return
	}
	payload, err := io.ReadAll(r.Body)
	if err != nil || !json.Valid(payload) {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}
	switch r.Header.Get("X-Amz-Invocation-Type") {
	case "Event":
		s.async(fn, payload)
		w.WriteHeader(http.StatusAccepted)
	case "", "RequestResponse":
		out, err := fn.Invoke(r.Context(), payload)
		var fe *lambdarun.FunctionError
		switch {
		case errors.As(err, &fe):
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			_ = json.NewEncoder(w).Encode(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
		case err != nil:
			lambdaError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		default:
			_, _ = w.Write(out)
		}
	default:
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", "InvocationType not served by the harness")
	}
}

// async runs an accepted asynchronous invocation, retrying a failed one up to the
// function's AsyncRetries as Lambda does (without its backoff delays).
func (s *lambdaService) async(fn *Function, payload []byte) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		res := AsyncResult{Function: fn.Name, Payload: payload}
		for res.Attempts <= fn.AsyncRetries {
			ctx, cancel := context.WithTimeout(s.ctx, fn.Timeout+30*time.Second)
			res.Result, res.Err = fn.Invoke(ctx, payload)
			cancel()
			res.Attempts++
			if res.Err == nil || s.ctx.Err() != nil {
				break
			}
		}
		s.mu.Lock()
		s.results = append(s.results, res)
		s.mu.Unlock()
	}()
}

// Results returns the asynchronous invocations finished so far.
func (s *lambdaService) Results() []AsyncResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AsyncResult(nil), s.results...)
}

func lambdaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
