// Command app is the CDK app cdk.json runs (npx aws-cdk synth / deploy from the
// repository root): the Strata stack of infra/stack, configured from CDK context, with
// the function assets scripts/build-functions.sh writes to build/functions. When they
// are not built, it synthesizes with placeholder assets and says so (infra/README.md).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/internal/assets"
	"github.com/stratalog/strata/infra/stack"
)

func main() {
	if err := run(&awscdk.AppProps{}); err != nil {
		fmt.Fprintln(os.Stderr, "strata app:", err)
		os.Exit(1)
	}
}

// run synthesizes the app; props carries what tests set (context), the CLI's settings
// come from the environment as usual.
func run(props *awscdk.AppProps) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := assets.RepoRoot(wd)
	if err != nil {
		return err
	}
	// cdk.json runs the app in infra/ (go -C infra), while the CLI names its output
	// directory relative to the repository root, where it runs: resolve it there.
	if out := os.Getenv("CDK_OUTDIR"); out != "" && !filepath.IsAbs(out) {
		props.Outdir = jsii.String(filepath.Join(root, out))
	}
	defer jsii.Close()
	app := awscdk.NewApp(props)
	dir := filepath.Join(root, "build", "functions")
	if v := app.Node().TryGetContext(jsii.String("strata:assetDir")); v != nil {
		dir = fmt.Sprint(v)
	}
	missing, err := assets.Missing(dir)
	if err != nil {
		return err
	}
	placeholders := len(missing) > 0
	if placeholders {
		if v := app.Node().TryGetContext(jsii.String("strata:requireAssets")); v != nil && fmt.Sprint(v) == "true" {
			return fmt.Errorf("functions not built in %s: %s (run scripts/build-functions.sh)", dir, strings.Join(missing, ", "))
		}
		if dir, err = assets.Placeholders(); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	cfg, err := stack.FromContext(app.Node(), dir)
	if err != nil {
		return err
	}
	st, err := stack.New(app, cfg)
	if err != nil {
		return err
	}
	if placeholders {
		awscdk.Annotations_Of(st.Stack).AddWarningV2(jsii.String("strata:placeholderAssets"), jsii.String(
			"functions not built ("+strings.Join(missing, ", ")+"): synthesized with placeholder assets that fail every invocation; run scripts/build-functions.sh before deploying"), nil)
	}
	app.Synth(nil)
	return nil
}
