// Package assets finds the functions' Lambda assets that scripts/build-functions.sh
// builds, and stands in placeholders when they are not built, so that the app
// synthesizes (and its template can be tested and linted) on a checkout where the
// functions were never compiled. A placeholder bootstrap is a shell script that fails
// every invocation with a message saying to build the functions: a stack deployed from
// it is visibly broken, never silently wrong.
package assets

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
)

// placeholder is the bootstrap of a function that was not built.
const placeholder = `#!/bin/sh
echo "strata: placeholder asset: build the functions with scripts/build-functions.sh and deploy again" >&2
exit 1
`

// GatewayDockerfile is the Kafka gateway image's Dockerfile, which
// scripts/build-functions.sh copies beside the strata binary into
// <dir>/<strata.GatewayAsset>.
//
//go:embed gateway.Dockerfile
var GatewayDockerfile string

// Gateway is the name Missing reports for the Kafka gateway's image directory.
const Gateway = strata.GatewayAsset

// Missing returns the functions whose <dir>/<name>/bootstrap does not exist, and
// Gateway when <dir>/<Gateway> lacks the strata binary or its Dockerfile.
func Missing(dir string) ([]string, error) {
	var missing []string
	check := func(name string, files ...string) error {
		for _, f := range files {
			_, err := os.Stat(filepath.Join(dir, name, f))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				missing = append(missing, name)
				return nil
			case err != nil:
				return fmt.Errorf("assets: %w", err)
			}
		}
		return nil
	}
	for _, name := range deploy.Functions() {
		if err := check(name, "bootstrap"); err != nil {
			return nil, err
		}
	}
	if err := check(Gateway, "strata", "Dockerfile"); err != nil {
		return nil, err
	}
	return missing, nil
}

// Placeholders writes a placeholder bootstrap for every function under a new temporary
// directory and returns it; the caller removes it after synthesis (the CDK copies assets
// into its output). The content never varies, so neither do the asset hashes.
func Placeholders() (string, error) {
	dir, err := os.MkdirTemp("", "strata-placeholder-assets-")
	if err != nil {
		return "", fmt.Errorf("assets: %w", err)
	}
	for _, name := range deploy.Functions() {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return "", fmt.Errorf("assets: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "bootstrap"), []byte(placeholder), 0o755); err != nil {
			return "", fmt.Errorf("assets: %w", err)
		}
	}
	gw := filepath.Join(dir, Gateway)
	if err := os.MkdirAll(gw, 0o755); err != nil {
		return "", fmt.Errorf("assets: %w", err)
	}
	if err := os.WriteFile(filepath.Join(gw, "strata"), []byte(placeholder), 0o755); err != nil {
		return "", fmt.Errorf("assets: %w", err)
	}
	if err := os.WriteFile(filepath.Join(gw, "Dockerfile"), []byte(GatewayDockerfile), 0o644); err != nil {
		return "", fmt.Errorf("assets: %w", err)
	}
	return dir, nil
}

// RepoRoot returns the nearest directory at or above dir that holds cdk.json.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("assets: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("assets: no cdk.json at or above %s", dir)
		}
	}
}
