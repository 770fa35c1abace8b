package rest

import (
	"bytes"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/api"
)

// Spec is the part of the OpenAPI document the docs page and the route tests read.
type Spec struct {
	Info struct {
		Title       string `yaml:"title"`
		Version     string `yaml:"version"`
		Description string `yaml:"description"`
	} `yaml:"info"`
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components struct {
		Schemas map[string]yaml.Node `yaml:"schemas"`
	} `yaml:"components"`
}

// Operation is one documented method on a path.
type Operation struct {
	Method, Path, ID, Summary string
	Public                    bool
	Params                    []string
	Body                      string
}

// ParseSpec reads the embedded OpenAPI document.
func ParseSpec() (Spec, []Operation, error) {
	var s Spec
	if err := yaml.Unmarshal(api.OpenAPI, &s); err != nil {
		return s, nil, err
	}
	var ops []Operation
	for path, methods := range s.Paths {
		for method, node := range methods {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string           `yaml:"operationId"`
				Summary     string           `yaml:"summary"`
				Security    *[]any           `yaml:"security"`
				Parameters  []map[string]any `yaml:"parameters"`
				RequestBody struct {
					Content map[string]struct {
						Schema map[string]any `yaml:"schema"`
					} `yaml:"content"`
				} `yaml:"requestBody"`
			}
			if err := node.Decode(&op); err != nil {
				return s, nil, err
			}
			o := Operation{Method: strings.ToUpper(method), Path: path, ID: op.OperationID, Summary: op.Summary,
				Public: op.Security != nil && len(*op.Security) == 0}
			for _, p := range op.Parameters {
				if ref, ok := p["$ref"].(string); ok {
					o.Params = append(o.Params, ref[strings.LastIndex(ref, "/")+1:])
				} else if n, ok := p["name"].(string); ok {
					o.Params = append(o.Params, n)
				}
			}
			if c, ok := op.RequestBody.Content["application/json"]; ok {
				if ref, ok := c.Schema["$ref"].(string); ok {
					o.Body = ref[strings.LastIndex(ref, "/")+1:]
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	return s, ops, nil
}

var docsTmpl = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Spec.Info.Title}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:980px;margin:2rem auto;padding:0 1rem;color:#1b1f24}
code,pre{font-family:ui-monospace,monospace}pre{background:#f4f5f7;padding:1rem;overflow:auto;white-space:pre-wrap}
.op{border:1px solid #d8dde3;border-radius:6px;margin:.6rem 0;padding:.6rem .9rem}
.m{display:inline-block;min-width:4.2rem;font-weight:700}.GET{color:#0a7}.POST{color:#06c}.PATCH{color:#b70}.DELETE{color:#c22}
small{color:#57606a}
</style></head><body>
<h1>{{.Spec.Info.Title}} <small>{{.Spec.Info.Version}}</small></h1>
<pre>{{.Spec.Info.Description}}</pre>
<p>Machine-readable: <a href="/api/v1/openapi.yaml">/api/v1/openapi.yaml</a>. GraphQL: <code>POST /api/graphql</code>.</p>
<h2>Endpoints</h2>
{{range .Ops}}<div class="op" id="{{.ID}}"><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code>{{if .Public}} <small>(no credentials)</small>{{end}}
<div>{{.Summary}}</div>{{if .Params}}<small>Parameters: {{range $i, $p := .Params}}{{if $i}}, {{end}}<code>{{$p}}</code>{{end}}</small><br>{{end}}{{if .Body}}<small>Body: <a href="#schema-{{.Body}}">{{.Body}}</a></small>{{end}}</div>
{{end}}
<h2>Schemas</h2>
{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3><pre>{{.YAML}}</pre>{{end}}
</body></html>`))

var docsPage = sync.OnceValues(func() ([]byte, error) {
	spec, ops, err := ParseSpec()
	if err != nil {
		return nil, err
	}
	type schema struct{ Name, YAML string }
	var schemas []schema
	for name, node := range spec.Components.Schemas {
		b, _ := yaml.Marshal(&node)
		schemas = append(schemas, schema{name, string(b)})
	}
	sort.Slice(schemas, func(i, j int) bool { return schemas[i].Name < schemas[j].Name })
	var buf bytes.Buffer
	err = docsTmpl.Execute(&buf, map[string]any{"Spec": spec, "Ops": ops, "Schemas": schemas})
	return buf.Bytes(), err
})

func serveDocs(w http.ResponseWriter, _ *http.Request) error {
	page, err := docsPage()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write(page)
	return err
}
