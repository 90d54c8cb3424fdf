package cost

import (
	"math"
	"testing"
)

// TestPriceLineUnits: priceLine prices DynamoDB writes at the write units the run
// sized when it has them and by the request bytes per item when not (a run recorded
// before they were sized), leaves the api's topic commit to TopicCommitWRU, and
// prices the eventually consistent share of reads at half.
func TestPriceLineUnits(t *testing.T) {
	pr, w := USEast1(), DesignWorkload()
	flow := Flow{BlocksPerAppend: 2}
	cases := []struct {
		name, function, api, resource string
		ob                            Observed
		units                         float64 // per request
		unit                          string
	}{
		// 1,500 request bytes per item: two units by the bytes, one as sized.
		{"put by bytes", "dispatch", "DynamoDB.PutItem", "index", Observed{Count: 10, Items: 10, BytesSent: 15000}, 2, "write unit"},
		{"put sized", "dispatch", "DynamoDB.PutItem", "index", Observed{Count: 10, Items: 10, BytesSent: 15000, WriteUnits: 10}, 1, "write unit"},
		// 1,036 request bytes per item of a two-item transaction: 2×2×2 by the bytes,
		// the 4 the proxy sized (doubled already) otherwise.
		{"transaction by bytes", "consumer", "DynamoDB.TransactWriteItems", "assignments+commits", Observed{Count: 10, Items: 20, BytesSent: 20720}, 8, "write unit"},
		{"transaction sized", "consumer", "DynamoDB.TransactWriteItems", "assignments+commits", Observed{Count: 10, Items: 20, BytesSent: 20720, WriteUnits: 40}, 4, "write unit"},
		{"update sized", "consumer", "DynamoDB.UpdateItem", "assignments", Observed{Count: 4, Items: 4, BytesSent: 4000, WriteUnits: 6}, 1.5, "write unit"},
		{"topic commit", "api", "DynamoDB.UpdateItem", "sequencer", Observed{Count: 10, Items: 10, BytesSent: 9000, WriteUnits: 10},
			TopicCommitWRU(w.Partitions, flow.BlocksPerAppend), "write unit"},
		// 5,000 answer bytes: two read units strongly consistent, half that eventually.
		{"consistent reads", "dispatch", "DynamoDB.GetItem", "assignments", Observed{Count: 10, Items: 10, BytesRecv: 50000}, 2, "read unit"},
		{"eventual reads", "dispatch", "DynamoDB.GetItem", "assignments", Observed{Count: 10, Items: 10, BytesRecv: 50000, EventualReads: 10}, 1, "read unit"},
		{"some eventual", "dispatch", "DynamoDB.Query", "index", Observed{Count: 10, Items: 10, BytesRecv: 50000, EventualReads: 5}, 1.5, "read unit"},
		// A transaction's reads are twice a strongly consistent read's, whatever the tally.
		{"transactional reads", "dispatch", "DynamoDB.TransactGetItems", "index", Observed{Count: 10, Items: 10, BytesRecv: 10000, EventualReads: 10}, 2, "read unit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Priced{Function: c.function, API: c.api, Resource: c.resource, PerDay: 1000}
			c.ob.Function, c.ob.API, c.ob.Resource = c.function, c.api, c.resource
			priceLine(&p, c.ob, flow, w, pr)
			price := pr.DynamoWRU.USD
			if c.unit == "read unit" {
				price = pr.DynamoRRU.USD
			}
			if p.Unit != c.unit || math.Abs(p.Units-1000*c.units) > 1e-9 || math.Abs(p.USD-1000*c.units*price) > 1e-12 {
				t.Fatalf("priceLine = %g %s for $%g, want %g for $%g", p.Units, p.Unit, p.USD, 1000*c.units, 1000*c.units*price)
			}
		})
	}
}

// TestPriceDeploymentUnits: a run's sized write units and eventual reads reach the
// lines PriceDeployment prices; the committed run, without them, prices as before.
func TestPriceDeploymentUnits(t *testing.T) {
	o := Defaults(10)
	r := committedRun(t)
	units := func(d Deployment, function, api, resource string) float64 {
		t.Helper()
		for _, l := range d.Lines {
			if l.Function == function && l.API == api && l.Resource == resource {
				return l.Units
			}
		}
		t.Fatalf("no line %s %s %s", function, api, resource)
		return 0
	}
	before := PriceDeployment(o, r.ModelOf(), r)
	sized := r
	sized.Requests = append([]RunRequest(nil), r.Requests...)
	var writes, reads int64
	for i, q := range sized.Requests {
		switch {
		case q.Function == "consumer" && q.API == "DynamoDB.TransactWriteItems" && q.Resource == "assignments+commits":
			sized.Requests[i].WriteUnits = float64(2 * q.Requests) // half the bytes' estimate of 4
			writes = q.Requests
		case q.Function == "dispatch" && q.API == "DynamoDB.GetItem" && q.Resource == "assignments":
			sized.Requests[i].EventualReads = q.Requests
			reads = q.Requests
		}
	}
	if writes == 0 || reads == 0 {
		t.Fatal("the committed run has no consumer transaction on assignments+commits or dispatch read of assignments")
	}
	after := PriceDeployment(o, sized.ModelOf(), sized)
	tx := [3]string{"consumer", "DynamoDB.TransactWriteItems", "assignments+commits"}
	get := [3]string{"dispatch", "DynamoDB.GetItem", "assignments"}
	for _, k := range [][3]string{tx, get} {
		b, a := units(before, k[0], k[1], k[2]), units(after, k[0], k[1], k[2])
		if b <= 0 || math.Abs(a-b/2) > 1e-6*b {
			t.Errorf("%v: %g units sized, want half the %g estimated", k, a, b)
		}
	}
	if b, a := units(before, "api", "DynamoDB.PutItem", "index"), units(after, "api", "DynamoDB.PutItem", "index"); a != b {
		t.Errorf("api PutItem on index: %g units, want %g as before", a, b)
	}
}
