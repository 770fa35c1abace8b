package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

// parsed is one document of a manifest file.
type parsed struct {
	obj  map[string]any // nil when the document is not a mapping
	line int
	size int
}

// parseManifests splits a YAML or JSON manifest file into documents. A syntax error is an
// *Error naming file and line.
func parseManifests(file string, data []byte) ([]parsed, error) {
	data = trimBOM(data)
	docs, err := yamlx.SplitDocuments(data)
	if err != nil {
		line, msg := 0, err.Error()
		if ye, ok := err.(*yamlx.Error); ok {
			line, msg = ye.Line, ye.Msg
		}
		return nil, newError(ErrInvalidManifest, file, line, "%s", msg)
	}
	out := make([]parsed, 0, len(docs))
	for i, doc := range docs {
		v, err := yamlx.ToValue(doc.Node)
		if err != nil {
			line, msg := doc.Line, err.Error()
			if ye, ok := err.(*yamlx.Error); ok && ye.Line > 0 {
				line, msg = ye.Line, ye.Msg
			}
			return nil, newError(ErrInvalidManifest, file, line, "%s", msg)
		}
		m, _ := v.(map[string]any)
		end := len(data)
		if i+1 < len(docs) {
			end = offsetOfLine(data, docs[i+1].Line)
		}
		out = append(out, parsed{obj: m, line: doc.Line, size: max(end-offsetOfLine(data, doc.Line), 1)})
	}
	return out, nil
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// offsetOfLine is the byte offset where 1-based line n starts.
func offsetOfLine(data []byte, n int) int {
	line := 1
	for i, c := range data {
		if line >= n {
			return i
		}
		if c == '\n' {
			line++
		}
	}
	return len(data)
}

// toObjects turns parsed documents into objects, expanding v1 Lists. A document that is not a
// Kubernetes object (no apiVersion or kind) is an error naming file and line.
func toObjects(file string, docs []parsed, out *output, lineKnown bool) error {
	for _, d := range docs {
		at := Location{File: file}
		if lineKnown {
			at.Line = d.line
		}
		if d.obj == nil {
			return newError(ErrInvalidManifest, file, d.line, "document is not a Kubernetes object (want a mapping with apiVersion and kind)")
		}
		u, err := toUnstructured(d.obj)
		if err != nil {
			return newError(ErrInvalidManifest, file, d.line, "%v", err)
		}
		if u.IsList() {
			items, _ := d.obj["items"].([]any)
			for i, item := range items {
				m, ok := item.(map[string]any)
				if !ok {
					return newError(ErrInvalidManifest, file, d.line, "items[%d] of the %s is not an object", i, u.GetKind())
				}
				iu, err := toUnstructured(m)
				if err != nil {
					return newError(ErrInvalidManifest, file, d.line, "items[%d]: %v", i, err)
				}
				if err := out.add(iu, at, d.size/max(len(items), 1)); err != nil {
					return err
				}
			}
			continue
		}
		if err := out.add(u, at, d.size); err != nil {
			return err
		}
	}
	return nil
}

func toUnstructured(m map[string]any) (*unstructured.Unstructured, error) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	switch {
	case apiVersion == "" && kind == "":
		return nil, fmt.Errorf("document is not a Kubernetes object: apiVersion and kind are missing")
	case apiVersion == "":
		return nil, fmt.Errorf("%s: apiVersion is missing", kind)
	case kind == "":
		return nil, fmt.Errorf("apiVersion %s: kind is missing", apiVersion)
	}
	if md, ok := m["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return nil, fmt.Errorf("%s: metadata must be a mapping", kind)
		}
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// looksLikeManifest is Argo CD's test for a file that failed to parse: if it mentions
// apiVersion, kind and metadata it was meant to be a manifest, and the error is reported;
// otherwise it is an unrelated YAML file and skipped.
func looksLikeManifest(data []byte) bool {
	s := string(data)
	return strings.Contains(s, "apiVersion") && strings.Contains(s, "kind") && strings.Contains(s, "metadata")
}

// fromJSON converts JSON bytes (Kustomize output) into an object.
func fromJSON(b []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil { // numbers become int64/float64, as from YAML
		return nil, err
	}
	return u, nil
}
