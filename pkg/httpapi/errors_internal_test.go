package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// TestSupersededIs409 (issue 20): a producer request's attempt that a later one fenced,
// as the log or the store beneath it says (wrapped, as the log returns it), is answered
// 409 superseded, the code the SDK retries.
func TestSupersededIs409(t *testing.T) {
	for _, err := range []error{
		log.ErrSuperseded,
		fmt.Errorf("append to t: %w", log.ErrSuperseded),
		fmt.Errorf("append to t: %w", store.ErrSuperseded),
	} {
		e := mapError(err)
		if e.status != http.StatusConflict || e.code != wire.CodeSuperseded {
			t.Errorf("mapError(%v) = %d %s, want 409 %s", err, e.status, e.code, wire.CodeSuperseded)
		}
	}
}
