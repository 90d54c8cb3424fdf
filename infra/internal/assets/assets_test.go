package assets

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/deploy"
)

func TestPlaceholdersCoverEveryFunction(t *testing.T) {
	dir, err := Placeholders()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	missing, err := Missing(dir)
	if err != nil || len(missing) != 0 {
		t.Fatalf("missing %v, %v", missing, err)
	}
	for _, name := range deploy.Functions() {
		fi, err := os.Stat(filepath.Join(dir, name, "bootstrap"))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: %v %v: want an executable bootstrap", name, fi, err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, name, "bootstrap"))
		if !strings.Contains(string(b), "scripts/build-functions.sh") || !strings.Contains(string(b), "exit 1") {
			t.Errorf("%s: placeholder %q must fail and say how to build", name, b)
		}
	}
}

func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, deploy.FunctionAPI), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, deploy.FunctionAPI, "bootstrap"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing, err := Missing(dir)
	want := []string{deploy.FunctionDispatch, deploy.FunctionRetention, deploy.FunctionConsumer, deploy.FunctionCompact, Gateway}
	if err != nil || !slices.Equal(missing, want) {
		t.Errorf("missing %v, %v; want %v", missing, err, want)
	}
}

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "infra", "app")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := RepoRoot(deep); err == nil {
		t.Error("found a root without cdk.json")
	}
	if err := os.WriteFile(filepath.Join(root, "cdk.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := RepoRoot(deep)
	if err != nil || got != root {
		t.Errorf("root %q, %v; want %q", got, err, root)
	}
}
