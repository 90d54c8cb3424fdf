package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// rootModule is the module path of the repository's root module.
const rootModule = "github.com/stratalog/strata"

// TestModuleUsableFromOutside: another app requires the infra module like any module,
// so its go.mod must carry no replace directive (a dependency's replaces are ignored)
// and must require a release of the root module the module proxy can serve — not a
// pseudo-version of no commit; the workspace (go.work) is what points that release at
// the checkout, for development and CI only.
func TestModuleUsableFromOutside(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Replace) > 0 {
		t.Errorf("infra/go.mod replaces %s: an app requiring the module would need the same replace", mf.Replace[0].Old.Path)
	}
	var version string
	for _, r := range mf.Require {
		if r.Mod.Path == rootModule {
			version = r.Mod.Version
		}
	}
	if !semver.IsValid(version) || module.IsPseudoVersion(version) || semver.Prerelease(version) != "" {
		t.Fatalf("infra/go.mod requires %s %q: want a tagged release (vX.Y.Z)", rootModule, version)
	}

	raw, err = os.ReadFile(filepath.Join("..", "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := modfile.ParseWork("go.work", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	var replaced bool
	for _, r := range wf.Replace {
		if r.Old.Path == rootModule && r.Old.Version == version && strings.TrimSuffix(r.New.Path, "/") == ".." {
			replaced = true
		}
	}
	if !replaced {
		t.Errorf("infra/go.work does not point %s %s at the checkout (replace %s %s => ../)", rootModule, version, rootModule, version)
	}
}
