package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// TestRequireAssets: with strata:requireAssets the app refuses to synthesize from
// placeholders and says how to build the functions (the placeholder path itself runs in
// infra/test.sh's `npx aws-cdk synth`).
func TestRequireAssets(t *testing.T) {
	err := run(&awscdk.AppProps{Context: &map[string]any{
		"strata:requireAssets": true, "strata:assetDir": t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "scripts/build-functions.sh") ||
		!strings.Contains(err.Error(), "api, dispatch, retention, consumer") {
		t.Errorf("run() = %v, want an error naming the missing functions and the build script", err)
	}
}
