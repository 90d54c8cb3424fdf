// Command benchscale prints the scale model's tables (pkg/cost/scale: the headline design
// at 50,000, 500,000 and 5,000,000 events/s of 1 KB against AWS's published limits and
// the stack's ceilings) as Markdown, or with --doc rewrites them in that document's
// generated section, and draws its plot. scripts/bench-scale.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stratalog/strata/pkg/cost/scale"
)

func main() {
	plotPath := flag.String("plot", "docs/img/scale-limits.png", "where to draw the plot (empty: none)")
	doc := flag.String("doc", "", "rewrite the generated scale section of this document (docs/BENCHMARKS.md) instead of printing")
	flag.Parse()
	if *doc == "" {
		fmt.Print(scale.Generated())
	} else if err := rewrite(*doc); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
	if *plotPath != "" {
		if err := scale.Plot(*plotPath); err != nil {
			fmt.Fprintln(os.Stderr, "benchscale:", err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := scale.Splice(string(b), scale.Generated())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
