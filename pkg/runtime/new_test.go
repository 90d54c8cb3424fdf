package runtime_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestNewWithoutListener: New builds the node the Lambda functions use: the same
// handler, no listener, no retention loop, and a prompt Close.
func TestNewWithoutListener(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Addr() != "" {
		t.Errorf("a node without a listener reports address %q", rt.Addr())
	}
	w := httptest.NewRecorder()
	rt.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/health", nil))
	if w.Code != http.StatusOK {
		t.Errorf("health: %d", w.Code)
	}
	if err := rt.Serve(context.Background()); err == nil {
		t.Error("Serve on a node without a listener succeeded")
	}
	if rt.Meta() == nil || rt.Log() == nil {
		t.Error("no store or log")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rt.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}
