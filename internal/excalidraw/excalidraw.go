// Package excalidraw reads and writes Excalidraw scenes (the JSON excalidraw.com opens)
// and renders the subset Strata's architecture drawing uses — rectangles, text, arrows
// with arrowheads and labels, frames — to SVG, so the drawing is kept once, as the scene.
package excalidraw

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Scene is an Excalidraw file.
type Scene struct {
	Type     string         `json:"type"`
	Version  int            `json:"version"`
	Source   string         `json:"source"`
	Elements []Element      `json:"elements"`
	AppState map[string]any `json:"appState"`
	Files    map[string]any `json:"files"`
}

// Element is one element of a scene; fields a type does not use are left out.
type Element struct {
	ID              string         `json:"id"`
	Type            string         `json:"type"`
	X               float64        `json:"x"`
	Y               float64        `json:"y"`
	Width           float64        `json:"width"`
	Height          float64        `json:"height"`
	Angle           float64        `json:"angle"`
	StrokeColor     string         `json:"strokeColor"`
	BackgroundColor string         `json:"backgroundColor"`
	FillStyle       string         `json:"fillStyle"`
	StrokeWidth     float64        `json:"strokeWidth"`
	StrokeStyle     string         `json:"strokeStyle"`
	Roughness       int            `json:"roughness"`
	Opacity         int            `json:"opacity"`
	GroupIDs        []string       `json:"groupIds"`
	FrameID         *string        `json:"frameId"`
	Roundness       *Roundness     `json:"roundness"`
	Seed            int            `json:"seed"`
	Version         int            `json:"version"`
	VersionNonce    int            `json:"versionNonce"`
	IsDeleted       bool           `json:"isDeleted"`
	BoundElements   []Bound        `json:"boundElements"`
	Updated         int64          `json:"updated"`
	Link            *string        `json:"link"`
	Locked          bool           `json:"locked"`
	CustomData      map[string]any `json:"customData,omitempty"`

	// text
	Text          string  `json:"text,omitempty"`
	OriginalText  string  `json:"originalText,omitempty"`
	FontSize      float64 `json:"fontSize,omitempty"`
	FontFamily    int     `json:"fontFamily,omitempty"`
	TextAlign     string  `json:"textAlign,omitempty"`
	VerticalAlign string  `json:"verticalAlign,omitempty"`
	ContainerID   *string `json:"containerId,omitempty"`
	LineHeight    float64 `json:"lineHeight,omitempty"`
	AutoResize    *bool   `json:"autoResize,omitempty"`

	// arrow
	Points         [][2]float64 `json:"points,omitempty"`
	StartBinding   *Binding     `json:"startBinding,omitempty"`
	EndBinding     *Binding     `json:"endBinding,omitempty"`
	StartArrowhead *string      `json:"startArrowhead,omitempty"`
	EndArrowhead   *string      `json:"endArrowhead,omitempty"`

	// frame
	Name *string `json:"name,omitempty"`
}

// Roundness is an element's corner style (3: adaptive radius for rectangles, 2: arrows).
type Roundness struct {
	Type int `json:"type"`
}

// Bound names an element bound to another: a container's text or an arrow's ends.
type Bound struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Binding ties an arrow's end to an element.
type Binding struct {
	ElementID string  `json:"elementId"`
	Focus     float64 `json:"focus"`
	Gap       float64 `json:"gap"`
}

// Parse decodes a scene and checks what the renderer and Excalidraw rely on: the file
// type, unique ids, and that every binding, container and frame names an element.
func Parse(raw []byte) (*Scene, error) {
	var s Scene
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("excalidraw: %w", err)
	}
	if s.Type != "excalidraw" {
		return nil, fmt.Errorf("excalidraw: type %q, want \"excalidraw\"", s.Type)
	}
	ids := make(map[string]*Element, len(s.Elements))
	for i := range s.Elements {
		e := &s.Elements[i]
		if e.ID == "" {
			return nil, errors.New("excalidraw: an element without id")
		}
		if ids[e.ID] != nil {
			return nil, fmt.Errorf("excalidraw: duplicate id %q", e.ID)
		}
		ids[e.ID] = e
	}
	for _, e := range s.Elements {
		refs := []string{}
		if e.ContainerID != nil {
			refs = append(refs, *e.ContainerID)
		}
		if e.FrameID != nil {
			refs = append(refs, *e.FrameID)
		}
		if e.StartBinding != nil {
			refs = append(refs, e.StartBinding.ElementID)
		}
		if e.EndBinding != nil {
			refs = append(refs, e.EndBinding.ElementID)
		}
		for _, b := range e.BoundElements {
			refs = append(refs, b.ID)
		}
		for _, r := range refs {
			if ids[r] == nil {
				return nil, fmt.Errorf("excalidraw: element %q refers to missing %q", e.ID, r)
			}
		}
		if e.Type == "arrow" && len(e.Points) < 2 {
			return nil, fmt.Errorf("excalidraw: arrow %q has %d points, want at least 2", e.ID, len(e.Points))
		}
	}
	return &s, nil
}

// Texts returns the text of every live text element and the name of every frame.
func (s *Scene) Texts() []string {
	var out []string
	for _, e := range s.Elements {
		if e.IsDeleted {
			continue
		}
		if e.Type == "text" {
			out = append(out, e.Text)
		}
		if e.Type == "frame" && e.Name != nil {
			out = append(out, *e.Name)
		}
	}
	return out
}

// Frames returns the live frames of the scene in order.
func (s *Scene) Frames() []Element {
	var out []Element
	for _, e := range s.Elements {
		if e.Type == "frame" && !e.IsDeleted {
			out = append(out, e)
		}
	}
	return out
}
