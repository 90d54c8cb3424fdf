package cost

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Sweep is what a report varies around its base options.
type Sweep struct {
	Producers  []int
	Groups     []int
	Lingers    []time.Duration
	BatchBytes []float64
	Partitions []int
}

// DefaultSweep is the dimensions.
func DefaultSweep() Sweep {
	return Sweep{
		Producers:  []int{1, 10, 100, 1000},
		Groups:     []int{1, 3},
		Lingers:    []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second},
		BatchBytes: []float64{1 << 20, 5 << 20},
		Partitions: []int{1, 8, 64, 256},
	}
}

func usd(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("$%.0f", x)
	case x >= 1:
		return fmt.Sprintf("$%.2f", x)
	}
	return fmt.Sprintf("$%.4f", x)
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// Report writes the whole comparison as text tables.
func Report(out io.Writer, base Options, s Sweep) error {
	if err := base.Validate(); err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	defer w.Flush()
	wl, pf := base.Workload, base.Profile
	src := "design values (not measured)"
	if pf.Measured {
		src = "counted on the emulator"
	}
	fmt.Fprintf(w, "Workload: %.0f events/s of %.0f B, retained %s, %d partitions; prices %s (one table, pkg/cost/prices.go)\n",
		wl.EventsPerSec, wl.EventBytes, wl.Retention, wl.Partitions, base.Prices.Region)
	fmt.Fprintf(w, "Profile (%s, idempotency keys %t): %.2f PUT/append, %.2f topic commit UpdateItem/append + %.2f other DynamoDB writes/append + per partition block %.2f UpdateItem + %.2f index PutItem + %.2f claim PutItem, "+
		"%.2f + %.2f reads/append (+/block), %.2f reads/poll, %.2f GET/block, %.3f stored B per value B\n",
		src, pf.Idempotent, pf.PutsPerAppend, pf.TopicCommitsPerAppend, pf.WritesPerAppend, pf.UpdatesPerBlock, pf.PutItemsPerBlock, pf.ClaimsPerBlock,
		pf.ReadsPerAppend, pf.ReadsPerAppendBlk, pf.ReadsPerPoll, pf.GetsPerBlock, pf.StoredBytesPerByte)
	g := pf.Group
	if g.Measured {
		fmt.Fprintf(w, "Group commit (counted on the emulator, %d concurrent appenders, %s window): %.3f PUT per acknowledged append; "+
			"%.2f topic commit UpdateItem per batch; %.2f commits per partition of a batch for members without a key, %.2f per partition of an idempotent member; %s CPU per append\n",
			g.Appenders, g.Window, g.PutsPerAppend, g.TopicCommitsPerBatch, g.SharedCommitsPerBlock, g.MemberCommitsPerBlock, g.CPUPerAppend)
	} else {
		fmt.Fprintf(w, "Group commit (design values, not measured): %.2f commits per partition of a batch for members without a key, "+
			"%.2f per partition of an idempotent member; %s CPU per append\n", g.SharedCommitsPerBlock, g.MemberCommitsPerBlock, g.CPUPerAppend)
	}
	fmt.Fprintf(w, "Aggregation tier (modelled): at least %d instances of %.0f vCPUs loaded to %.0f%%, more as CPU needs; %s window, %.0f B budget; "+
		"members per object = 1 + requests/s per instance × window\n",
		base.Aggregator.Instances, base.Aggregator.VCPUs, 100*base.Aggregator.MaxUtilisation, base.Aggregator.Window, base.Aggregator.BudgetBytes)
	fmt.Fprintf(w, "Producers: %s, linger %s, batch %.0f B / %d records, SDK request %.0f B / %d records, %.0f B per encoded record, "+
		"%s body CPU per record; ack floor assumes API %s + PUT %s + 2 × DynamoDB write %s; claims priced %s\n\n",
		base.Producers.Shape, base.Producers.Linger, base.Producers.BatchBytes, base.Producers.BatchRecords,
		base.Producers.RequestBytes, base.Producers.RequestRecords, base.Producers.EncodedRecordBytes, base.Serving.CPUPerRecord, base.Latency.API, base.Latency.S3Put, base.Latency.DynamoWrite,
		base.Claims)

	for _, g := range s.Groups {
		o := base
		o.Workload.Groups = g
		alts := Alternatives(o)
		fmt.Fprintf(w, "== %d consumer group(s) ==\n", g)
		fmt.Fprintln(w, "system\t$/day\t$/month\t")
		for _, a := range alts {
			fmt.Fprintf(w, "%s\t%s\t%s\t\n", a.Name, usd(a.PerDay()), usd(a.PerMonth()))
		}
		kin, kafka := alts[0].PerDay(), alts[3].PerDay()
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Strata (baseline, "+o.Producers.Shape.String()+")\tproducers\tappends/s\trecords/append\tack floor\t$/day\t$/month\t× Kinesis agg\t% of Kafka\t")
		for _, n := range s.Producers {
			o.Producers.Count = n
			e := Strata(o, Baseline)
			fmt.Fprintf(w, "\t%d\t%.1f\t%.1f\t%s\t%s\t%s\t%.2f\t%.1f%%\t\n", n, e.Flow.AppendsPerSec, e.Flow.RecordsPerAppend,
				ms(e.Flow.AckFloor), usd(e.PerDay()), usd(e.PerMonth()), e.PerDay()/kin, 100*e.PerDay()/kafka)
		}
		fmt.Fprintln(w)
		o.Producers.Count = 10
		fmt.Fprintln(w, "breakdown, 10 producers\tquantity/day\tunit\t$/day\t")
		for _, l := range Strata(o, Baseline).Lines {
			fmt.Fprintf(w, "%s\t%.4g\t%s\t%s\t\n", l.Item, l.Quantity, l.Unit, usd(l.USD))
		}
		fmt.Fprintln(w)
	}

	o := base
	o.Workload.Groups = 1
	fmt.Fprintln(w, "== linger and batch bytes (1 group): $/day and ack floor ==")
	hdr := "producers\tbatch\t"
	for _, l := range s.Lingers {
		hdr += "linger " + l.String() + "\t"
	}
	fmt.Fprintln(w, hdr)
	for _, n := range []int{10, 100} {
		for _, b := range s.BatchBytes {
			row := fmt.Sprintf("%d\t%.0f MiB\t", n, b/(1<<20))
			for _, l := range s.Lingers {
				o.Producers.Count, o.Producers.BatchBytes, o.Producers.Linger = n, b, l
				e := Strata(o, Baseline)
				row += fmt.Sprintf("%s / %s\t", usd(e.PerDay()), ms(e.Flow.AckFloor))
			}
			fmt.Fprintln(w, row)
		}
	}
	fmt.Fprintln(w)

	o = base
	o.Workload.Groups = 1
	fmt.Fprintln(w, "== partitions (1 group, linger "+base.Producers.Linger.String()+"): $/day ==")
	hdr = "shape\tproducers\t"
	for _, p := range s.Partitions {
		hdr += fmt.Sprintf("%d partitions\t", p)
	}
	fmt.Fprintln(w, hdr)
	for _, sh := range []Shape{ShapeSDK, ShapeMulti} {
		for _, n := range []int{10, 100} {
			row := fmt.Sprintf("%s\t%d\t", sh, n)
			for _, p := range s.Partitions {
				o.Producers.Shape, o.Producers.Count, o.Workload.Partitions = sh, n, p
				row += usd(Strata(o, Baseline).PerDay()) + "\t"
			}
			fmt.Fprintln(w, row)
		}
	}
	fmt.Fprintln(w)

	o = base
	o.Workload.Groups = 1
	fmt.Fprintln(w, "== where Strata (baseline) crosses each alternative: fewest producers costing more ==")
	fmt.Fprintln(w, "alternative\tlinger\tbatch\tSDK shape\tmulti shape\taggregation tier\t")
	for _, a := range Alternatives(o) {
		for _, l := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second} {
			for _, b := range s.BatchBytes {
				o.Producers.Linger, o.Producers.BatchBytes = l, b
				o.Producers.Shape = ShapeSDK
				sdk := Crossing(o, Baseline, a.PerDay())
				o.Producers.Shape = ShapeMulti
				multi := Crossing(o, Baseline, a.PerDay())
				agg := Crossing(o, Aggregation, a.PerDay())
				fmt.Fprintf(w, "%s\t%s\t%.0f MiB\t%s\t%s\t%s\t\n", a.Name, l, b/(1<<20),
					crossing(sdk), crossing(multi), crossing(agg))
			}
		}
	}
	fmt.Fprintln(w)

	o = base
	o.Workload.Groups = 1
	fmt.Fprintln(w, "== aggregation tier flow (1 group): requests/s → instances, members per object, objects/s, partitions per object; $/day ==")
	fmt.Fprintln(w, "shape\tproducers\trequests/s\tinstances\tmembers/object\tobjects/s\tpartitions/object\t$/day folded claims\t$/day fenced\t")
	for _, sh := range []Shape{ShapeSDK, ShapeMulti} {
		for _, n := range s.Producers {
			o.Producers.Shape, o.Producers.Count = sh, n
			o.Claims = ClaimsFolded
			e := Strata(o, Aggregation)
			o.Claims = ClaimsFenced
			fenced := Strata(o, Aggregation)
			f := e.Flow
			fmt.Fprintf(w, "%s\t%d\t%.1f\t%d\t%.1f\t%.1f\t%.2f\t%s\t%s\t\n", sh, n, f.ProducerRequestsPerSec, f.Instances,
				f.MembersPerAppend, f.AppendsPerSec, f.BlocksPerAppend, usd(e.PerDay()), usd(fenced.PerDay()))
		}
	}
	fmt.Fprintln(w)
	o = base
	o.Workload.Groups, o.Producers.Count = 1, 100
	fmt.Fprintf(w, "breakdown, aggregation tier, 100 producers, %s\tfolded claims\tfenced\t\n", o.Producers.Shape)
	o.Claims = ClaimsFolded
	as := Strata(o, Aggregation).Lines
	o.Claims = ClaimsFenced
	for i, l := range Strata(o, Aggregation).Lines {
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", l.Item, usd(as[i].USD), usd(l.USD))
	}
	fmt.Fprintln(w)

	o = base
	o.Workload.Groups = 1
	o.Producers.Shape = ShapeMulti
	kin, kafka := KinesisProvisioned(o, true).PerDay(), KafkaEC2(o).PerDay()
	pricings := []Claims{base.Claims}
	if pf.Idempotent {
		pricings = []Claims{ClaimsFolded, ClaimsFenced}
	}
	for _, c := range pricings {
		o.Claims = c
		fmt.Fprintf(w, "== design alternatives (1 group, %s, linger %s; claims: %s): $/day, ack floor ==\n", o.Producers.Shape, o.Producers.Linger, c)
		fmt.Fprintln(w, "design\t10 producers\t100 producers\t1000 producers\t")
		for _, d := range Designs {
			row := d.String() + "\t"
			for _, n := range []int{10, 100, 1000} {
				o.Producers.Count = n
				e := Strata(o, d)
				row += fmt.Sprintf("%s (%.2f× KPL, %.0f%% Kafka) / %s\t", usd(e.PerDay()), e.PerDay()/kin, 100*e.PerDay()/kafka, ms(e.Flow.AckFloor))
			}
			fmt.Fprintln(w, row)
		}
		fmt.Fprintln(w)
	}
	Targets(w, base, base.Built)
	return nil
}

func crossing(n int) string {
	switch n {
	case 0:
		return "never (≤100k)"
	case 1:
		return "already at 1"
	}
	return fmt.Sprintf("%d", n)
}
