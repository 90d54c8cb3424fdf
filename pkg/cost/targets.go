package cost

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Lever is one part of the ingest design a configuration needs (issue 20).
type Lever string

const (
	// LeverFunctionURL: clients on the api function's URL instead of API Gateway
	// (infra: strata:frontDoor; the SDK and CLI sign for lambda).
	LeverFunctionURL Lever = "function-url"
	// LeverTier: the api function on Managed Instances with the group commit's window
	// and budget set by the stack (strata:groupCommitWindowMs, strata:groupCommitBudgetBytes).
	LeverTier Lever = "tier"
	// LeverFolded: one idempotency claim per request carrying every partition's offsets,
	// idempotent members sharing a batch's commits (ClaimsFolded).
	LeverFolded Lever = "folded"
	// LeverFenced: fenced idempotency, the SDK's producer requests writing no claim (a
	// retry fences the earlier attempts on the topic item and searches the log for
	// them), members sharing a batch's commits (ClaimsFenced).
	LeverFenced Lever = "fenced"
	// LeverManifest: one manifest item per batch instead of an index entry per
	// partition, beside the topic commit that is built (designs TopicManifest,
	// AggTopicManifest).
	LeverManifest Lever = "manifest"
	// LeverConsumerWindow: dispatch's stream batching window as a stack setting
	// (strata:consumerBatchingWindowSeconds), consumers invoked at most once per
	// partition per window (Serving.ConsumerWindow).
	LeverConsumerWindow Lever = "consumer-window"
)

// Levers lists every lever, in the order they are written.
var Levers = []Lever{LeverFunctionURL, LeverTier, LeverFolded, LeverFenced, LeverManifest, LeverConsumerWindow}

// BuiltLevers are the levers built in this tree: what a configuration may need and still
// count as built. Pass the levers merged since with `strata bench cost --built`.
func BuiltLevers() []Lever {
	return []Lever{LeverFunctionURL, LeverTier, LeverFolded, LeverFenced, LeverConsumerWindow}
}

// Configuration is one way to deploy and use Strata that the targets table prices.
type Configuration struct {
	Name        string
	Design      Design
	FunctionURL bool
	// TierWindow and TierBudget replace the aggregator's window and byte budget when
	// set (the tier designs only).
	TierWindow time.Duration
	TierBudget float64
	// Claims is how the configuration's idempotency claims are priced: fenced (the SDK's
	// producer requests) or folded (one claim per request, for comparison).
	Claims Claims
	// ConsumerWindow is dispatch's stream batching window (Serving.ConsumerWindow).
	ConsumerWindow time.Duration
	Needs          []Lever
}

// Apply returns o configured as c.
func (c Configuration) Apply(o Options) Options {
	o.Serving.FunctionURL = c.FunctionURL
	o.Serving.ConsumerWindow = c.ConsumerWindow
	o.Claims = c.Claims
	if c.TierWindow > 0 {
		o.Aggregator.Window = c.TierWindow
	}
	if c.TierBudget > 0 {
		o.Aggregator.BudgetBytes = c.TierBudget
	}
	return o
}

// Built reports whether every lever c needs is in built.
func (c Configuration) Built(built []Lever) bool {
	for _, l := range c.Needs {
		if !slices.Contains(built, l) {
			return false
		}
	}
	return true
}

// The append tier as a stack can run it (issue 20 item 5): a 250 ms window cutting
// objects of up to 16 MiB; and the consumer window the table prices, once a second as
// the Kinesis mapping polls a shard. TierWindows are the tier windows the targets table
// prices the best configuration at: the stack's setting (strata:groupCommitWindowMs)
// takes up to deploy.MaxGroupCommitWindow, 1 s.
const (
	TierWindow     = 250 * time.Millisecond
	TierBudget     = 16 << 20
	ConsumerWindow = time.Second
)

// TierWindows are the tier windows of the best configuration's rows.
var TierWindows = []time.Duration{TierWindow, 500 * time.Millisecond, time.Second}

// Configurations are the configurations of the targets table, SDK producers throughout:
// what is built first, then the manifest added. Every one prices the SDK's producer
// requests as built, fenced idempotency (no claim per request, idempotent members
// sharing a batch's commits), and the topic commit, so each needs LeverFenced; the best
// configuration is also priced at longer tier windows (TierWindows) and, for comparison,
// with folded claims (one claim per request, the code before fenced idempotency).
func Configurations() []Configuration {
	cfg := func(name string, d Design, furl bool, window time.Duration, budget float64, needs ...Lever) Configuration {
		return Configuration{Name: name, Design: d, FunctionURL: furl, TierWindow: window, TierBudget: budget, Claims: ClaimsFenced,
			Needs: append([]Lever{LeverFenced}, needs...)}
	}
	windowed := func(c Configuration) Configuration {
		c.Name += ", consumer window 1 s"
		c.ConsumerWindow = ConsumerWindow
		c.Needs = append(slices.Clone(c.Needs), LeverConsumerWindow)
		return c
	}
	tierAt := func(window time.Duration, needs ...Lever) Configuration {
		return cfg(fmt.Sprintf("function URL, tier %s / 16 MiB", ms(window)), Aggregation, true, window, TierBudget,
			append([]Lever{LeverFunctionURL, LeverTier}, needs...)...)
	}
	furl := cfg("function URL, on-demand Lambda", Baseline, true, 0, 0, LeverFunctionURL)
	tier := tierAt(TierWindow)
	folded := windowed(tier)
	folded.Name += ", folded claims"
	folded.Claims, folded.Needs = ClaimsFolded, append([]Lever{LeverFolded}, folded.Needs[1:]...)
	tierManifest := cfg("function URL, tier 250 ms / 16 MiB, manifest", AggTopicManifest, true, TierWindow, TierBudget,
		LeverFunctionURL, LeverTier, LeverManifest)
	out := []Configuration{
		cfg("API Gateway, on-demand Lambda", Baseline, false, 0, 0),
		cfg("API Gateway, tier 5 ms (deployed default on Managed Instances)", Aggregation, false, 5*time.Millisecond, 1<<20, LeverTier),
		furl,
		windowed(furl),
		tier,
		windowed(tier),
		folded,
	}
	for _, w := range TierWindows[1:] {
		out = append(out, windowed(tierAt(w)))
	}
	return append(out,
		cfg("function URL, manifest", TopicManifest, true, 0, 0, LeverFunctionURL, LeverManifest),
		tierManifest,
		windowed(tierManifest),
	)
}

// BestConfigurations are the configurations "where the money goes" breaks down: the best
// built one (function URL, tier, consumer window 1 s) at each of TierWindows, fenced,
// and at the 250 ms window with folded claims.
func BestConfigurations() []Configuration {
	var out []Configuration
	for _, c := range Configurations() {
		if c.Design == Aggregation && c.FunctionURL && c.ConsumerWindow > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Target is the bound on one cell: at most KPL times Kinesis with the KPL (same
// groups and linger) and at most KafkaShare of three-AZ Kafka.
func Target(producers int) (kpl, kafkaShare float64) {
	if producers >= 1000 {
		return 2, 0.10
	}
	return 1, 0.10
}

// TargetCell is one priced cell of the targets table.
type TargetCell struct {
	Producers, Groups int
	Linger            time.Duration
	PerDay            float64
	KPL, Kafka        float64 // the alternatives' $/day at the same groups (and linger, for the KPL)
	AckFloor          time.Duration
	// ConsumerDelay is what the consumer window adds to delivery beyond the ack: up to
	// the window (0 without one).
	ConsumerDelay time.Duration
}

// Met reports whether the cell is within Target.
func (c TargetCell) Met() bool {
	kpl, share := Target(c.Producers)
	return c.PerDay <= kpl*c.KPL && c.PerDay <= share*c.Kafka
}

// PriceTarget prices configuration c at n producers, groups and linger.
func PriceTarget(base Options, c Configuration, n, groups int, linger time.Duration) TargetCell {
	o := c.Apply(base)
	o.Producers.Count, o.Workload.Groups, o.Producers.Linger = n, groups, linger
	e := Strata(o, c.Design)
	return TargetCell{Producers: n, Groups: groups, Linger: linger, PerDay: e.PerDay(),
		KPL: KinesisProvisioned(o, true).PerDay(), Kafka: KafkaEC2(o).PerDay(), AckFloor: e.Flow.AckFloor,
		ConsumerDelay: o.Serving.ConsumerWindow}
}

// ParityLingers are the lingers ParityLinger tries, shortest first.
var ParityLingers = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}

// ParityLinger is the shortest of ParityLingers at which c at n producers and one group
// costs at most Kinesis with the KPL at that linger, or 0 when none does.
func ParityLinger(base Options, c Configuration, n int) time.Duration {
	for _, l := range ParityLingers {
		if cell := PriceTarget(base, c, n, 1, l); cell.PerDay <= cell.KPL {
			return l
		}
	}
	return 0
}

// RequestFloor is the Lambda request fees alone of n producers sending one request per
// linger each: $0.20 per million however small the request.
func RequestFloor(o Options, n int, linger time.Duration) float64 {
	return float64(n) / math.Max(linger.Seconds(), o.Latency.Service().Seconds()) * secondsPerDay * o.Prices.LambdaRequest.USD
}

// TargetProducers, TargetGroups and TargetLingers are the targets table's cells.
var (
	TargetProducers = []int{10, 100, 1000}
	TargetGroups    = []int{1, 3}
	TargetLingers   = []time.Duration{time.Second, 100 * time.Millisecond}
)

// Targets writes the targets table: per configuration, linger and producer
// count, $/day at 1 and 3 groups with × Kinesis KPL (same linger) and % of three-AZ
// Kafka, the ack-latency floor, whether it is built or modelled (a modelled row meets no
// target), and the verdict; then the request-fee floor and the linger reaching parity
// at 1,000 producers.
func Targets(w io.Writer, base Options, built []Lever) {
	fmt.Fprintf(w, "== targets (issue 20): SDK producers, fenced idempotency unless a row says folded claims; ≤ 1.0× Kinesis KPL at 10 and 100 producers, ≤ 2× at 1,000, 3 groups ≤ KPL's 3-group figure, ≤ 10%% of Kafka everywhere; built levers: %s ==\n",
		strings.Join(leverNames(built), ", "))
	fmt.Fprintln(w, "configuration\tlinger\tproducers\t1 group $/day (× KPL, % Kafka)\t3 groups $/day (× KPL, % Kafka)\tack floor\tbuilt?\tverdict\t")
	for _, c := range Configurations() {
		status := "modelled"
		if c.Built(built) {
			status = "built"
		}
		for _, l := range TargetLingers {
			for _, n := range TargetProducers {
				row := fmt.Sprintf("%s\t%s\t%d\t", c.Name, l, n)
				met := true
				var ack string
				for _, g := range TargetGroups {
					cell := PriceTarget(base, c, n, g, l)
					met = met && cell.Met()
					ack = ms(cell.AckFloor)
					if cell.ConsumerDelay > 0 {
						ack += " (consumers +≤" + ms(cell.ConsumerDelay) + ")"
					}
					row += fmt.Sprintf("%s (%.2f×, %.1f%%)\t", usd(cell.PerDay), cell.PerDay/cell.KPL, 100*cell.PerDay/cell.Kafka)
				}
				verdict := "missed"
				switch {
				case met && status == "built":
					verdict = "met"
				case met:
					verdict = "would meet (modelled)"
				}
				fmt.Fprintln(w, row+ack+"\t"+status+"\t"+verdict+"\t")
			}
		}
	}
	fmt.Fprintln(w)
	WhereTheMoneyGoes(w, base, built)
	fmt.Fprintln(w, "alternatives at the targets' cells\tlinger\tproducers\tKinesis KPL 1 group\tKinesis KPL 3 groups\tKPL units/s\tKPL ack floor\tKafka 1 group\tKafka 3 groups\t")
	for _, l := range TargetLingers {
		for _, n := range TargetProducers {
			o := base
			o.Producers.Count, o.Producers.Linger = n, l
			o.Workload.Groups = 1
			k1, f, kaf1 := KinesisProvisioned(o, true).PerDay(), KPLFlowOf(o), KafkaEC2(o).PerDay()
			o.Workload.Groups = 3
			fmt.Fprintf(w, "\t%s\t%d\t%s\t%s\t%.0f\t%s\t%s\t%s\t\n", l, n, usd(k1), usd(KinesisProvisioned(o, true).PerDay()),
				f.UnitsPerSecond, ms(f.AckFloor), usd(kaf1), usd(KafkaEC2(o).PerDay()))
		}
	}
	fmt.Fprintln(w)
	o := base
	fmt.Fprintf(w, "The floor: every Lambda-fronted request pays %s per million (Kinesis: %s per 25 KB PUT payload unit, %.0f× less): "+
		"1,000 producers sending one request a second pay %s/day in request fees alone, %s at linger 100 ms.\n",
		usd(o.Prices.LambdaRequest.USD*1e6), usd(o.Prices.KinesisPayloadUnit.USD*1e6), o.Prices.LambdaRequest.USD/o.Prices.KinesisPayloadUnit.USD,
		usd(RequestFloor(o, 1000, time.Second)), usd(RequestFloor(o, 1000, 100*time.Millisecond)))
	fmt.Fprintln(w, "parity at 1,000 producers (1 group): the shortest linger at which the configuration costs ≤ Kinesis KPL at the same linger")
	fmt.Fprintln(w, "configuration\tbuilt?\tparity linger\t$/day there\tKPL $/day there\t")
	for _, c := range Configurations() {
		status := "modelled"
		if c.Built(built) {
			status = "built"
		}
		l := ParityLinger(base, c, 1000)
		if l == 0 {
			fmt.Fprintf(w, "%s\t%s\tnone ≤ %s\t\t\t\n", c.Name, status, ParityLingers[len(ParityLingers)-1])
			continue
		}
		cell := PriceTarget(base, c, 1000, 1, l)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", c.Name, status, l, usd(cell.PerDay), usd(cell.KPL))
	}
	fmt.Fprintln(w)
}

// WhereTheMoneyGoes writes, for each of BestConfigurations at TargetLingers and
// TargetProducers with one group, the $/day of each line of its estimate (the
// idempotency claims a column of their own: $0 under fenced idempotency), with the
// tier's instances, members per object and objects/s, and whether the byte budget cut
// the batches before the window did.
func WhereTheMoneyGoes(w io.Writer, base Options, built []Lever) {
	cs := BestConfigurations()
	if len(cs) == 0 {
		return
	}
	var items []string
	for _, l := range Strata(cs[0].Apply(base), cs[0].Design).Lines {
		items = append(items, l.Item)
	}
	fmt.Fprintln(w, "where the money goes (1 group): $/day per line of the estimate")
	fmt.Fprintln(w, "configuration\tbuilt?\tlinger\tproducers\tinstances\tmembers/object\tobjects/s\tcut by\t"+strings.Join(items, "\t")+"\ttotal\t")
	for _, c := range cs {
		status := "modelled"
		if c.Built(built) {
			status = "built"
		}
		for _, l := range TargetLingers {
			for _, n := range TargetProducers {
				o := c.Apply(base)
				o.Producers.Count, o.Workload.Groups, o.Producers.Linger = n, 1, l
				e := Strata(o, c.Design)
				f := e.Flow
				cut := "window"
				if f.BudgetBound {
					cut = "budget"
				}
				row := fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%.1f\t%.2f\t%s\t", c.Name, status, l, n, f.Instances, f.MembersPerAppend, f.AppendsPerSec, cut)
				usdOf := map[string]float64{}
				for _, li := range e.Lines {
					usdOf[li.Item] += li.USD
				}
				for _, it := range items {
					row += usd(usdOf[it]) + "\t"
				}
				fmt.Fprintln(w, row+usd(e.PerDay())+"\t")
			}
		}
	}
	fmt.Fprintln(w)
}

func leverNames(ls []Lever) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// ParseLevers reads a comma-separated list of levers ("" is none).
func ParseLevers(s string) ([]Lever, error) {
	var out []Lever
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !slices.Contains(Levers, Lever(part)) {
			return nil, fmt.Errorf("cost: unknown lever %q, want some of %s", part, strings.Join(leverNames(Levers), ", "))
		}
		out = append(out, Lever(part))
	}
	return out, nil
}
