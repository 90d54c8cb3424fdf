package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandsAlone: the SDK imports no server package, only the contract's leaf packages
// (pkg/wire and the block format it frames, pkg/segment), so an application importing
// it pulls in nothing of the server.
func TestStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/stratalog/strata/pkg/client").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{"github.com/stratalog/strata/pkg/client": true, "github.com/stratalog/strata/pkg/wire": true,
		"github.com/stratalog/strata/pkg/segment": true}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/stratalog/strata/") && !allowed[dep] {
			t.Errorf("pkg/client depends on %s", dep)
		}
	}
}
