// Package lambdarun runs the functions' built bootstraps under the AWS Lambda Runtime
// Interface Emulator (RIE) for tests: it builds the emulator (from the Go module proxy)
// and the bootstraps (scripts/build-functions.sh for the host architecture) once per
// checkout under build/e2e, shared by every test package that needs them (a file lock
// serialises concurrent builds), and starts one emulator process per function instance,
// listening on loopback only. functions/e2e and internal/stackrun use it.
package lambdarun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RIEModule is the Runtime Interface Emulator the tests build from the module proxy.
const RIEModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// Build is where the emulator and the host-architecture bootstraps are.
type Build struct {
	// Root is the repository root.
	Root string
	// RIE is the emulator binary.
	RIE string
	// Functions holds <name>/bootstrap for every function (scripts/build-functions.sh's layout).
	Functions string
}

var (
	buildOnce sync.Once
	built     Build
	buildErr  error
)

// Built builds (once per process, and under a lock shared with other test processes of
// the checkout) the emulator and every function's bootstrap for the host architecture
// under build/e2e, which git ignores, and returns where they are. A failed build fails t.
func Built(t testing.TB) Build {
	t.Helper()
	buildOnce.Do(func() { built, buildErr = build() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func build() (Build, error) {
	root, err := repoRoot()
	if err != nil {
		return Build{}, err
	}
	dir := filepath.Join(root, "build", "e2e")
	b := Build{Root: root, RIE: filepath.Join(dir, "bin", "aws-lambda-rie"), Functions: filepath.Join(dir, "functions")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	// go test runs packages in parallel processes: one builds, the others wait and then
	// find the build up to date (go build's cache makes the second build a no-op).
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return b, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return b, fmt.Errorf("lambdarun: lock %s: %w", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(b.RIE); err != nil {
		cmd := exec.Command("go", "install", RIEModule)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOBIN="+filepath.Join(dir, "bin"), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("build the runtime interface emulator: %v\n%s", err, out)
		}
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "build-functions.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOARCH="+goruntime.GOARCH, "OUT="+b.Functions)
	if out, err := cmd.CombinedOutput(); err != nil {
		return b, fmt.Errorf("build the functions: %v\n%s", err, out)
	}
	return b, nil
}

// repoRoot is the directory holding the root go.mod, found upwards from the working
// directory (a test runs in its package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/stratalog/strata\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("lambdarun: no go.mod of github.com/stratalog/strata above the working directory")
		}
		dir = parent
	}
}

// Process is one function's bootstrap running under the emulator. The emulator runs one
// invocation at a time (except in managed-instances mode): Invoke serialises.
type Process struct {
	Name string
	// URL is the emulator's invoke endpoint.
	URL string
	// Log holds the emulator's and the function's output.
	Log *LockedBuffer
	mu  sync.Mutex
}

// FreePort returns a loopback address nothing listens on (at the time of the call).
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Start runs the bootstrap at path under the emulator with exactly env as its
// environment, listening on loopback ports only; the process is killed when t ends (its
// output is logged then if t failed). With AWS_LAMBDA_MAX_CONCURRENCY in env it runs in
// the emulator's managed-instances mode, which needs the bootstrap in /var/task: it is
// given its directory there in a private mount namespace, leaving the machine untouched.
func Start(t testing.TB, rie, name, bootstrap string, env []string) *Process {
	t.Helper()
	addr, apiAddr := FreePort(t), FreePort(t)
	args := []string{rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap}
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "AWS_LAMBDA_MAX_CONCURRENCY=") }) {
		args = append([]string{"unshare", "-m", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs none /var && mkdir /var/task && mount --bind "$1" /var/task && shift && exec "$@"`,
			"sh", filepath.Dir(bootstrap)}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = t.TempDir()
	logs := &LockedBuffer{}
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s emulator output:\n%s", name, logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s emulator did not listen on %s:\n%s", name, addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &Process{Name: name, URL: "http://" + addr + "/2015-03-31/functions/function/invocations", Log: logs}
}

// FunctionError is an invocation the function itself failed (Lambda's errorType and
// errorMessage), as opposed to one the emulator could not run.
type FunctionError struct {
	Function, Type, Message string
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("%s: function error %s: %s", e.Function, e.Type, e.Message)
}

// Invoke calls the function synchronously over the emulator's HTTP endpoint and returns
// its response; a function error is a *FunctionError.
func (p *Process) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return InvokeURL(ctx, p.Name, p.URL, payload)
}

// InvokeURL invokes an emulator's endpoint without the one-at-a-time lock (for the
// managed-instances mode, which runs invocations at once).
func InvokeURL(ctx context.Context, name, url string, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: emulator answered %d: %s", name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var fnErr struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(body, &fnErr) == nil && fnErr.ErrorType != "" {
		return nil, &FunctionError{Function: name, Type: fnErr.ErrorType, Message: fnErr.ErrorMessage}
	}
	return body, nil
}

// LockedBuffer is a bytes.Buffer safe for concurrent writers (a process's output).
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
