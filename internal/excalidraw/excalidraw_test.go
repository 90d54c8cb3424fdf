package excalidraw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// scene is a small valid scene: two rectangles, a label, an arrow between them, a frame.
const scene = `{"type":"excalidraw","version":2,"source":"test","appState":{},"files":{},"elements":[
{"id":"f","type":"frame","x":0,"y":0,"width":400,"height":200,"name":"F"},
{"id":"a","type":"rectangle","x":10,"y":10,"width":100,"height":50,"frameId":"f","boundElements":[{"id":"a-t","type":"text"},{"id":"x","type":"arrow"}]},
{"id":"a-t","type":"text","x":20,"y":20,"width":80,"height":20,"text":"api <&>","fontSize":15,"containerId":"a","textAlign":"center"},
{"id":"b","type":"rectangle","x":200,"y":10,"width":100,"height":50,"frameId":"f","boundElements":[{"id":"x","type":"arrow"}]},
{"id":"x","type":"arrow","x":114,"y":35,"width":82,"height":0,"frameId":"f","points":[[0,0],[82,0]],"endArrowhead":"arrow",
 "startBinding":{"elementId":"a","focus":0,"gap":4},"endBinding":{"elementId":"b","focus":0,"gap":4}},
{"id":"out","type":"rectangle","x":600,"y":600,"width":10,"height":10}
]}`

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"not excalidraw", `"type":"excalidraw"`, `"type":"other"`, "want \"excalidraw\""},
		{"duplicate id", `"id":"b","type":"rectangle"`, `"id":"a","type":"rectangle"`, "duplicate id"},
		{"dangling binding", `"endBinding":{"elementId":"b"`, `"endBinding":{"elementId":"gone"`, "missing \"gone\""},
		{"dangling container", `"containerId":"a"`, `"containerId":"nope"`, "missing \"nope\""},
		{"dangling frame", `"frameId":"f","boundElements":[{"id":"x"`, `"frameId":"g","boundElements":[{"id":"x"`, "missing \"g\""},
		{"one-point arrow", `[[0,0],[82,0]]`, `[[0,0]]`, "1 points"},
		{"empty id", `"id":"out"`, `"id":""`, "without id"},
		{"not json", `{"type"`, `{type`, "excalidraw:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := strings.Replace(scene, tc.from, tc.to, 1)
			if raw == scene {
				t.Fatalf("the case changes nothing: %q not in the scene", tc.from)
			}
			_, err := Parse([]byte(raw))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSVG(t *testing.T) {
	s, err := Parse([]byte(scene))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := s.SVG("")
	if err != nil {
		t.Fatal(err)
	}
	frame, err := s.SVG("f")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api &lt;&amp;&gt;", `<path d="M114 35 L196 35"`, ">F</text>"} {
		if !bytes.Contains(frame, []byte(want)) {
			t.Errorf("frame SVG lacks %q:\n%s", want, frame)
		}
	}
	if bytes.Contains(frame, []byte(`x="600"`)) {
		t.Errorf("frame SVG holds an element outside the frame:\n%s", frame)
	}
	if !bytes.Contains(whole, []byte(`x="600"`)) {
		t.Errorf("scene SVG lacks the element outside the frame:\n%s", whole)
	}
	if _, err := s.SVG("a"); err == nil {
		t.Error("SVG of a rectangle as a frame: no error")
	}
	again, _ := s.SVG("")
	if !bytes.Equal(whole, again) {
		t.Error("two renderings of one scene differ")
	}
}

// FuzzParse: outside bytes never panic the parser or the renderer.
func FuzzParse(f *testing.F) {
	f.Add([]byte(scene))
	f.Add([]byte(`{"type":"excalidraw","elements":[{"id":"a","type":"arrow","points":[[0,0],[1e308,-1e308]]}]}`))
	f.Add([]byte(`{"type":"excalidraw","elements":[{"id":"t","type":"text","text":"a\nb","containerId":"t"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := Parse(raw)
		if err != nil {
			return
		}
		_, _ = s.SVG("")
		for _, fr := range s.Frames() {
			if _, err := s.SVG(fr.ID); err != nil {
				t.Fatalf("SVG of frame %q: %v", fr.ID, err)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("a parsed scene does not marshal: %v", err)
		}
	})
}
