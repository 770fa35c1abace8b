package yamlx_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

func TestSplitAndConvert(t *testing.T) {
	docs, err := yamlx.SplitDocuments([]byte(`# comment only
---
base: &base {a: 1, b: x}
merged:
  <<: *base
  b: y
n: 12345678901234567890
f: 1.5
t: 2024-01-02
s: "007"
on: yes
nil: ~
---
---
- 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Line != 3 || docs[1].Line != 15 {
		t.Fatalf("docs = %+v", docs)
	}
	v, err := yamlx.ToValue(docs[0].Node)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"base":   map[string]any{"a": int64(1), "b": "x"},
		"merged": map[string]any{"a": int64(1), "b": "y"},
		"n":      float64(12345678901234567890),
		"f":      1.5,
		"t":      "2024-01-02",
		"s":      "007",
		"on":     "yes", // YAML 1.2: not a boolean
		"nil":    nil,
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v\nwant %#v", v, want)
	}
}

func TestErrorsAndLimits(t *testing.T) {
	if _, err := yamlx.SplitDocuments([]byte("a: b\n  c: d\n")); err == nil || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Errorf("syntax error = %v, want it at line 2", err)
	}
	bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	docs, err := yamlx.SplitDocuments([]byte(bomb))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := yamlx.ToValue(docs[0].Node); err == nil || !strings.Contains(err.Error(), "alias") {
		t.Errorf("alias bomb: %v", err)
	}
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	docs, err = yamlx.SplitDocuments([]byte(deep))
	if err == nil {
		if _, err = yamlx.ToValue(docs[0].Node); err == nil || !strings.Contains(err.Error(), "deeper") {
			t.Errorf("deep nesting: %v", err)
		}
	}
	docs, _ = yamlx.SplitDocuments([]byte("a: 1\na: 2\n"))
	if _, err := yamlx.ToValue(docs[0].Node); err == nil || !strings.Contains(err.Error(), "line 2: key \"a\" is repeated (first at line 1)") {
		t.Errorf("duplicate key: %v", err)
	}
	docs, _ = yamlx.SplitDocuments([]byte("x: .inf\n"))
	if _, err := yamlx.ToValue(docs[0].Node); err == nil {
		t.Error("infinity accepted as a JSON number")
	}
}
