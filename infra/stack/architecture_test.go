package stack_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/infra/internal/tmpl"
)

// scenePath is the architecture drawing's source, relative to this package.
const scenePath = "../../docs/architecture.excalidraw"

// sceneText returns every text and frame name of an Excalidraw scene, joined with
// spaces (a label's lines are one text), or an error when it is not a scene.
func sceneText(raw []byte) (string, error) {
	var s struct {
		Type     string `json:"type"`
		Elements []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			Name      string `json:"name"`
			IsDeleted bool   `json:"isDeleted"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	if s.Type != "excalidraw" {
		return "", &json.UnsupportedValueError{Str: "type " + s.Type}
	}
	var parts []string
	for _, e := range s.Elements {
		if !e.IsDeleted {
			parts = append(parts, e.Text, e.Name)
		}
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " "), nil
}

// cdkHash is the hash CDK appends to a logical id.
var cdkHash = regexp.MustCompile(`[0-9A-F]{8}$`)

// deployedNames returns the name the drawing must show for each function (its
// description), table (its table name, else its logical id), bucket, queue, HTTP API and
// schedule (their logical ids) of the template.
func deployedNames(t *tmpl.Template) []string {
	var names []string
	for _, id := range t.OfType("AWS::Lambda::Function") {
		if d, ok := t.Resources[id].Properties["Description"].(string); ok {
			names = append(names, d)
		} else {
			names = append(names, cdkHash.ReplaceAllString(id, ""))
		}
	}
	for _, id := range t.OfType("AWS::DynamoDB::Table") {
		if n, ok := t.Resources[id].Properties["TableName"].(string); ok {
			names = append(names, n)
		} else {
			names = append(names, cdkHash.ReplaceAllString(id, ""))
		}
	}
	for _, typ := range []string{"AWS::S3::Bucket", "AWS::SQS::Queue", "AWS::ApiGatewayV2::Api", "AWS::Events::Rule", "AWS::Lambda::Url"} {
		for _, id := range t.OfType(typ) {
			names = append(names, cdkHash.ReplaceAllString(id, ""))
		}
	}
	slices.Sort(names)
	return names
}

// missingFromScene returns the names not shown in the scene's text.
func missingFromScene(names []string, text string) []string {
	var missing []string
	for _, n := range names {
		if !strings.Contains(text, strings.Join(strings.Fields(n), " ")) {
			missing = append(missing, n)
		}
	}
	return missing
}

// TestArchitectureSceneShowsTheStack: docs/architecture.excalidraw is a valid scene that
// names every function and table (and the bucket, queue, API and schedules) the
// synthesized stack deploys, so the drawing cannot fall behind infra/.
func TestArchitectureSceneShowsTheStack(t *testing.T) {
	raw, err := os.ReadFile(scenePath)
	if err != nil {
		t.Fatal(err)
	}
	text, err := sceneText(raw)
	if err != nil {
		t.Fatalf("%s is not an Excalidraw scene: %v", scenePath, err)
	}
	names := deployedNames(tpl)
	if len(tpl.OfType("AWS::Lambda::Function")) < 4 || len(tpl.OfType("AWS::DynamoDB::Table")) < 9 {
		t.Fatalf("the stack synthesized %d functions and %d tables: fewer than it deploys",
			len(tpl.OfType("AWS::Lambda::Function")), len(tpl.OfType("AWS::DynamoDB::Table")))
	}
	if m := missingFromScene(names, text); len(m) > 0 {
		t.Errorf("%s does not show %q of the synthesized stack: add them in internal/archdraw/scene.go and run go run ./internal/archdraw", scenePath, m)
	}
	// The check can fail: a scene without one table's name is caught.
	cut := strings.ReplaceAll(text, "Strata-commits", "")
	if m := missingFromScene(names, cut); !slices.Equal(m, []string{"Strata-commits"}) {
		t.Errorf("a scene without Strata-commits: missing %q, want [Strata-commits]", m)
	}
	if _, err := sceneText([]byte(`{"type":"other","elements":[]}`)); err == nil {
		t.Error("a file that is not a scene was read as one")
	}
}
