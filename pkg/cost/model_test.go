package cost

import (
	"math"
	"strings"
	"testing"
	"time"
)

func near(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.6f, want %.6f", name, got, want)
	}
}

// The expectations below are worked by hand from the price table (see the comments).
func TestAlternatives(t *testing.T) {
	// in = 50,000 × 1,024 B = 51,200,000 B/s = 48.83 MiB/s; 4,119.873046875 GiB/day.
	tests := []struct {
		name   string
		groups int
		est    func(Options) Estimate
		want   float64
	}{
		// 49 shards (write MiB/s) × 24 h × 0.015 = 17.64. KPL at the 1 s linger: each of 10
		// producers flushes 5,000 records a second over all 49 shards, 104,490 B per shard:
		// two full 51,200-B aggregated records (2 units each) and one of 2,090 B (1 unit),
		// 5 units × 49 shards × 10 producers = 2,450 units/s × 86,400 × 0.014e-6 = 2.96352.
		{"kinesis agg, 1 group", 1, func(o Options) Estimate { return KinesisProvisioned(o, true) }, 17.64 + 2.96352},
		// 50 shards (1,000 records/s each) = 18.00; 50,000 units/s × 86,400 × 0.014e-6 = 60.48.
		{"kinesis no agg, 1 group", 1, func(o Options) Estimate { return KinesisProvisioned(o, false) }, 18 + 60.48},
		// reads 3 × 48.83 / 2 = 73.2 → 74 shards = 26.64; a flush puts 69,190 B per shard:
		// 2 + 1 units, × 74 × 10 = 2,220 units/s = 2.685312.
		{"kinesis agg, 3 groups", 3, func(o Options) Estimate { return KinesisProvisioned(o, true) }, 26.64 + 2.685312},
		// 24 × 0.04 + 4,119.873046875 × (0.08 + 0.04).
		{"kinesis on-demand, 1 group", 1, KinesisOnDemand, 0.96 + 4119.873046875*0.12},
		// 24 × 0.04 + 4,119.873046875 × (0.08 + 3 × 0.04).
		{"kinesis on-demand, 3 groups", 3, KinesisOnDemand, 0.96 + 4119.873046875*0.20},
		// traffic 6 × 48.83 = 293 MiB/s → 2 → 3 brokers × 24 × 0.384 = 27.648;
		// disk 4,119.87 × 3 / 0.5 GB for 1/30.4167 month × 0.08; cross-AZ (2/3 + 2 + 2/3) × 4,119.87 × 0.02.
		{"kafka, 1 group", 1, KafkaEC2, 27.648 + 4119.873046875*6/(730.0/24)*0.08 + 4119.873046875*(10.0/3)*0.02},
		// traffic 8 × 48.83 = 391 MiB/s → 3 → 3 brokers; cross-AZ (2/3 + 2 + 2).
		{"kafka, 3 groups", 3, KafkaEC2, 27.648 + 4119.873046875*6/(730.0/24)*0.08 + 4119.873046875*(14.0/3)*0.02},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Defaults(10)
			o.Workload.Groups = tt.groups
			near(t, "$/day", tt.est(o).PerDay(), tt.want)
		})
	}
}

// TestKinesisKPLGrowsWithProducers (issue 20, the honest anchor): the KPL at the same
// buffering as Strata's producers (RecordMaxBufferedTime = the linger) spreads each
// producer's flush over the shards, so its PUT payload units grow with the producers
// instead of staying at bytes/25 KB; and aggregated records beyond 1,000/s per shard add
// shards.
func TestKinesisKPLGrowsWithProducers(t *testing.T) {
	touched := func(shards, recs float64) float64 { return shards * (1 - math.Pow(1-1/shards, recs)) }
	tests := []struct {
		name      string
		producers int
		linger    time.Duration
		units     float64 // per second
		shards    float64
	}{
		// 1 producer: 50,000 records a flush, 1,044,898 B per shard: 20 full aggregated
		// records (40 units) and 21,898 B (1 unit) = 41 × 49 a second.
		{"1 producer, 1 s", 1, time.Second, 41 * 49, 49},
		// 1,000 producers at 1 s: 50 records a flush touch 31.6 shards, 1.6 KB each: 1 unit.
		{"1000 producers, 1 s", 1000, time.Second, 1000 * touched(49, 50), 49},
		// at 100 ms: 5 records touch 4.8 shards, ten flushes a second.
		{"1000 producers, 100 ms", 1000, 100 * time.Millisecond, 1000 * touched(49, 5) / 0.1, 49},
		// 10,000 producers at 100 ms: every flush one record, 100,000 aggregated
		// records/s need 100 shards.
		{"10000 producers, 100 ms", 10000, 100 * time.Millisecond, 10000 / 0.1, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Defaults(tt.producers)
			o.Producers.Linger = tt.linger
			f := KPLFlowOf(o)
			near(t, "units/s", f.UnitsPerSecond, tt.units)
			near(t, "shards", f.Shards, tt.shards)
			near(t, "$/day", KinesisProvisioned(o, true).PerDay(), tt.shards*24*0.015+tt.units*86400*0.014e-6)
		})
	}
	o := Defaults(10)
	few := KinesisProvisioned(o, true).PerDay()
	o.Producers.Count = 1000
	if many := KinesisProvisioned(o, true).PerDay(); many < 2*few {
		t.Errorf("KPL at 1,000 producers $%.2f/day, at 10 $%.2f: want the payload units to grow with the producers", many, few)
	}
}

func TestKafkaFetchFromFollowerAndBrokers(t *testing.T) {
	o := Defaults(10)
	o.Kafka.FetchFromFollower = true
	o.Kafka.BrokerMiBps = 50 // 293 MiB/s / 50 = 5.9 → 6 brokers
	want := 6*24*0.384 + 4119.873046875*6/(730.0/24)*0.08 + 4119.873046875*(8.0/3)*0.02
	near(t, "$/day", KafkaEC2(o).PerDay(), want)
}

func TestFlow(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Options)
		d       Design
		appends float64
		recs    float64
		blocks  float64
		ack     time.Duration
	}{
		// 10 producers × 8 partitions: 625 records/s per partition batch; the 1 s linger
		// cuts before the 1,000-record cap (1 MiB / 1,040 B would be 1,008). A round of
		// 8 batches of 625 exceeds one request to the api function ((4 MiB − 5 B) /
		// 1,040 B = 4,033 records, 6 whole batches), so it goes as two of 4 batches: 20
		// appends/s of 2,500 records over 4 blocks.
		{"sdk, 10 producers, 1s", func(o *Options) {}, Baseline, 20, 2500, 4, time.Second + 56*time.Millisecond},
		// 1 producer: 6,250 records/s per partition fill 1,000 in 0.16 s; the round's
		// 8,000 records exceed a request's 4,033, so it goes as two requests of whole
		// batches (4 and 4): 12.5 appends/s of 4,000 records over 4 blocks.
		{"sdk, 1 producer", func(o *Options) { o.Producers.Count = 1 }, Baseline, 12.5, 4000, 4, 216 * time.Millisecond},
		// 1,000 producers: 50 records/s each → a round of 50 over 8 partitions a second.
		{"sdk, 1000 producers", func(o *Options) { o.Producers.Count = 1000 }, Baseline, 1000, 50, 8, time.Second + 56*time.Millisecond},
		// 100,000 producers: 0.5 records/s each: every record alone.
		{"sdk, 100k producers", func(o *Options) { o.Producers.Count = 100000 }, Baseline, 50000, 1, 1, time.Second + 56*time.Millisecond},
		// multi: 5,000 records/s per producer fill 1,000 records in 0.2 s.
		{"multi, 10 producers", func(o *Options) { o.Producers.Shape = ShapeMulti }, Baseline, 50, 1000, 8,
			256 * time.Millisecond},
		// JSON bodies: 1,400 B a record, so 1 MiB holds 748 records, filled in 0.1496 s.
		{"multi, 10 producers, JSON", func(o *Options) {
			o.Producers.Shape, o.Producers.EncodedRecordBytes = ShapeMulti, JSONRecordBytes
		}, Baseline, 50000.0 / 748, 748, 8, time.Duration((748.0/5000 + 0.056) * float64(time.Second))},
		// linger 0: a round per service time (56 ms): 5,000 × 0.056 = 280 records.
		{"sdk, linger 0", func(o *Options) { o.Producers.Linger = 0 }, Baseline, 50000 / 280.0, 280, 8, 56 * time.Millisecond},
		// aggregation: 1,000 SDK requests/s of 50 records need 1,000 × 7 ms + 50,000 ×
		// 70 ns = 7.0035 vCPU: 6 instances at 2 × 70 %. Each takes 166.7 requests/s, so a
		// 50 ms batch has 1 + 8.33 members (below 4 MiB / (50 × 1,040 B) = 80): 1,000 /
		// 9.33 objects/s of 466.7 records over 8 × (1 − (1 − 8/8)^9.33) = 8 partitions.
		{"aggregation, 1000 producers", func(o *Options) {
			o.Producers.Count, o.Profile.Group.CPUPerAppend = 1000, 7*time.Millisecond
		}, Aggregation, 1000 / (1 + 1000.0/6*0.05), 50 * (1 + 1000.0/6*0.05), 8, time.Second + 106*time.Millisecond},
		// 10,000 multi producers over 10 partitions: a 1 s request of 5 records touches
		// 5. 10,000 requests/s need 10,000 × 0.3 ms + 50,000 × 70 ns = 3.0035 vCPU → 3
		// instances of 3,333.3 requests/s, so 1 + 166.67 members a batch, over
		// 10 × (1 − (1/2)^167.67) partitions.
		{"aggregation, partial partitions", func(o *Options) {
			o.Producers.Count, o.Producers.Shape, o.Workload.Partitions = 10000, ShapeMulti, 10
		}, Aggregation, 10000 / (1 + 10000.0/3*0.05), 5 * (1 + 10000.0/3*0.05), 10 * (1 - math.Pow(0.5, 1+10000.0/3*0.05)),
			time.Second + 106*time.Millisecond},
		// a 1 s window: 501 members (2 instances, 0.3 ms each) would be 25,050 records,
		// more than the 4 MiB budget holds (80 members of 50 records).
		{"aggregation, budget binds", func(o *Options) { o.Producers.Count, o.Aggregator.Window = 1000, time.Second },
			Aggregation, 1000 / 80.0, 50 * 80, 8, 2*time.Second + 56*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Defaults(10)
			tt.mod(&o)
			f := FlowOf(o, tt.d)
			near(t, "appends/s", f.AppendsPerSec, tt.appends)
			near(t, "records/append", f.RecordsPerAppend, tt.recs)
			near(t, "blocks/append", f.BlocksPerAppend, tt.blocks)
			if d := f.AckFloor - tt.ack; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("ack floor = %s, want %s", f.AckFloor, tt.ack)
			}
		})
	}
}

func TestStrataBaseline(t *testing.T) {
	// 10 SDK producers, linger 1 s: each round in two requests (TestFlow), 20 appends/s =
	// 1,728,000 a day, 4 blocks each.
	o := Defaults(10)
	e := Strata(o, Baseline)
	const appends = 1728000.0
	want := map[string]float64{
		"S3 PUT (segment objects)": appends * 5e-6,
		// One topic commit (4 of 8 partitions, 1 unit) + 4 index entries; no key, no claim.
		LineCommitWrites: appends * (1 + 4) * 0.625e-6,
		LineClaimWrites:  0,
		// 10 blocks/s per partition = the 10 polls/s cap: 8 × 10 × 86,400 polls × 2 reads.
		"DynamoDB read units (polls, append checks)": 6912000 * 2 * 0.125e-6,
		"S3 GET (blocks read)":                       appends * 4 * 0.4e-6,
		// 51.2e6 B/s × 1.05 × 86,400 s / 2^30 GB for 1/30.4167 of a month.
		"S3 storage (GB-month)":       51.2e6 * 1.05 * 86400 / (1 << 30) / (730.0 / 24) * 0.023,
		"DynamoDB storage (GB-month)": appends * 4 * 300 / (1 << 30) / (730.0 / 24) * 0.25,
		// 2,500 × 1,040 B = 2,600,000 B → 5 units of 512 KB; plus the polls.
		"API Gateway HTTP API requests": (appends*5 + 6912000) * 1e-6,
		"Lambda requests":               (appends + 6912000) * 0.2e-6,
		// appends × (56 ms + 2,500 records × 70 ns) + polls × 20 ms at 1 GB.
		"Lambda GB-seconds (appends + polls)": (appends*(0.056+2500*70e-9) + 6912000*0.020) * 0.0000133334,
	}
	var total float64
	for _, l := range e.Lines {
		w, ok := want[l.Item]
		if !ok {
			t.Errorf("unexpected line %q", l.Item)
			continue
		}
		near(t, l.Item, l.USD, w)
		total += w
		delete(want, l.Item)
	}
	for item := range want {
		t.Errorf("missing line %q", item)
	}
	near(t, "total", e.PerDay(), total)
	near(t, "month", e.PerMonth(), total*730/24)
}

func TestFunctionURLDropsAPIGateway(t *testing.T) {
	o := Defaults(10)
	with := Strata(o, Baseline).PerDay()
	o.Serving.FunctionURL = true
	// 864,000 appends × 10 units + 6,912,000 polls at $1 per million.
	near(t, "API Gateway share", with-Strata(o, Baseline).PerDay(), (864000*10+6912000)*1e-6)
}

func TestDesignWrites(t *testing.T) {
	// Multi-partition appends: 1,000 records over 8 partitions, 50 appends/s.
	appends := 50.0 * 86400
	tests := []struct {
		d        Design
		perAppnd float64
	}{
		{Baseline, 1 + 8}, // one topic UpdateItem (200 + 8 × 27 + 8 × 31 B < 1 KB) + 8 PutItem
		{TopicManifest, 1 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			o := Defaults(10)
			o.Producers.Shape = ShapeMulti
			for _, l := range Strata(o, tt.d).Lines {
				if l.Item == LineCommitWrites {
					near(t, "WRU/day", l.Quantity, appends*tt.perAppnd)
				}
			}
		})
	}
}

// TestTopicCommitWRUMatchesTheItem: the topic commit's write units are those
// pkg/store/dynamo's TestTopicItemSize measures on the item it writes (`go test -v -run
// TestTopicItemSize ./pkg/store/dynamo`), at every partition count and batch it logs.
func TestTopicCommitWRUMatchesTheItem(t *testing.T) {
	for _, c := range []struct {
		partitions, touched int
		wru                 float64
	}{{1, 1, 1}, {16, 1, 1}, {16, 16, 2}, {64, 1, 2}, {64, 16, 3}, {64, 64, 4}, {256, 16, 8}, {256, 256, 15}} {
		if got := TopicCommitWRU(c.partitions, float64(c.touched)); got != c.wru {
			t.Errorf("%d partitions, batch touching %d: %v write units, the item takes %v", c.partitions, c.touched, got, c.wru)
		}
	}
}

// TestTierCountsOneTopicCommitPerBatch: in the tier the topic commit is written once per
// batch (segment object), not once per member request.
func TestTierCountsOneTopicCommitPerBatch(t *testing.T) {
	o := Defaults(1000)
	wru := func(o Options) float64 { return writeUnits(Strata(o, Aggregation)) }
	f := FlowOf(o, Aggregation)
	without := o
	without.Profile.Group.TopicCommitsPerBatch = 0
	near(t, "topic commit WRU/day", wru(o)-wru(without), f.AppendsPerSec*86400*TopicCommitWRU(8, f.BlocksPerAppend))
}

func TestAggTopicManifest(t *testing.T) {
	// 1,000 producers without keys: every batch is one topic UpdateItem + one manifest
	// item; the same flow as the tier.
	o := Defaults(1000)
	f, g := FlowOf(o, AggTopicManifest), FlowOf(o, Aggregation)
	if f != g {
		t.Errorf("flows differ: %+v vs %+v", f, g)
	}
	near(t, "WRU/day", writeUnits(Strata(o, AggTopicManifest)), f.AppendsPerSec*86400*2)
	if Strata(o, AggTopicManifest).PerDay() >= Strata(o, Aggregation).PerDay() {
		t.Error("the combination is not cheaper than the tier alone")
	}
}

// writeUnits is an estimate's DynamoDB write units a day: its commits' and its claims'.
func writeUnits(e Estimate) float64 {
	return lineQuantity(e, LineCommitWrites) + lineQuantity(e, LineClaimWrites)
}

// lineQuantity is the quantity of e's line item, NaN when e has no such line.
func lineQuantity(e Estimate, item string) float64 {
	for _, l := range e.Lines {
		if l.Item == item {
			return l.Quantity
		}
	}
	return math.NaN()
}

// TestTierIdempotentMembers: as built (fenced idempotency) idempotent members share a
// batch's commits and write no claim, so the tier saves commits and entries as for
// members without a key. Folded claims (Options.Claims) add one claim per request. A
// profile counted before folding (each member its own commits and per-partition claims)
// writes as many DynamoDB units in the tier as without it, and ClaimsFolded prices
// folding over it.
func TestTierIdempotentMembers(t *testing.T) {
	o := Defaults(100)
	o.Profile = IdempotentDesignProfile()
	built, tier := Strata(o, Baseline), Strata(o, Aggregation)
	// 100 SDK producers: 100 requests/s of 8 blocks, each 1 topic commit + per block 1
	// entry, no claim.
	near(t, "built baseline WRU/day", writeUnits(built), 100*86400*(1+8))
	near(t, "built baseline claim WRU/day", lineQuantity(built, LineClaimWrites), 0)
	f := *tier.Flow
	if f.MembersPerAppend < 2 {
		t.Fatalf("%.2f members per batch at 100 requests/s, want several", f.MembersPerAppend)
	}
	near(t, "objects/s", f.AppendsPerSec, 100/f.MembersPerAppend)
	// Per batch one topic commit and an entry per partition; nothing per request.
	near(t, "built tier WRU/day", writeUnits(tier), f.AppendsPerSec*86400*(1+f.BlocksPerAppend))
	near(t, "built tier claim WRU/day", lineQuantity(tier, LineClaimWrites), 0)

	// Folded claims: a claim per request on top.
	o.Claims = ClaimsFolded
	near(t, "folded claims tier WRU/day", writeUnits(Strata(o, Aggregation)), 100*86400*1+f.AppendsPerSec*86400*(1+f.BlocksPerAppend))
	near(t, "folded claims baseline WRU/day", writeUnits(Strata(o, Baseline)), 100*86400*(1+1+8))
	o.Claims = ClaimsProfiled

	// Before folding: per append a request claim, per block a partition claim, and each
	// member its own commits.
	o.Profile.WritesPerAppend = 1
	o.Profile.ClaimsPerBlock, o.Profile.Group.IdempotentShare, o.Profile.Group.MemberCommitsPerBlock = 1, false, 1
	near(t, "unfolded baseline WRU/day", writeUnits(Strata(o, Baseline)), 100*86400*(1+1+8*2))
	near(t, "unfolded tier WRU/day", writeUnits(Strata(o, Aggregation)), 100*86400*(1+8*2)+f.AppendsPerSec*86400)
	// The counted group profile is what the model uses: half the commits, half their units.
	o.Profile.Group.MemberCommitsPerBlock = 0.5
	near(t, "tier WRU/day, half the commits", writeUnits(Strata(o, Aggregation)), 100*86400*(1+8*(1+0.5))+f.AppendsPerSec*86400)

	o.Profile.Group.MemberCommitsPerBlock = 1
	o.Claims = ClaimsFolded
	folded := Strata(o, Aggregation)
	g := *folded.Flow
	near(t, "folded tier WRU/day", writeUnits(folded), 100*86400*1+g.AppendsPerSec*86400*(1+g.BlocksPerAppend))
	// Without the tier, folding drops the partition claims: 1 claim + 1 topic commit + 1
	// entry per block.
	near(t, "folded baseline WRU/day", writeUnits(Strata(o, Baseline)), 100*86400*(1+1+8))
	// Fenced over the same unfolded profile: no claim at all, the members sharing.
	o.Claims = ClaimsFenced
	near(t, "fenced tier WRU/day", writeUnits(Strata(o, Aggregation)), g.AppendsPerSec*86400*(1+g.BlocksPerAppend))
	near(t, "fenced baseline WRU/day", writeUnits(Strata(o, Baseline)), 100*86400*(1+8))
}

// TestFencedProfilePricesNoClaim: the built idempotent profile (fenced idempotency, the
// SDK's producer requests) writes nothing per request beside the topic commit and
// nothing per block beside the entry, reads nothing before an append, and its estimate's
// claims line is $0 in every design; folded claims price 1 WRU per request, $0.625 per
// million.
func TestFencedProfilePricesNoClaim(t *testing.T) {
	p := IdempotentDesignProfile()
	if !p.Idempotent || p.WritesPerAppend != 0 || p.ClaimsPerBlock != 0 || p.ReadsPerAppend != 0 || p.ReadsPerAppendBlk != 0 {
		t.Fatalf("idempotent design profile %+v: want no claim write or read", p)
	}
	for _, n := range []int{10, 1000} {
		o := Defaults(n)
		o.Profile = p
		for _, d := range Designs {
			e := Strata(o, d)
			if q := lineQuantity(e, LineClaimWrites); q != 0 {
				t.Errorf("%d producers, %s: %v claim WRU/day, want 0", n, d, q)
			}
			o.Claims = ClaimsFolded
			reqs := FlowOf(o, d).ProducerRequestsPerSec * 86400
			folded := Strata(o, d)
			near(t, "folded claim WRU/day", lineQuantity(folded, LineClaimWrites), reqs)
			near(t, "folded − fenced $/day", folded.PerDay()-e.PerDay(), reqs*0.625e-6)
			o.Claims = ClaimsProfiled
		}
	}
}

func TestParseClaims(t *testing.T) {
	for s, want := range map[string]Claims{"profiled": ClaimsProfiled, "folded": ClaimsFolded, "fenced": ClaimsFenced} {
		if got, err := ParseClaims(s); err != nil || got != want {
			t.Errorf("ParseClaims(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseClaims("none"); err == nil {
		t.Error("ParseClaims(none) accepted")
	}
	o := Defaults(1)
	o.Claims = ClaimsFenced + 1
	if o.Validate() == nil {
		t.Error("an unknown claims pricing validated")
	}
}

// TestTierInstancesFromCPU: the tier runs as many instances as its requests' CPU needs
// (at 2 vCPUs loaded to 70 %), never fewer than Aggregator.Instances, which is AWS's
// minimum of 3 Managed Instances.
func TestTierInstancesFromCPU(t *testing.T) {
	o := Defaults(10)
	if got := FlowOf(o, Aggregation).Instances; got != MinManagedInstances {
		t.Errorf("10 producers: %d instances, want the floor of 3", got)
	}
	if got := FlowOf(o, Baseline).Instances; got != 0 {
		t.Errorf("no tier: %d instances, want 0", got)
	}
	// 20 requests/s (TestFlow) × 80 ms + 50,000 records/s × 11 µs = 1.6 + 0.55 vCPU →
	// 2.15 / 1.4 → 2, below the minimum of 3.
	o.Profile.Group.CPUPerAppend, o.Serving.CPUPerRecord = 80*time.Millisecond, JSONCPUPerRecord
	if got := FlowOf(o, Aggregation).Instances; got != 3 {
		t.Errorf("2.15 vCPU: %d instances, want the minimum 3", got)
	}
	o.Profile.Group.CPUPerAppend = 200 * time.Millisecond // 4 + 0.55 vCPU → 3.25 → 4
	e := Strata(o, Aggregation)
	if e.Flow.Instances != 4 {
		t.Errorf("4.55 vCPU: %d instances, want 4", e.Flow.Instances)
	}
	for _, l := range e.Lines {
		if l.Item == "Managed Instances (instance-hours)" {
			near(t, "instance-hours", l.Quantity, 96)
		}
	}
}

// TestTierBelowManagedMinimumRefused: fewer than AWS's 3 Managed Instances is no
// configuration the tier can run.
func TestTierBelowManagedMinimumRefused(t *testing.T) {
	o := Defaults(10)
	o.Aggregator.Instances = 2
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Fatalf("2 instances: %v, want a refusal naming the minimum of 3", err)
	}
}

func TestItemWRUGrowsWithPartitions(t *testing.T) {
	// 256 partitions: a topic commit of 100 + 256 × 24 = 6,244 B is 7 write units.
	near(t, "topic commit WRU", itemWRU(100+24*256), 7)
	near(t, "small item", itemWRU(10), 1)
}

func TestCrossing(t *testing.T) {
	o := Defaults(1)
	kin := KinesisProvisioned(o, true).PerDay()
	n := Crossing(o, Baseline, kin)
	if n == 0 {
		t.Fatal("baseline never crosses Kinesis with aggregation")
	}
	o.Producers.Count = n
	if Strata(o, Baseline).PerDay() <= kin {
		t.Errorf("at the crossing (%d producers) Strata is not above Kinesis", n)
	}
	if n > 1 {
		prev := ProducerGrid()
		for i, g := range prev {
			if g == n && i > 0 {
				o.Producers.Count = prev[i-1]
				if Strata(o, Baseline).PerDay() > kin {
					t.Errorf("below the crossing (%d producers) Strata is already above Kinesis", prev[i-1])
				}
			}
		}
	}
	if Crossing(o, Baseline, math.Inf(1)) != 0 {
		t.Error("an infinite limit is crossed")
	}
}

func TestValidate(t *testing.T) {
	bad := []func(*Options){
		func(o *Options) { o.Workload.EventsPerSec = 0 },
		func(o *Options) { o.Workload.Partitions = 0 },
		func(o *Options) { o.Workload.Retention = 0 },
		func(o *Options) { o.Producers.Count = 0 },
		func(o *Options) { o.Producers.Linger = -1 },
		func(o *Options) { o.Producers.RequestBytes = 0 },
		func(o *Options) { o.Producers.RequestRecords = 0 },
		func(o *Options) { o.Aggregator.Window = 0 },
		func(o *Options) { o.Aggregator.MaxUtilisation = 1.5 },
		func(o *Options) { o.Serving.CPUPerRecord = -1 },
		func(o *Options) { o.Kafka.DiskFill = 2 },
	}
	if err := Defaults(1).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for i, mod := range bad {
		o := Defaults(1)
		mod(&o)
		if o.Validate() == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

// TestAlignedProducersFlow: aligned producers' requests reach the tier in bursts, a
// slot's share of a period each; a batch takes an instance's share of a burst, the
// instances as many as hold the burst at their concurrency. Worked by hand at a 30 ms
// window and a 4 MiB budget: 1,000 producers send 1,000 requests/s of 50 records.
func TestAlignedProducersFlow(t *testing.T) {
	at := func(n, slots int) (Options, Flow) {
		o := Defaults(n)
		o.Aggregator.Window = 30 * time.Millisecond
		o.Producers.AlignSlots = slots
		return o, FlowOf(o, Aggregation)
	}
	_, poisson := at(1000, 0)
	near(t, "unaligned members (1 + λW over 3 instances)", poisson.MembersPerAppend, 1+1000.0/3*0.03)
	near(t, "unaligned burst", poisson.Burst, 0)

	_, one := at(1000, 1)
	if one.Instances != 32 { // ⌈1,000 / 32⌉
		t.Errorf("one slot: %d instances for a burst of 1,000 at 32 each, want 32", one.Instances)
	}
	near(t, "one slot: burst", one.Burst, 1000)
	near(t, "one slot: members", one.MembersPerAppend, 1000.0/32)

	o, _ := at(1000, 0)
	if k := AlignSlotsFor(o); k != 11 { // ⌈1,000 / (3 × 32)⌉
		t.Errorf("AlignSlotsFor 1,000 requests a period: %d slots, want 11", k)
	}
	_, eleven := at(1000, 11)
	if eleven.Instances != MinManagedInstances {
		t.Errorf("11 slots: %d instances, want the floor's %d", eleven.Instances, MinManagedInstances)
	}
	near(t, "11 slots: members", eleven.MembersPerAppend, 1000.0/11/3)
	near(t, "11 slots: objects/s", eleven.AppendsPerSec, 1000/eleven.MembersPerAppend)
	if eleven.AckFloor != poisson.AckFloor {
		t.Errorf("aligned ack floor %v, unaligned %v: a record waits at most the linger either way", eleven.AckFloor, poisson.AckFloor)
	}

	// 100 producers: 100 requests of 500 records (520 KB) a period, 2 slots; the budget
	// fits 8 such requests, fewer than the 16.7 of an instance's share.
	o, _ = at(100, 0)
	if k := AlignSlotsFor(o); k != 2 {
		t.Errorf("AlignSlotsFor 100 requests a period: %d slots, want 2", k)
	}
	_, hundred := at(100, 2)
	near(t, "100 producers: members", hundred.MembersPerAppend, 8)
	if !hundred.BudgetBound {
		t.Error("100 producers, 2 slots: the budget cuts the batches")
	}

	// Batches that fill before the tick go at once, off the grid: a Poisson stream.
	o, _ = at(10, 1)
	o.Producers.BatchRecords = 100
	if f := FlowOf(o, Aggregation); f.Burst != 0 {
		t.Errorf("batches full before the linger: burst %v, want the unaligned flow", f.Burst)
	}
}
