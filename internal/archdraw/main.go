// Command archdraw writes Strata's architecture drawing: the Excalidraw scene
// docs/architecture.excalidraw (the source, built in scene.go) and its SVG renderings,
// docs/img/architecture.svg and one per frame, so the drawing is never drawn twice.
//
//	go run ./internal/archdraw          # from the repository root
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	docs := flag.String("docs", "docs", "the docs directory to write into")
	flag.Parse()
	if err := write(*docs); err != nil {
		fmt.Fprintln(os.Stderr, "archdraw:", err)
		os.Exit(1)
	}
}

// write builds the scene, writes it, then renders the written file (never the builder's
// copy), so the SVGs are what the committed scene renders to.
func write(docs string) error {
	raw, err := json.MarshalIndent(Scene(), "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	scenePath := filepath.Join(docs, "architecture.excalidraw")
	if err := os.WriteFile(scenePath, raw, 0o644); err != nil {
		return err
	}
	out, err := render(raw)
	if err != nil {
		return err
	}
	for name, svg := range out {
		if err := os.WriteFile(filepath.Join(docs, "img", name), svg, 0o644); err != nil {
			return err
		}
	}
	return nil
}
