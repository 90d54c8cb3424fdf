package main

import "github.com/stratalog/strata/internal/excalidraw"

// render parses a scene file and returns its SVGs by file name: the whole scene and
// each frame.
func render(raw []byte) (map[string][]byte, error) {
	s, err := excalidraw.Parse(raw)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	whole, err := s.SVG("")
	if err != nil {
		return nil, err
	}
	out["architecture.svg"] = whole
	for _, f := range s.Frames() {
		svg, err := s.SVG(f.ID)
		if err != nil {
			return nil, err
		}
		out[frameFile(f.ID)] = svg
	}
	return out, nil
}
