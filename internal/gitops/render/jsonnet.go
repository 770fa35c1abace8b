package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// jsonnetMaxStack bounds the depth of a Jsonnet evaluation (go-jsonnet's default, which Argo CD
// keeps): deeper recursion is an error naming the file and line.
const jsonnetMaxStack = 500

// jsonnetFile evaluates one .jsonnet file of a directory app with go-jsonnet, as Argo CD's
// repo-server does: the app's top-level arguments and external variables (build variables such
// as $ARGOCD_APP_NAME substituted in their values), imports searched next to the importing
// file, then in the library paths (spec.source.directory.jsonnet.libs, relative to the
// repository root, last first), then in the app directory. Imports never leave the repository.
// The file evaluates to an object, an array of objects, or a List.
func (j *job) jsonnetFile(file string, out *output) error {
	imp, err := j.jsonnetImporter()
	if err != nil {
		return err
	}
	vm := jsonnet.MakeVM()
	vm.MaxStack = jsonnetMaxStack
	vm.SetTraceOut(io.Discard) // std.trace is the tenant's; it does not reach the runtime's log
	vm.Importer(imp)
	ef := &capturingFormatter{ErrorFormatter: vm.ErrorFormatter}
	vm.ErrorFormatter = ef
	if js := j.jsonnetOptions(); js != nil {
		env := j.buildEnv()
		expand := func(v string) string {
			return os.Expand(v, func(name string) string {
				if name == "$" {
					return "$" // $$ is a literal $, as in Argo CD
				}
				return env[name]
			})
		}
		for _, a := range js.TLAs {
			if a.Code {
				vm.TLACode(a.Name, expand(a.Value))
			} else {
				vm.TLAVar(a.Name, expand(a.Value))
			}
		}
		for _, v := range js.ExtVars {
			if v.Code {
				vm.ExtCode(v.Name, expand(v.Value))
			} else {
				vm.ExtVar(v.Name, expand(v.Value))
			}
		}
	}
	imp.refused = nil
	res, err := vm.EvaluateFile(file)
	if err != nil {
		return imp.evalError(file, err, ef.err)
	}
	return jsonnetObjects(file, []byte(res), out)
}

// jsonnetOptions are the app's directory.jsonnet options, nil when none.
func (j *job) jsonnetOptions() *app.JsonnetSource {
	if j.req.Source.Directory == nil {
		return nil
	}
	return j.req.Source.Directory.Jsonnet
}

// capturingFormatter keeps the error go-jsonnet formats, for its location.
type capturingFormatter struct {
	jsonnet.ErrorFormatter
	err error
}

func (f *capturingFormatter) Format(err error) string {
	f.err = err
	return f.ErrorFormatter.Format(err)
}

// jsonnetImporter resolves imports inside the repository, reading under the render's budget.
// Paths it hands go-jsonnet (and so the file names in Jsonnet errors) are relative to the
// repository root.
type jsonnetImporter struct {
	j       *job
	libs    []string                    // repository-relative library dirs, in search order
	cache   map[string]jsonnet.Contents // by repository-relative path
	refused *Error                      // why the last import failed, when it was refused
}

func (j *job) jsonnetImporter() (*jsonnetImporter, error) {
	if j.jsonnet != nil {
		return j.jsonnet, nil
	}
	imp := &jsonnetImporter{j: j, cache: map[string]jsonnet.Contents{}}
	if js := j.jsonnetOptions(); js != nil {
		for i, lib := range js.Libs {
			c := path.Clean(strings.TrimLeft(filepath.ToSlash(lib), "/"))
			if strings.TrimSpace(lib) == "" || c == ".." || strings.HasPrefix(c, "../") {
				return nil, newError(ErrInvalidManifest, "", 0, "spec.source.directory.jsonnet.libs[%d] %q must be a directory inside the repository, relative to its root", i, lib)
			}
			imp.libs = append(imp.libs, c)
		}
	}
	slices.Reverse(imp.libs) // go-jsonnet searches library paths last first
	imp.libs = append(imp.libs, j.srcPath)
	j.jsonnet = imp
	return imp, nil
}

// Import implements jsonnet.Importer. from is "" for the file being evaluated, whose path is
// repository-relative.
func (m *jsonnetImporter) Import(from, imported string) (jsonnet.Contents, string, error) {
	if from == "" {
		return m.read(imported)
	}
	if imported == "" {
		return jsonnet.Contents{}, "", errors.New("import of an empty path")
	}
	if path.IsAbs(imported) || filepath.IsAbs(imported) {
		return m.refuse(from, imported, "absolute import paths are not allowed; import relative to the file or to a library path")
	}
	dirs := append([]string{path.Dir(from)}, m.libs...)
	escaped := false
	for _, dir := range dirs {
		cand := path.Join(dir, filepath.ToSlash(imported))
		if cand == ".." || strings.HasPrefix(cand, "../") {
			escaped = true
			continue
		}
		if c, ok := m.cache[cand]; ok {
			return c, cand, nil
		}
		abs := filepath.Join(m.j.root, filepath.FromSlash(cand))
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			continue // not here
		}
		if !within(m.j.root, real) {
			escaped = true
			continue
		}
		if fi, err := os.Stat(real); err != nil || fi.IsDir() {
			continue
		}
		return m.read(cand)
	}
	if escaped {
		return m.refuse(from, imported, "leads outside the repository")
	}
	return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: not found next to %s, in spec.source.directory.jsonnet.libs or in the app directory", imported, from)
}

func (m *jsonnetImporter) refuse(from, imported, why string) (jsonnet.Contents, string, error) {
	m.refused = newError(ErrNotFound, from, 0, "import %q %s", imported, why)
	return jsonnet.Contents{}, "", fmt.Errorf("import %q refused: %s", imported, why)
}

// read reads a repository-relative file, once per render.
func (m *jsonnetImporter) read(rel string) (jsonnet.Contents, string, error) {
	if c, ok := m.cache[rel]; ok {
		return c, rel, nil
	}
	data, err := m.j.readFileIn(m.j.root, filepath.Join(m.j.root, filepath.FromSlash(rel)), rel)
	if err != nil {
		var re *Error
		if errors.As(err, &re) {
			m.refused = re
		}
		return jsonnet.Contents{}, "", err
	}
	c := jsonnet.MakeContentsRaw(data)
	m.cache[rel] = c
	return c, rel, nil
}

// evalError turns a failed evaluation into an *Error at the innermost Jsonnet location, with
// go-jsonnet's message (which names file:line:column and the stack).
func (m *jsonnetImporter) evalError(file string, formatted, raw error) error {
	var re *Error
	if errors.As(raw, &re) {
		return re // the file itself could not be read
	}
	at := Location{File: file}
	var rt jsonnet.RuntimeError
	var st interface{ Loc() ast.LocationRange }
	switch {
	case errors.As(raw, &rt):
		for i := len(rt.StackTrace) - 1; i >= 0; i-- { // innermost last
			if f := rt.StackTrace[i]; f.Loc.FileName != "" && f.Loc.Begin.Line > 0 {
				at = Location{File: f.Loc.FileName, Line: f.Loc.Begin.Line}
				break
			}
		}
	case errors.As(raw, &st):
		if l := st.Loc(); l.FileName != "" {
			at = Location{File: l.FileName, Line: l.Begin.Line}
		}
	}
	k := ErrTool
	if m.refused != nil {
		k = m.refused.Kind
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(formatted.Error()), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" && len(lines) < 8 {
			lines = append(lines, l)
		}
	}
	msg := "Jsonnet: " + strings.Join(lines, "; ")
	if at.File != file {
		msg = fmt.Sprintf("evaluating %s: %s", file, msg)
	}
	return &Error{Kind: k, At: at, Msg: msg, Err: raw}
}

// jsonnetObjects turns the JSON a .jsonnet file evaluated to into objects: one object (a List
// is expanded) or an array of them.
func jsonnetObjects(file string, data []byte, out *output) error {
	if int64(len(data)) > out.j.r.opts.MaxOutputBytes {
		return newError(ErrTooLarge, file, 0, "the Jsonnet output is %d bytes; the limit is %d", len(data), out.j.r.opts.MaxOutputBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return newError(ErrInvalidManifest, file, 0, "the Jsonnet output is not JSON: %v", err)
	}
	if dec.More() {
		return newError(ErrInvalidManifest, file, 0, "the Jsonnet output has more than one JSON value")
	}
	v = fromJSONNumbers(v)
	var docs []parsed
	switch x := v.(type) {
	case map[string]any:
		docs = []parsed{{obj: x, size: max(len(data), 1)}}
	case []any:
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return newError(ErrInvalidManifest, file, 0, "element %d of the array the Jsonnet evaluates to is %s; want an object with apiVersion and kind", i, jsonKind(e))
			}
			docs = append(docs, parsed{obj: m, size: max(len(data)/len(x), 1)})
		}
	default:
		return newError(ErrInvalidManifest, file, 0, "the Jsonnet evaluates to %s; want an object, an array of objects or a List", jsonKind(v))
	}
	return toObjects(file, docs, out, false)
}

// fromJSONNumbers replaces json.Numbers with int64 (when integral and in range) or float64, as
// YAML manifests decode.
func fromJSONNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return x.String()
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = fromJSONNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = fromJSONNumbers(e)
		}
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}
