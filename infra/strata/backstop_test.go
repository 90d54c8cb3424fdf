package strata

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The lifecycle rule is a backstop, never the retention itself: it must expire an object
// only after the longest retention has passed for it, with a day of grace for the
// retention function, and no more than two days after that.
func TestBackstopDaysProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxRetention := time.Duration(rapid.Int64Range(int64(time.Second), int64(3650*24*time.Hour)).Draw(t, "maxRetention"))
		days := backstopDays(maxRetention)
		expiry := time.Duration(days) * 24 * time.Hour
		if days != float64(int64(days)) || days < 2 {
			t.Fatalf("%v days: want a whole number of at least 2", days)
		}
		if expiry < maxRetention+24*time.Hour {
			t.Fatalf("expires after %v, before retention %v plus a day", expiry, maxRetention)
		}
		if expiry >= maxRetention+48*time.Hour {
			t.Fatalf("expires after %v, more than two days past retention %v", expiry, maxRetention)
		}
	})
}

// Every access level lists only exact DynamoDB actions, reads first, or a scan alone (a
// role that only lists a table, as dispatch's sweep counts parked keys); writes never
// come without reads.
func TestAccessActions(t *testing.T) {
	for fn, tables := range TableAccess() {
		for table, a := range tables {
			acts := a.actions()
			scanAlone := a == (Access{Scan: true}) && len(acts) == 1 && acts[0] == "dynamodb:Scan"
			if !scanAlone && (len(acts) == 0 || acts[0] != "dynamodb:GetItem") {
				t.Errorf("%s/%s: actions %v, want reads first or a scan alone", fn, table, acts)
			}
			seen := map[string]bool{}
			for _, act := range acts {
				if seen[act] {
					t.Errorf("%s/%s: %s twice", fn, table, act)
				}
				seen[act] = true
			}
		}
	}
}
