package deploy

import (
	"math"
	"time"
)

// Managed Instances sizing: the stack (infra/strata) sizes the api function's execution
// environments from the request rate a deployment expects, and the scale model
// (pkg/cost/scale) checks a rate against the same ceiling, so the two cannot disagree.
const (
	// DefaultExpectedRequestsPerSecond is the request rate the api function on Managed
	// Instances is sized for when the stack is not told one: 1,000 SDK producers at a
	// linger of 1 s, each sending one request a round.
	DefaultExpectedRequestsPerSecond = 1000
	// APIInvocationBound bounds an append's time in the api function beyond its group
	// commit window: the S3 PUT and the DynamoDB commit, about 56 ms at same-region
	// medians, with room for a slow tail.
	APIInvocationBound = 100 * time.Millisecond
	// ManagedHeadroom is how far above the expected invocations in flight the
	// environments reach: Managed Instances scale asynchronously and may throttle when
	// traffic more than doubles within five minutes (Lambda Developer Guide, "Lambda
	// Managed Instances scaling"), so the ceiling takes a doubling of the expected rate.
	ManagedHeadroom = 2
	// DefaultPerEnvironmentConcurrency is how many invocations one execution environment
	// runs at once unless told (AWS_LAMBDA_MAX_CONCURRENCY).
	DefaultPerEnvironmentConcurrency = 32
	// DefaultMaxEnvironments is the least ceiling of execution environments the stack
	// sets, whatever the rate.
	DefaultMaxEnvironments = 4
)

// APIInFlight is how many api invocations are in flight at rps requests a second, each
// held for the group commit window plus APIInvocationBound.
func APIInFlight(rps float64, window time.Duration) float64 {
	return rps * (max(window, 0) + APIInvocationBound).Seconds()
}

// ManagedEnvironments is the ceiling of execution environments the api function needs
// on Managed Instances for rps requests a second at window, perEnv invocations each:
// ManagedHeadroom times the invocations in flight, and at least DefaultMaxEnvironments.
// burst is the most requests that arrive at once (producers aligned to the clock send
// a slot's requests together), which are all in flight together; 0 for none.
func ManagedEnvironments(rps float64, window time.Duration, perEnv int, burst float64) int {
	if perEnv < 1 {
		perEnv = DefaultPerEnvironmentConcurrency
	}
	need := int(math.Ceil(ManagedHeadroom * max(APIInFlight(rps, window), burst) / float64(perEnv)))
	return max(DefaultMaxEnvironments, need)
}
