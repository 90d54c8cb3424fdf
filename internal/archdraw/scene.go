package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/stratalog/strata/internal/excalidraw"
)

// style is a component's colours and stroke.
type style struct{ fill, stroke, dash string }

var (
	lambdaFn = style{"#fff4e6", "#e8590c", "solid"}
	s3Store  = style{"#ebfbee", "#2f9e44", "solid"}
	dynamo   = style{"#e7f5ff", "#1971c2", "solid"}
	front    = style{"#f3f0ff", "#7048e8", "solid"}
	option   = style{"#f3f0ff", "#7048e8", "dashed"}
	outside  = style{"#f8f9fa", "#495057", "solid"}
	events   = style{"#fff0f6", "#c2255c", "solid"}
	local    = style{"#fff9db", "#f08c00", "solid"}
	zombie   = style{"#fff5f5", "#e03131", "dashed"}
	area     = style{"transparent", "#1971c2", "dashed"}
)

// builder accumulates a scene's elements; elements made while frame is set belong to it.
type builder struct {
	els   []excalidraw.Element
	index map[string]int
	frame string
	seed  int
}

func (b *builder) add(e excalidraw.Element) *excalidraw.Element {
	b.seed++
	e.Seed, e.VersionNonce, e.Version = b.seed*7919, b.seed*104729, 1
	if e.StrokeWidth == 0 {
		e.StrokeWidth = 2
	}
	if e.StrokeStyle == "" {
		e.StrokeStyle = "solid"
	}
	if e.FillStyle == "" {
		e.FillStyle = "solid"
	}
	if e.BackgroundColor == "" {
		e.BackgroundColor = "transparent"
	}
	e.Opacity, e.Roughness = 100, 0
	e.GroupIDs = []string{}
	if b.frame != "" && e.Type != "frame" {
		f := b.frame
		e.FrameID = &f
	}
	b.index[e.ID] = len(b.els)
	b.els = append(b.els, e)
	return &b.els[len(b.els)-1]
}

func (b *builder) get(id string) *excalidraw.Element {
	i, ok := b.index[id]
	if !ok {
		panic("archdraw: no element " + id)
	}
	return &b.els[i]
}

// textSize estimates a text's box as Excalidraw's Helvetica measures it.
func textSize(s string, size float64) (w, h float64) {
	lines := strings.Split(s, "\n")
	longest := 0
	for _, l := range lines {
		longest = max(longest, len([]rune(l)))
	}
	return math.Ceil(float64(longest) * size * 0.56), float64(len(lines)) * size * 1.25
}

// text adds a free text element at (x, y).
func (b *builder) text(id string, x, y float64, s string, size float64, color string) {
	w, h := textSize(s, size)
	b.add(excalidraw.Element{ID: id, Type: "text", X: x, Y: y, Width: w, Height: h, StrokeColor: color,
		Text: s, OriginalText: s, FontSize: size, FontFamily: 2, TextAlign: "left", VerticalAlign: "top", LineHeight: 1.25})
}

// label adds text bound to the container id, centred in it (Excalidraw's bound text).
func (b *builder) label(container string, s string, size float64, cx, cy float64, color string) {
	id := container + "-label"
	w, h := textSize(s, size)
	c := container
	b.add(excalidraw.Element{ID: id, Type: "text", X: cx - w/2, Y: cy - h/2, Width: w, Height: h, StrokeColor: color,
		Text: s, OriginalText: s, FontSize: size, FontFamily: 2, TextAlign: "center", VerticalAlign: "middle",
		ContainerID: &c, LineHeight: 1.25})
	ce := b.get(container)
	ce.BoundElements = append(ce.BoundElements, excalidraw.Bound{ID: id, Type: "text"})
}

// box adds a labelled rectangle; the first line of its label is the deployed name.
func (b *builder) box(id string, x, y, w, h float64, st style, s string) {
	b.add(excalidraw.Element{ID: id, Type: "rectangle", X: x, Y: y, Width: w, Height: h,
		StrokeColor: st.stroke, BackgroundColor: st.fill, StrokeStyle: st.dash, Roundness: &excalidraw.Roundness{Type: 3}})
	b.label(id, s, 15, x+w/2, y+h/2, "#1e1e1e")
}

// area adds an unlabelled rectangle with a caption at its top left.
func (b *builder) area(id string, x, y, w, h float64, st style, caption string) {
	b.add(excalidraw.Element{ID: id, Type: "rectangle", X: x, Y: y, Width: w, Height: h,
		StrokeColor: st.stroke, BackgroundColor: st.fill, StrokeStyle: st.dash, StrokeWidth: 1, Roundness: &excalidraw.Roundness{Type: 3}})
	b.text(id+"-caption", x+12, y+8, caption, 16, st.stroke)
}

// frame opens a frame; the elements added until the next frame call belong to it.
func (b *builder) frameStart(id, name string, x, y, w, h float64) {
	b.frame = ""
	nm := name
	b.add(excalidraw.Element{ID: id, Type: "frame", X: x, Y: y, Width: w, Height: h, StrokeColor: "#bbb", Name: &nm, StrokeWidth: 2})
	b.frame = id
}

// end names an arrow's end: an element, a side (l, r, t, b) and where along it (0–1).
type end struct {
	id   string
	side byte
	at   float64
}

func at(id string, side byte) end { return end{id, side, 0.5} }

func (b *builder) point(e end) (x, y float64) {
	el := b.get(e.id)
	const gap = 4
	switch e.side {
	case 'l':
		return el.X - gap, el.Y + el.Height*e.at
	case 'r':
		return el.X + el.Width + gap, el.Y + el.Height*e.at
	case 't':
		return el.X + el.Width*e.at, el.Y - gap
	default:
		return el.X + el.Width*e.at, el.Y + el.Height + gap
	}
}

// arrow adds a labelled arrow bound to both ends, through the given waypoints.
func (b *builder) arrow(id string, from, to end, label string, st style, via ...[2]float64) {
	x0, y0 := b.point(from)
	x1, y1 := b.point(to)
	pts := [][2]float64{{0, 0}}
	for _, v := range via {
		pts = append(pts, [2]float64{v[0] - x0, v[1] - y0})
	}
	pts = append(pts, [2]float64{x1 - x0, y1 - y0})
	minX, minY, maxX, maxY := 0.0, 0.0, 0.0, 0.0
	for _, p := range pts {
		minX, minY = math.Min(minX, p[0]), math.Min(minY, p[1])
		maxX, maxY = math.Max(maxX, p[0]), math.Max(maxY, p[1])
	}
	head := "arrow"
	b.add(excalidraw.Element{ID: id, Type: "arrow", X: x0, Y: y0, Width: maxX - minX, Height: maxY - minY,
		StrokeColor: st.stroke, StrokeStyle: st.dash, Roundness: &excalidraw.Roundness{Type: 2}, Points: pts,
		StartBinding: &excalidraw.Binding{ElementID: from.id, Gap: 4}, EndBinding: &excalidraw.Binding{ElementID: to.id, Gap: 4},
		EndArrowhead: &head})
	for _, e := range []string{from.id, to.id} {
		el := b.get(e)
		el.BoundElements = append(el.BoundElements, excalidraw.Bound{ID: id, Type: "arrow"})
	}
	if label != "" {
		// Excalidraw places an arrow's label at the middle of its path.
		mid := pts[len(pts)/2]
		if len(pts)%2 == 0 {
			p, q := pts[len(pts)/2-1], pts[len(pts)/2]
			mid = [2]float64{(p[0] + q[0]) / 2, (p[1] + q[1]) / 2}
		}
		b.label(id, label, 13, x0+mid[0], y0+mid[1], st.stroke)
	}
}

// Scene builds Strata's architecture as the stack in infra/ deploys it, with the local
// runtime beside it and frames for the append path and a consumer's lease → poll → commit.
func Scene() *excalidraw.Scene {
	b := &builder{index: map[string]int{}}
	b.text("title", 20, 0, "Strata — as infra/ deploys it (stack \"Strata\")", 28, "#1e1e1e")

	// Front door and the api function.
	b.box("producers", 20, 330, 190, 80, outside, "producers\nGo SDK (pkg/client), CLI")
	b.box("httpapi", 300, 250, 250, 80, front, "API Gateway HTTP API\nStrataHttpApi (IAM auth)")
	b.box("fnurl", 300, 410, 250, 80, option, "api function URL (IAM auth)\nstrata:frontDoor option")
	b.box("api", 640, 300, 270, 120, lambdaFn, "api function\nStrata api\non demand (default) or\nLambda Managed Instances")

	// Storage.
	b.box("s3", 990, 60, 330, 80, s3Store, "S3 bucket StrataSegments\nsegment objects v1/<topic>/<inc>/<ULID>\nlifecycle backstop")
	b.area("ddb", 960, 180, 580, 462, area, "DynamoDB (on demand, PITR)")
	tables := []struct {
		id, text string
		col, row int
	}{
		{"t-sequencer", "Strata-sequencer\ntopic commit item: HWs", 0, 0},
		{"t-index", "Strata-index\nindex entry per commit", 0, 1},
		{"t-topics", "Strata-topics\nconfigs, incarnations", 0, 2},
		{"t-idempotency", "Strata-idempotency\nappend claims (TTL)", 0, 3},
		{"t-partitions", "Strata-partitions\nlegacy log start (migration)", 0, 4},
		{"t-assignments", "Strata-assignments\nleases: owner, generation", 1, 0},
		{"t-commits", "Strata-commits\nnext_offset + completed", 1, 1},
		{"t-groups", "Strata-groups\ngroup config, dead-letter topic", 1, 2},
		{"t-members", "Strata-members\nheartbeats (TTL)", 1, 3},
		{"t-laghistory", "Strata-laghistory\nlag samples per group", 1, 4},
		{"t-parked", "Strata-parked\nparked keys per group", 0, 5},
	}
	for _, t := range tables {
		b.box(t.id, 980+float64(t.col)*280, 230+float64(t.row)*68, 260, 56, dynamo, t.text)
	}

	// Stream, dispatch, consumers.
	b.box("stream", 1620, 200, 240, 70, dynamo, "sequencer stream\nDynamoDB Streams, NEW_IMAGE")
	b.box("dispatch", 1620, 350, 240, 80, lambdaFn, "dispatch function\nStrata dispatch")
	b.box("ssm", 1940, 90, 250, 70, outside, "SSM parameters\nsubscriptions of other apps")
	b.box("sweep", 1940, 220, 250, 70, events, "EventBridge StrataSweep\nrate(1 minute)")
	b.box("dlq", 1940, 355, 250, 70, events, "SQS StrataStreamFailures\nfailed stream batches")
	b.box("consumers", 1600, 520, 280, 120, lambdaFn, "consumer functions\nStrata example order consumer\n(functions/consumer)\nusers' (strata.Subscribe, Attach)")
	b.box("business", 1600, 720, 280, 70, outside, "business store OrdersTable\nfenced effects + markers")
	b.box("deadletter", 1960, 540, 230, 80, outside, "dead-letter topic, <group>.parked\n(Strata topics per group)")

	// Retention and monitoring.
	b.box("retrule", 620, 650, 290, 70, events, "EventBridge StrataRetentionSchedule\nrate(5 minutes)")
	b.box("retention", 1000, 650, 280, 80, lambdaFn, "retention function\nStrata retention")
	b.box("comprule", 620, 770, 290, 70, events, "EventBridge StrataCompactSchedule\nrate(5 minutes)")
	b.box("compact", 1000, 770, 280, 80, lambdaFn, "compaction function\nStrata compact\nself-invoked per partition")
	b.box("monitoring", 260, 650, 290, 80, events, "CloudWatch StrataMonitoring\nalarms + dashboard (EMF)")
	b.text("monitoring-note", 260, 740, "alarms: each function's errors and throttles,\np99 append latency, stream failures,\na subscription's lag, dead letters and time\nto data loss, the stream's iterator age", 13, "#495057")

	b.arrow("a-produce", at("producers", 'r'), end{"httpapi", 'l', 0.5}, "append · poll · lease · commit\n(SigV4)", outside)
	b.arrow("a-produce-url", at("producers", 'r'), end{"fnurl", 'l', 0.5}, "same API (SigV4, lambda)", option)
	b.arrow("a-invoke", at("httpapi", 'r'), end{"api", 'l', 0.3}, "invoke", front)
	b.arrow("a-invoke-url", at("fnurl", 'r'), end{"api", 'l', 0.75}, "invoke", option)
	b.arrow("a-put", end{"api", 't', 0.5}, end{"s3", 'l', 0.35}, "append: PUT segment\npoll: ranged GET", s3Store, [2]float64{765, 88})
	b.arrow("a-commit", end{"api", 'r', 0.2}, end{"t-sequencer", 'l', 0.5}, "commit\n(atomic ADD)", dynamo)
	b.arrow("a-meta", end{"api", 'b', 0.8}, end{"ddb", 'l', 0.85}, "entry · claim · lease\ncommit · topics", dynamo, [2]float64{856, 520})
	b.arrow("a-stream", at("t-sequencer", 't'), end{"stream", 'l', 0.5}, "every commit", dynamo, [2]float64{1110, 200}, [2]float64{1560, 200}, [2]float64{1560, 235})
	b.arrow("a-trigger", at("stream", 'b'), at("dispatch", 't'), "trigger", dynamo)
	b.arrow("a-materialise", end{"dispatch", 'l', 0.5}, end{"ddb", 'r', 0.42}, "materialise missing\nindex entries", lambdaFn)
	b.arrow("a-sweep", at("sweep", 'l'), end{"dispatch", 'r', 0.25}, "sweep", events)
	b.arrow("a-ssm", end{"ssm", 'l', 0.5}, end{"dispatch", 't', 0.85}, "read every minute", outside, [2]float64{1824, 125})
	b.arrow("a-dlq", end{"dispatch", 'r', 0.75}, at("dlq", 'l'), "on failure", events)
	b.arrow("a-wake", at("dispatch", 'b'), end{"consumers", 't', 0.6}, "async invoke\n{topic, partition, group}", lambdaFn)
	b.arrow("a-lease", end{"consumers", 'l', 0.5}, end{"ddb", 'r', 0.85}, "lease → poll → commit\n(generation check)", lambdaFn)
	b.arrow("a-effect", at("consumers", 'b'), at("business", 't'), "materialise: fenced write", outside)
	b.arrow("a-dead", at("consumers", 'r'), at("deadletter", 'l'), "dead-letter\nafter max attempts", outside)
	b.arrow("a-retrule", at("retrule", 'r'), at("retention", 'l'), "trigger", events)
	b.arrow("a-ret-ddb", end{"retention", 't', 0.5}, end{"ddb", 'b', 0.24}, "log start,\ndelete entries", lambdaFn)
	b.arrow("a-comprule", at("comprule", 'r'), at("compact", 'l'), "trigger", events)
	b.arrow("a-comp-ddb", end{"compact", 'r', 0.5}, end{"ddb", 'b', 0.66}, "swap index entries\n(one transaction)", lambdaFn, [2]float64{1343, 810})
	b.arrow("a-ret-s3", end{"retention", 't', 0.1}, end{"s3", 'l', 0.8}, "delete expired objects", lambdaFn,
		[2]float64{1028, 610}, [2]float64{935, 610}, [2]float64{935, 124})

	// The local runtime.
	b.frameStart("f-local", "Local runtime — strata dev (one process, same API)", 20, 900, 900, 300)
	b.box("l-producers", 50, 990, 180, 80, outside, "producers\nSDK, CLI, console")
	b.box("l-dev", 300, 960, 310, 140, local, "strata dev (pkg/runtime)\nHTTP API + console\nlog, group commit 1 ms\ncoordinator, retention timer")
	b.box("l-files", 690, 950, 200, 70, local, "files\nsegment objects, fsync")
	b.box("l-bbolt", 690, 1060, 200, 70, local, "bbolt meta.db\nevery table, one tx")
	b.arrow("l-a-http", at("l-producers", 'r'), end{"l-dev", 'l', 0.5}, "HTTP", outside)
	b.arrow("l-a-files", end{"l-dev", 'r', 0.25}, at("l-files", 'l'), "write", local)
	b.arrow("l-a-bbolt", end{"l-dev", 'r', 0.78}, at("l-bbolt", 'l'), "commit + entry", local)
	b.text("l-note", 50, 1140, "--backend aws: the same process on S3 + DynamoDB, materialiser reading the stream in process", 13, "#495057")

	// The append path.
	b.frameStart("f-append", "Append path: acknowledged after S3 + commit + entry", 980, 900, 1210, 340)
	b.box("p-producer", 1010, 990, 160, 80, outside, "producer")
	b.box("p-api", 1260, 980, 220, 100, lambdaFn, "api function\nvalidate, place by key\ngroup commit window")
	b.box("p-idem", 1260, 1150, 220, 60, dynamo, "Strata-idempotency\none claim per request (keyed)")
	b.box("p-s3", 1580, 930, 250, 60, s3Store, "1. S3 PUT segment object\nIf-None-Match: *")
	b.box("p-seq", 1580, 1030, 250, 60, dynamo, "2. Strata-sequencer: one topic\ncommit per batch (ADD) → bases")
	b.box("p-index", 1580, 1130, 250, 60, dynamo, "3. Strata-index: a write-once\nentry per partition, at its base")
	b.box("p-dispatch", 1900, 1080, 260, 70, lambdaFn, "stream → dispatch\nwrites an entry a crash left out")
	b.arrow("p-a-req", end{"p-producer", 'r', 0.3}, end{"p-api", 'l', 0.3}, "POST records", outside)
	b.arrow("p-a-ack", end{"p-api", 'l', 0.75}, end{"p-producer", 'r', 0.75}, "4. ack {offsets}", outside)
	b.arrow("p-a-claim", at("p-api", 'b'), at("p-idem", 't'), "read before, write after", dynamo)
	b.arrow("p-a-put", end{"p-api", 'r', 0.15}, at("p-s3", 'l'), "object", s3Store)
	b.arrow("p-a-seq", end{"p-api", 'r', 0.5}, at("p-seq", 'l'), "per batch", dynamo)
	b.arrow("p-a-index", end{"p-api", 'r', 0.85}, at("p-index", 'l'), "entry", dynamo)
	b.arrow("p-a-stream", at("p-seq", 'r'), end{"p-dispatch", 't', 0.5}, "stream", dynamo, [2]float64{2030, 1060})
	b.arrow("p-a-mat", end{"p-dispatch", 'b', 0.3}, end{"p-index", 'r', 0.7}, "materialise", lambdaFn, [2]float64{1978, 1172})

	// A consumer's lease → poll → commit.
	b.frameStart("f-consumer", "Consumer: lease → poll → commit, fenced by the generation", 20, 1320, 2170, 330)
	b.box("c-dispatch", 50, 1420, 180, 80, lambdaFn, "dispatch\nlag, no live lease")
	b.box("c-consumer", 320, 1410, 230, 100, lambdaFn, "consumer function\n(pkg/lambdaconsumer)")
	b.box("c-assign", 650, 1370, 260, 70, dynamo, "1. Strata-assignments\nlease: generation g, owner")
	b.box("c-poll", 650, 1490, 260, 70, dynamo, "2. Strata-index + S3\npoll: entries, ranged GET")
	b.box("c-handle", 1010, 1400, 290, 110, lambdaFn, "3. handler + pkg/checkpoint\n11 done before 10:\nnext_offset stays 10")
	b.box("c-commits", 1420, 1370, 330, 80, dynamo, "4. Strata-commits: one transaction\nowner = m ∧ generation = g")
	b.box("c-business", 1420, 1500, 330, 70, outside, "OrdersTable: fenced effect\ngeneration check + marker")
	b.box("c-zombie", 1850, 1420, 310, 90, zombie, "paused consumer, generation g−1\nits commit and write: fenced")
	b.arrow("c-a-invoke", at("c-dispatch", 'r'), at("c-consumer", 'l'), "invoke", lambdaFn)
	b.arrow("c-a-lease", end{"c-consumer", 'r', 0.2}, at("c-assign", 'l'), "lease", dynamo)
	b.arrow("c-a-poll", end{"c-consumer", 'r', 0.8}, at("c-poll", 'l'), "poll", dynamo)
	b.arrow("c-a-handle", end{"c-consumer", 'r', 0.5}, at("c-handle", 'l'), "records (parallel)", lambdaFn)
	b.arrow("c-a-commit", end{"c-handle", 'r', 0.2}, at("c-commits", 'l'), "commit(g, 10)", dynamo)
	b.arrow("c-a-effect", end{"c-handle", 'r', 0.8}, at("c-business", 'l'), "effect(g)", outside)
	b.arrow("c-a-fenced", end{"c-zombie", 'l', 0.2}, end{"c-commits", 'r', 0.6}, "commit(g−1): fenced", zombie)
	b.arrow("c-a-fenced-w", end{"c-zombie", 'l', 0.8}, end{"c-business", 'r', 0.4}, "write: fenced", zombie)
	b.frame = ""

	return &excalidraw.Scene{
		Type: "excalidraw", Version: 2, Source: "https://github.com/stratalog/strata (go run ./internal/archdraw)",
		Elements: b.els,
		AppState: map[string]any{"viewBackgroundColor": "#ffffff", "gridSize": 20},
		Files:    map[string]any{},
	}
}

// frameFile names the SVG of a frame.
func frameFile(id string) string {
	return fmt.Sprintf("architecture-%s.svg", strings.TrimPrefix(id, "f-"))
}
