// Command benchscale prints the scale model's table (pkg/cost/scale: the deployed design
// at 50,000, 500,000 and 5,000,000 events/s of 1 KB against AWS's published limits) as
// Markdown and draws its plot. scripts/bench-scale.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stratalog/strata/pkg/cost/scale"
)

func main() {
	plotPath := flag.String("plot", "docs/img/scale-limits.png", "where to draw the plot (empty: none)")
	flag.Parse()
	scale.Markdown(os.Stdout, scale.Rows())
	if *plotPath != "" {
		if err := scale.Plot(*plotPath); err != nil {
			fmt.Fprintln(os.Stderr, "benchscale:", err)
			os.Exit(1)
		}
	}
}
