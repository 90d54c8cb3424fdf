package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const docs = "../../docs"

// TestCommittedSceneIsGenerated: docs/architecture.excalidraw is what scene.go builds, so
// an edit of either alone fails (regenerate with go run ./internal/archdraw).
func TestCommittedSceneIsGenerated(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join(docs, "architecture.excalidraw"))
	if err != nil {
		t.Fatal(err)
	}
	built, err := json.MarshalIndent(Scene(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, append(built, '\n')) {
		t.Fatal("docs/architecture.excalidraw is not what internal/archdraw builds: run go run ./internal/archdraw")
	}
}

// TestCommittedSVGIsRendered: every committed architecture SVG is what the renderer makes
// of the committed scene, and no stale one is left behind.
func TestCommittedSVGIsRendered(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(docs, "architecture.excalidraw"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 {
		t.Errorf("rendered %d SVGs, want the scene and its 3 frames", len(out))
	}
	for name, svg := range out {
		committed, err := os.ReadFile(filepath.Join(docs, "img", name))
		if err != nil {
			t.Errorf("%s: %v (run go run ./internal/archdraw)", name, err)
			continue
		}
		if !bytes.Equal(committed, svg) {
			t.Errorf("docs/img/%s is not the rendering of docs/architecture.excalidraw: run go run ./internal/archdraw", name)
		}
	}
	stale, _ := filepath.Glob(filepath.Join(docs, "img", "architecture*.svg"))
	for _, p := range stale {
		if _, ok := out[filepath.Base(p)]; !ok {
			t.Errorf("%s is not rendered from the scene any more: delete it", p)
		}
	}
}

// TestSVGEmbedded: README.md and docs/DESIGN.md show the rendered drawing.
func TestSVGEmbedded(t *testing.T) {
	for _, f := range []struct{ path, ref string }{
		{"../../README.md", "docs/img/architecture.svg"},
		{"../../docs/DESIGN.md", "img/architecture.svg"},
		{"../../docs/DESIGN.md", "img/architecture-append.svg"},
		{"../../docs/DESIGN.md", "img/architecture-consumer.svg"},
	} {
		raw, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte("("+f.ref+")")) {
			t.Errorf("%s does not embed %s", f.path, f.ref)
		}
	}
}

// TestFramesHoldTheirPaths: the append and consumer frames exist and hold elements.
func TestFramesHoldTheirPaths(t *testing.T) {
	s := Scene()
	var frames []string
	count := map[string]int{}
	for _, e := range s.Elements {
		if e.Type == "frame" {
			frames = append(frames, e.ID)
		}
		if e.FrameID != nil {
			count[*e.FrameID]++
		}
	}
	for _, want := range []string{"f-append", "f-consumer", "f-local"} {
		if !slices.Contains(frames, want) || count[want] < 5 {
			t.Errorf("frame %s: present %v, %d elements", want, slices.Contains(frames, want), count[want])
		}
	}
}
