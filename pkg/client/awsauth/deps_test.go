package awsauth_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandsAlone: the signing option adds the AWS SDK and nothing of the server to an
// application's dependencies: of this repository only the SDK and its contract packages.
func TestStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/stratalog/strata/pkg/client/awsauth").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{"github.com/stratalog/strata/pkg/client/awsauth": true, "github.com/stratalog/strata/pkg/client": true,
		"github.com/stratalog/strata/pkg/wire": true, "github.com/stratalog/strata/pkg/segment": true}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/stratalog/strata/") && !allowed[dep] {
			t.Errorf("pkg/client/awsauth depends on %s", dep)
		}
	}
}
