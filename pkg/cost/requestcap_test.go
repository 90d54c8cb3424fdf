package cost_test

import (
	"testing"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/deploy"
)

// TestRequestCapIsTheSDKs: the model caps a producer's request as pkg/client's producer
// does against the api function: the function's body limit less the binary prologue
// ("STRA" and the version byte), within the SDK's own cap.
func TestRequestCapIsTheSDKs(t *testing.T) {
	if want := min(client.MaxBatchBytes, deploy.MaxAPIBody-5); cost.LambdaRequestBytes != want {
		t.Errorf("cost.LambdaRequestBytes = %d, the SDK sends at most %d to the api function", cost.LambdaRequestBytes, want)
	}
	if got := cost.DefaultProducers(1).RequestBytes; got != cost.LambdaRequestBytes {
		t.Errorf("DefaultProducers caps requests at %v, want %d", got, cost.LambdaRequestBytes)
	}
}
