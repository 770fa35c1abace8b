package app

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

// ErrUnsupported marks a field Argo CD has and Freshet recognises but does not implement. It
// is an invalid-argument error, so the API answers 400 and says which field.
var ErrUnsupported = fmt.Errorf("not supported by Freshet: %w", errdefs.ErrInvalid)

// MaxDocumentBytes bounds one decoded document.
const MaxDocumentBytes = 1 << 20

// maxErrors bounds how many problems one decode reports.
const maxErrors = 20

// Error is one problem with an Application or AppProject document: the field path, the line
// (1-based, 0 if unknown), the value and what would be valid. It unwraps to an
// *errdefs.FieldError (so errdefs.Field names the path) and, for recognised Argo CD features
// Freshet does not implement, to ErrUnsupported.
type Error struct {
	Path        string
	Line        int
	Value       string
	Reason      string
	Unsupported bool
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.field().Error())
	return b.String()
}

func (e *Error) field() *errdefs.FieldError {
	path := e.Path
	if path == "" {
		path = "(document)"
	}
	fe, _ := errdefs.Invalid(path, e.Value, e.Reason).(*errdefs.FieldError)
	return fe
}

// Unwrap exposes the field error and, for unsupported features, ErrUnsupported.
func (e *Error) Unwrap() []error {
	if e.Unsupported {
		return []error{e.field(), ErrUnsupported}
	}
	return []error{e.field()}
}

// Errors is every problem found in one document, in document order. It unwraps to each.
type Errors []*Error

func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("%d problems: %s", len(es), strings.Join(parts, "; "))
}

// Unwrap returns the individual errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// recognition is what the decoder says about an Argo CD field Freshet does not model.
type recognition struct {
	unsupported bool // true: an error; false: a warning, the field is ignored
	reason      string
}

var serverPopulated = recognition{false, "is set by the Kubernetes API server and ignored"}

// recognised lists, per Go type, the Argo CD fields that are not struct fields.
var recognised = map[reflect.Type]map[string]recognition{
	reflect.TypeFor[Application]():     {"status": {false, "is runtime state; ignored"}, "operation": {true, "triggers a sync through the Kubernetes API; use `freshet app sync` instead"}},
	reflect.TypeFor[AppProject]():      {"status": {false, "is runtime state; ignored"}},
	reflect.TypeFor[ObjectMeta]():      {"uid": serverPopulated, "resourceVersion": serverPopulated, "generation": serverPopulated, "creationTimestamp": serverPopulated, "managedFields": serverPopulated, "selfLink": serverPopulated, "deletionTimestamp": serverPopulated, "deletionGracePeriodSeconds": serverPopulated, "ownerReferences": serverPopulated},
	reflect.TypeFor[ApplicationSpec](): {"sourceHydrator": {true, "source hydration is not supported; render from the dry source directly"}},
	reflect.TypeFor[Source]():          {"plugin": {true, "config management plugins are not supported; use a directory, Kustomize or Helm source"}},
	reflect.TypeFor[AppProjectSpec](): {
		"orphanedResources":          {false, "orphaned-resource monitoring is not supported yet; ignored"},
		"signatureKeys":              {true, "commit signature verification is not supported yet (ignoring it would deploy unverified commits)"},
		"destinationServiceAccounts": {true, "impersonating a service account per destination is not supported yet"},
	},
}

// decoder walks a yaml.Node tree against a Go type, collecting errors with paths and lines.
type decoder struct {
	conv     yamlx.Converter
	errs     Errors
	warnings []string
	lines    map[string]int
}

func (d *decoder) fail(path string, line int, value, reason string) {
	d.add(&Error{Path: path, Line: line, Value: value, Reason: reason})
}

func (d *decoder) add(e *Error) {
	if len(d.errs) < maxErrors {
		d.errs = append(d.errs, e)
	}
}

// line returns the line of path or of its nearest recorded ancestor.
func (d *decoder) line(path string) int {
	for p := path; p != ""; {
		if l, ok := d.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return d.lines[""]
}

type fieldInfo struct {
	index int
	name  string
}

var fieldCache sync.Map // reflect.Type → map[string]fieldInfo

func fieldsOf(t reflect.Type) map[string]fieldInfo {
	if v, ok := fieldCache.Load(t); ok {
		return v.(map[string]fieldInfo)
	}
	m := map[string]fieldInfo{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		m[name] = fieldInfo{index: i, name: name}
	}
	fieldCache.Store(t, m)
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", shorten(n.Value))
		case "!!null":
			return "null"
		}
		return shorten(n.Value)
	}
	return "an alias"
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// decode fills v from n. path is the dotted field path of v.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, depth int) {
	if len(d.errs) >= maxErrors {
		return
	}
	if depth > yamlx.MaxDepth {
		d.fail(path, n.Line, "", fmt.Sprintf("is nested deeper than %d levels", yamlx.MaxDepth))
		return
	}
	if n.Kind == yaml.AliasNode {
		// Aliases are resolved through the converter's budget.
		if _, err := d.conv.Value(n); err != nil {
			d.yamlError(path, err)
			return
		}
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null leaves the zero value, as JSON decoding does
	}
	if _, ok := d.lines[path]; !ok {
		d.lines[path] = n.Line
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, elem.Elem(), path, depth)
		v.Set(elem)
	case reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(path, n.Line, "", "want a string, got "+describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.fail(path, n.Line, scalarValue(n), "want true or false, got "+describe(n))
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			d.fail(path, n.Line, n.Value, "want true or false")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.fail(path, n.Line, scalarValue(n), "want an integer, got "+describe(n))
			return
		}
		var i int64
		if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
			d.fail(path, n.Line, n.Value, "is not an integer in range")
			return
		}
		v.SetInt(i)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, n.Line, scalarValue(n), "want a list, got "+describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		d.decodeMap(n, v, path, depth)
	case reflect.Interface:
		val, err := d.conv.Value(n)
		if err != nil {
			d.yamlError(path, err)
			return
		}
		if val != nil {
			v.Set(reflect.ValueOf(val))
		}
	default:
		d.fail(path, n.Line, "", "cannot be decoded (internal: unsupported Go type "+v.Type().String()+")")
	}
}

func scalarValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

func (d *decoder) yamlError(path string, err error) {
	var ye *yamlx.Error
	if errors.As(err, &ye) {
		d.fail(path, ye.Line, "", ye.Msg)
		return
	}
	d.fail(path, 0, "", err.Error())
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, scalarValue(n), "want a mapping (an object), got "+describe(n))
		return
	}
	pairs, err := d.conv.Pairs(n)
	if err != nil {
		d.yamlError(path, err)
		return
	}
	fields := fieldsOf(v.Type())
	for _, p := range pairs {
		fp := join(path, p.Key)
		d.lines[fp] = p.KeyNode.Line
		if f, ok := fields[p.Key]; ok {
			d.decode(p.Value, v.Field(f.index), fp, depth+1)
			continue
		}
		if r, ok := recognised[v.Type()][p.Key]; ok {
			if r.unsupported {
				d.add(&Error{Path: fp, Line: p.KeyNode.Line, Reason: r.reason, Unsupported: true})
			} else {
				d.warnings = append(d.warnings, fmt.Sprintf("%s (line %d) %s", fp, p.KeyNode.Line, r.reason))
			}
			continue
		}
		d.fail(fp, p.KeyNode.Line, "", "unknown field; "+validFields(fields, suggest(p.Key, fields)))
	}
}

func validFields(fields map[string]fieldInfo, hint string) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	s := "valid fields here: " + strings.Join(names, ", ")
	if hint != "" {
		s = "did you mean " + strconv.Quote(hint) + "? " + s
	}
	return s
}

// suggest returns a field whose name differs from key only in case or by a small edit.
func suggest(key string, fields map[string]fieldInfo) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	best, bestDist := "", 3
	for _, name := range names {
		if strings.EqualFold(name, key) {
			return name
		}
		if dist := levenshtein(strings.ToLower(key), strings.ToLower(name)); dist < bestDist {
			best, bestDist = name, dist
		}
	}
	return best
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, scalarValue(n), "want a mapping, got "+describe(n))
		return
	}
	pairs, err := d.conv.Pairs(n)
	if err != nil {
		d.yamlError(path, err)
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(pairs))
	for _, p := range pairs {
		fp := path + "[" + strconv.Quote(p.Key) + "]"
		d.lines[fp] = p.KeyNode.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		if elem.Kind() == reflect.String && p.Value.Kind == yaml.ScalarNode && p.Value.ShortTag() == "!!null" {
			// "key:" with no value is "" in a map of strings, as kubectl reads labels.
		} else {
			d.decode(p.Value, elem, fp, depth+1)
		}
		m.SetMapIndex(reflect.ValueOf(p.Key), elem)
	}
	v.Set(m)
}

// parse decodes one YAML document into out (a pointer to Application or AppProject).
func parse(data []byte, kind string, out any) (*decoder, error) {
	if len(data) > MaxDocumentBytes {
		return nil, Errors{{Reason: fmt.Sprintf("is %d bytes; the limit is %d", len(data), MaxDocumentBytes)}}
	}
	docs, err := yamlx.SplitDocuments(data)
	if err != nil {
		var ye *yamlx.Error
		if errors.As(err, &ye) {
			return nil, Errors{{Line: ye.Line, Reason: "is not valid YAML: " + ye.Msg}}
		}
		return nil, Errors{{Reason: "is not valid YAML: " + err.Error()}}
	}
	switch len(docs) {
	case 0:
		return nil, Errors{{Reason: "is empty; want an " + kind}}
	case 1:
	default:
		return nil, Errors{{Line: docs[1].Line, Reason: fmt.Sprintf("holds %d documents; want exactly one %s", len(docs), kind)}}
	}
	d := &decoder{lines: map[string]int{"": docs[0].Line}}
	d.decode(docs[0].Node, reflect.ValueOf(out).Elem(), "", 0)
	return d, nil
}

// DecodeApplication decodes and validates one Application document. Every problem is
// reported (up to 20), each naming the field path and line; see Error.
func DecodeApplication(data []byte) (*Application, error) {
	a := &Application{}
	d, err := parse(data, KindApp, a)
	if err != nil {
		return nil, err
	}
	a.validate(d)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	a.Warnings = d.warnings
	return a, nil
}

// DecodeAppProject decodes and validates one AppProject document.
func DecodeAppProject(data []byte) (*AppProject, error) {
	p := &AppProject{}
	d, err := parse(data, KindAppProject, p)
	if err != nil {
		return nil, err
	}
	p.validate(d)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	p.Warnings = d.warnings
	return p, nil
}

// Document is one decoded document of a multi-document file.
type Document struct {
	Line        int // where the document starts
	Application *Application
	AppProject  *AppProject
	// ApplicationSet is an ApplicationSet document, undecoded: package appset decodes it
	// (DecodeNode) so that this package need not know its types.
	ApplicationSet *yaml.Node
}

// KindApplicationSet is Argo CD's ApplicationSet kind.
const KindApplicationSet = "ApplicationSet"

// Decoded is a strict decode in progress, for packages that decode other argoproj.io kinds
// with this package's decoder (same field paths, lines, suggestions and limits): they add
// their validation errors with Fail and finish with Err.
type Decoded struct{ d *decoder }

// DecodeNode decodes one YAML document node into out (a pointer to a struct with json tags)
// with the strict decoder. Unknown fields are errors that name the path and the valid fields.
func DecodeNode(n *yaml.Node, line int, out any) *Decoded {
	d := &decoder{lines: map[string]int{"": line}}
	d.decode(n, reflect.ValueOf(out).Elem(), "", 0)
	return &Decoded{d: d}
}

// DecodeOne splits data into exactly one YAML document of kind and decodes it like
// DecodeNode; the error (app.Errors) is about the YAML itself.
func DecodeOne(data []byte, kind string, out any) (*Decoded, error) {
	d, err := parse(data, kind, out)
	if err != nil {
		return nil, err
	}
	return &Decoded{d: d}, nil
}

// Fail records a problem at path (its line is looked up).
func (x *Decoded) Fail(path, value, reason string) { x.d.fail(path, x.d.line(path), value, reason) }

// Unsupported records a recognised field Freshet does not implement.
func (x *Decoded) Unsupported(path, reason string) {
	x.d.add(&Error{Path: path, Line: x.d.line(path), Reason: reason, Unsupported: true})
}

// Warn records a field accepted and ignored.
func (x *Decoded) Warn(msg string) { x.d.warnings = append(x.d.warnings, msg) }

// Line is the line of path or of its nearest ancestor.
func (x *Decoded) Line(path string) int { return x.d.line(path) }

// ValidateMeta checks a name and namespace as for Applications.
func (x *Decoded) ValidateMeta(m ObjectMeta) { validateMeta(x.d, m) }

// Warnings are the ignored fields seen.
func (x *Decoded) Warnings() []string { return x.d.warnings }

// Err is every problem recorded (Errors), or nil.
func (x *Decoded) Err() error {
	if len(x.d.errs) > 0 {
		return x.d.errs
	}
	return nil
}

// DecodeAll decodes a file that may hold several Application and AppProject documents (an
// installation repository's projects/<name>.yaml, an app-of-apps directory). Errors carry
// the document's absolute line numbers.
func DecodeAll(data []byte) ([]Document, error) {
	docs, err := yamlx.SplitDocuments(data)
	if err != nil {
		var ye *yamlx.Error
		if errors.As(err, &ye) {
			return nil, Errors{{Line: ye.Line, Reason: "is not valid YAML: " + ye.Msg}}
		}
		return nil, err
	}
	var (
		out  []Document
		errs Errors
	)
	for _, doc := range docs {
		kind := ""
		if doc.Node.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(doc.Node.Content); i += 2 {
				if doc.Node.Content[i].Value == "kind" {
					kind = doc.Node.Content[i+1].Value
				}
			}
		}
		d := &decoder{lines: map[string]int{"": doc.Line}}
		switch kind {
		case KindApp:
			a := &Application{}
			d.decode(doc.Node, reflect.ValueOf(a).Elem(), "", 0)
			a.validate(d)
			a.Warnings = d.warnings
			out = append(out, Document{Line: doc.Line, Application: a})
		case KindAppProject:
			p := &AppProject{}
			d.decode(doc.Node, reflect.ValueOf(p).Elem(), "", 0)
			p.validate(d)
			p.Warnings = d.warnings
			out = append(out, Document{Line: doc.Line, AppProject: p})
		case KindApplicationSet:
			out = append(out, Document{Line: doc.Line, ApplicationSet: doc.Node})
		default:
			d.fail("kind", doc.Line, kind, "want Application, AppProject or ApplicationSet")
		}
		errs = append(errs, d.errs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}
