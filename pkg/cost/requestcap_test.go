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

// TestTierWindowsAreStackSettings: every tier window and the budget the targets table
// prices are ones the stack can set (strata:groupCommitWindowMs up to
// deploy.MaxGroupCommitWindow, strata:groupCommitBudgetBytes up to
// deploy.MaxGroupCommitBudget), so a built row never prices a setting the api function
// refuses.
func TestTierWindowsAreStackSettings(t *testing.T) {
	for _, c := range cost.Configurations() {
		if c.TierWindow > deploy.MaxGroupCommitWindow || c.TierBudget > deploy.MaxGroupCommitBudget {
			t.Errorf("%s: tier window %v, budget %.0f B; the stack takes at most %v and %d B",
				c.Name, c.TierWindow, c.TierBudget, deploy.MaxGroupCommitWindow, deploy.MaxGroupCommitBudget)
		}
	}
	if last := cost.TierWindows[len(cost.TierWindows)-1]; last != deploy.MaxGroupCommitWindow {
		t.Errorf("the longest tier window priced is %v, the stack's longest %v", last, deploy.MaxGroupCommitWindow)
	}
}

// TestTierConcurrencyIsTheStacks: the model holds a burst of aligned requests at the
// invocations an environment runs at once as the stack configures it, and sizes the
// slots by the same floor the burst is spread over.
func TestTierConcurrencyIsTheStacks(t *testing.T) {
	if got := cost.DefaultAggregator().Concurrency; got != deploy.DefaultPerEnvironmentConcurrency {
		t.Errorf("the tier's concurrency is %d, the stack's per-environment default %d", got, deploy.DefaultPerEnvironmentConcurrency)
	}
	o := cost.Defaults(1000)
	o.Producers.AlignSlots = cost.AlignSlotsFor(o)
	if f := cost.FlowOf(o, cost.Aggregation); f.Burst > float64(o.Aggregator.Instances*o.Aggregator.Concurrency) || f.Instances != o.Aggregator.Instances {
		t.Errorf("%d slots: a burst of %.0f on %d instances; want it within the floor's %d × %d", o.Producers.AlignSlots, f.Burst, f.Instances,
			o.Aggregator.Instances, o.Aggregator.Concurrency)
	}
}
