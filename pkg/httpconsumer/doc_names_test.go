package httpconsumer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameRealIdentifiers: every httpconsumer identifier the user docs show
// (httpconsumer.X, and the group consumer's With… options) is exported by this package,
// so README, docs/API.md, docs/KAFKA.md and docs/DESIGN.md cannot drift from it.
func TestDocsNameRealIdentifiers(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for name, obj := range f.Scope.Objects {
				if ast.IsExported(name) {
					exported[name] = obj != nil
				}
			}
		}
	}
	if !exported["NewGroupConsumer"] {
		t.Fatal("parser found no NewGroupConsumer: the test reads the wrong package")
	}
	qualified := regexp.MustCompile(`httpconsumer\.([A-Z]\w*)`)
	option := regexp.MustCompile("`(With[A-Z]\\w*)`")
	for _, doc := range []string{"../../README.md", "../../docs/API.md", "../../docs/KAFKA.md", "../../docs/DESIGN.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, m := range qualified.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		if strings.Contains(doc, "API.md") {
			for _, m := range option.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
		for n := range names {
			if !exported[n] {
				t.Errorf("%s names httpconsumer.%s, which the package does not export", doc, n)
			}
		}
	}
}
