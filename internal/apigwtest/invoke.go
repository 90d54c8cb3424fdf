package apigwtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/stratalog/strata/pkg/lambdafn"
)

// RIEPath is the Runtime Interface Emulator's invocation endpoint.
const RIEPath = "/2015-03-31/functions/function/invocations"

// RIE invokes a function running under the Lambda Runtime Interface Emulator over its
// HTTP endpoint. In its default mode the emulator runs one invocation at a time, so RIE
// serialises them unless Concurrent (the managed-instances mode) is set.
type RIE struct {
	// URL is the invocation endpoint, e.g. "http://127.0.0.1:9000" + RIEPath.
	URL string
	// Client is the HTTP client (nil: http.DefaultClient).
	Client *http.Client
	// Concurrent lets invocations overlap.
	Concurrent bool

	mu sync.Mutex
}

// Invoke posts payload and returns the function's answer; a function error (an
// errorType in the answer) or a non-200 from the emulator is an error.
func (r *RIE) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if !r.Concurrent {
		r.mu.Lock()
		defer r.mu.Unlock()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	hc := r.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("apigwtest: invoke %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("apigwtest: invoke %s: read the answer: %w", r.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("apigwtest: invoke %s: the emulator answered %d: %s", r.URL, resp.StatusCode, body)
	}
	var fnErr struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(body, &fnErr) == nil && fnErr.ErrorType != "" {
		return nil, fmt.Errorf("apigwtest: function error %s: %s", fnErr.ErrorType, fnErr.ErrorMessage)
	}
	return body, nil
}

// InvokerFunc adapts a function to Invoker.
type InvokerFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// InProcess is the api function's handler in this process: h (the runtime's HTTP
// handler) behind lambdafn's API Gateway adapter, exactly what functions/api serves;
// principals as lambdafn.NewAPI takes them (nil: no grants).
func InProcess(h http.Handler, principals *lambdafn.Principals) Invoker {
	return lambdafn.NewAPI(h, principals)
}
