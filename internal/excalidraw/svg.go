package excalidraw

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// pad is the margin around what is rendered, in scene pixels.
const pad = 20

// SVG renders the scene's live elements as an SVG document: the whole scene when frame
// is empty, else only the frame with that id and the elements in it (the text of a
// container or an arrow follows its container). The output depends only on the scene.
func (s *Scene) SVG(frame string) ([]byte, error) {
	byID := make(map[string]Element, len(s.Elements))
	for _, e := range s.Elements {
		byID[e.ID] = e
	}
	in := func(e Element) bool {
		if e.IsDeleted {
			return false
		}
		if frame == "" {
			return true
		}
		if e.ID == frame {
			return true
		}
		if e.ContainerID != nil {
			e = byID[*e.ContainerID]
		}
		return e.FrameID != nil && *e.FrameID == frame
	}
	if frame != "" {
		f, ok := byID[frame]
		if !ok || f.Type != "frame" {
			return nil, fmt.Errorf("excalidraw: no frame %q", frame)
		}
	}
	var els []Element
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, e := range s.Elements {
		if !in(e) {
			continue
		}
		els = append(els, e)
		x0, y0, x1, y1 := bounds(e)
		if e.Type == "frame" {
			y0 -= 24 // the frame's name sits above it
		}
		minX, minY = math.Min(minX, x0), math.Min(minY, y0)
		maxX, maxY = math.Max(maxX, x1), math.Max(maxY, y1)
	}
	if len(els) == 0 {
		return nil, fmt.Errorf("excalidraw: nothing to render")
	}
	minX, minY, maxX, maxY = minX-pad, minY-pad, maxX+pad, maxY+pad
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="%s %s %s %s" width="%s" height="%s">`+"\n",
		n(minX), n(minY), n(maxX-minX), n(maxY-minY), n(maxX-minX), n(maxY-minY))
	bg := "#ffffff"
	if c, ok := s.AppState["viewBackgroundColor"].(string); ok {
		bg = c
	}
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", n(minX), n(minY), n(maxX-minX), n(maxY-minY), esc(bg))
	// Frames first (behind), then shapes, arrows, and text on top.
	for _, pass := range []string{"frame", "rectangle", "arrow", "text"} {
		for _, e := range els {
			if e.Type != pass {
				continue
			}
			switch e.Type {
			case "frame":
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" rx="8" fill="none" stroke="#868e96" stroke-width="1"/>`+"\n",
					n(e.X), n(e.Y), n(e.Width), n(e.Height))
				name := ""
				if e.Name != nil {
					name = *e.Name
				}
				fmt.Fprintf(&b, `<text x="%s" y="%s" font-family="Helvetica, Arial, sans-serif" font-size="14" fill="#495057">%s</text>`+"\n",
					n(e.X), n(e.Y-8), esc(name))
			case "rectangle":
				rx := 0.0
				if e.Roundness != nil {
					rx = math.Min(32, math.Min(e.Width, e.Height)*0.25)
				}
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" rx="%s" fill="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
					n(e.X), n(e.Y), n(e.Width), n(e.Height), n(rx), fill(e), esc(e.StrokeColor), n(e.StrokeWidth), dash(e))
			case "arrow":
				var d strings.Builder
				for i, p := range e.Points {
					op := "L"
					if i == 0 {
						op = "M"
					}
					fmt.Fprintf(&d, "%s%s %s ", op, n(e.X+p[0]), n(e.Y+p[1]))
				}
				fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="%s"%s/>`+"\n",
					strings.TrimSpace(d.String()), esc(e.StrokeColor), n(e.StrokeWidth), dash(e))
				if e.EndArrowhead != nil && *e.EndArrowhead != "" {
					last, prev := e.Points[len(e.Points)-1], e.Points[len(e.Points)-2]
					b.WriteString(head(e, prev, last))
				}
				if e.StartArrowhead != nil && *e.StartArrowhead != "" {
					b.WriteString(head(e, e.Points[1], e.Points[0]))
				}
			case "text":
				if e.ContainerID != nil && byID[*e.ContainerID].Type == "arrow" {
					// An arrow's label hides the line under it, as in Excalidraw.
					fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
						n(e.X-3), n(e.Y), n(e.Width+6), n(e.Height), esc(bg))
				}
				writeText(&b, e)
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// bounds returns an element's box in scene coordinates.
func bounds(e Element) (x0, y0, x1, y1 float64) {
	if e.Type != "arrow" {
		return e.X, e.Y, e.X + e.Width, e.Y + e.Height
	}
	x0, y0, x1, y1 = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range e.Points {
		x0, y0 = math.Min(x0, e.X+p[0]), math.Min(y0, e.Y+p[1])
		x1, y1 = math.Max(x1, e.X+p[0]), math.Max(y1, e.Y+p[1])
	}
	return x0, y0, x1, y1
}

// head draws an arrowhead at to, pointing away from from: two strokes 14 px long at ±25°.
func head(e Element, from, to [2]float64) string {
	dx, dy := to[0]-from[0], to[1]-from[1]
	a := math.Atan2(dy, dx)
	const l, w = 14.0, 25 * math.Pi / 180
	tx, ty := e.X+to[0], e.Y+to[1]
	x1, y1 := tx-l*math.Cos(a-w), ty-l*math.Sin(a-w)
	x2, y2 := tx-l*math.Cos(a+w), ty-l*math.Sin(a+w)
	return fmt.Sprintf(`<path d="M%s %s L%s %s L%s %s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"/>`+"\n",
		n(x1), n(y1), n(tx), n(ty), n(x2), n(y2), esc(e.StrokeColor), n(e.StrokeWidth))
}

// writeText draws a text element line by line, aligned as Excalidraw aligns it in its box.
func writeText(b *bytes.Buffer, e Element) {
	lh := e.LineHeight
	if lh == 0 {
		lh = 1.25
	}
	x, anchor := e.X, "start"
	switch e.TextAlign {
	case "center":
		x, anchor = e.X+e.Width/2, "middle"
	case "right":
		x, anchor = e.X+e.Width, "end"
	}
	weight := ""
	if e.CustomData["bold"] == true {
		weight = ` font-weight="bold"`
	}
	for i, line := range strings.Split(e.Text, "\n") {
		y := e.Y + float64(i)*e.FontSize*lh + e.FontSize*lh*0.8
		fmt.Fprintf(b, `<text x="%s" y="%s" font-family="Helvetica, Arial, sans-serif" font-size="%s" text-anchor="%s" fill="%s"%s>%s</text>`+"\n",
			n(x), n(y), n(e.FontSize), anchor, esc(e.StrokeColor), weight, esc(line))
	}
}

func fill(e Element) string {
	if e.BackgroundColor == "" || e.BackgroundColor == "transparent" {
		return "none"
	}
	return esc(e.BackgroundColor)
}

func dash(e Element) string {
	switch e.StrokeStyle {
	case "dashed":
		return ` stroke-dasharray="8 6"`
	case "dotted":
		return ` stroke-dasharray="2 6"`
	}
	return ""
}

// n formats a coordinate with at most two decimals, so the output is stable.
func n(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func esc(s string) string { return escaper.Replace(s) }
