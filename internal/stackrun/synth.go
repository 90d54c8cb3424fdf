package stackrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Synthesize runs the infra module's CDK app (infra/app, what cdk.json runs) in process
// of its own Go module with the given CDK context, writing the cloud assembly to outDir,
// and returns the path of the stack's template. It needs Node (jsii) but no network and
// no CDK CLI: the app synthesizes itself (app.Synth) into CDK_OUTDIR with the context
// CDK_CONTEXT_JSON carries, as the CLI would pass them.
func Synthesize(ctx context.Context, root, outDir, stack string, cdkContext map[string]string) (string, error) {
	c := map[string]string{"strata:stackName": stack}
	for k, v := range cdkContext {
		c[k] = v
	}
	cj, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./app")
	cmd.Dir = filepath.Join(root, "infra")
	// The infra module builds against this checkout through infra/go.work.
	cmd.Env = append(os.Environ(), "CDK_OUTDIR="+outDir, "CDK_CONTEXT_JSON="+string(cj), "GOFLAGS=",
		"JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1", "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("stackrun: synthesize (go run ./app in infra/): %v\n%s", err, out)
	}
	path := filepath.Join(outDir, stack+".template.json")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("stackrun: synthesize wrote no %s: %w", path, err)
	}
	return path, nil
}

// assetBootstrap is the bootstrap of a function's code asset in the cloud assembly: the
// template names the asset by its S3 key "<hash>.zip"; the assembly holds its directory
// as asset.<hash>.
func assetBootstrap(outDir string, code map[string]any) (string, error) {
	key, _ := code["S3Key"].(string)
	if len(key) < 5 || filepath.Ext(key) != ".zip" {
		return "", fmt.Errorf("stackrun: function code %v is not a zip asset", code)
	}
	p := filepath.Join(outDir, "asset."+key[:len(key)-4], "bootstrap")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("stackrun: asset of %s: %w", key, err)
	}
	return p, nil
}
