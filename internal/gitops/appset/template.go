package appset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// maxRenderedBytes bounds what one templated string may render to.
const maxRenderedBytes = 1 << 20

// funcs is the Go template function set: Sprig's (as in Argo CD) without what reads the
// runtime's environment or the network (env, expandenv, getHostByName) and without key and
// certificate generation (CPU-bound; no application field needs one), plus Argo CD's
// normalize, slugify, toYaml, fromYaml and fromYamlArray.
var funcs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range []string{"env", "expandenv", "getHostByName",
		"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
		"genSignedCert", "genSignedCertWithKey", "derivePassword", "buildCustomCert"} {
		delete(m, name)
	}
	m["normalize"] = normalize
	m["slugify"] = slugify
	m["toYaml"] = func(v any) (string, error) {
		b, err := sigsyaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	}
	m["fromYaml"] = func(s string) (map[string]any, error) {
		var out map[string]any
		err := sigsyaml.Unmarshal([]byte(s), &out)
		return out, err
	}
	m["fromYamlArray"] = func(s string) ([]any, error) {
		var out []any
		err := sigsyaml.Unmarshal([]byte(s), &out)
		return out, err
	}
	return m
}()

var (
	invalidDNS  = regexp.MustCompile(`[^a-z0-9.-]+`)
	invalidSlug = regexp.MustCompile(`[^a-z0-9-]+`)
)

// normalize makes a string usable as a DNS name (Argo CD's normalize): lower case, runs of
// other characters become "-", at most 253 characters.
func normalize(s string) string {
	s = invalidDNS.ReplaceAllString(strings.ToLower(s), "-")
	if len(s) > 253 {
		s = s[:253]
	}
	return strings.Trim(s, "-.")
}

// slugify is Argo CD's slugify: lower-case, "-" for other characters, trimmed to maxSize
// (default 50) characters.
func slugify(args ...any) string {
	maxSize, smartTruncate := 50, true
	var s string
	switch len(args) {
	case 1:
		s = fmt.Sprint(args[0])
	case 3:
		if n, ok := args[0].(int); ok {
			maxSize = n
		}
		if b, ok := args[1].(bool); ok {
			smartTruncate = b
		}
		s = fmt.Sprint(args[2])
	default:
		return ""
	}
	s = strings.Trim(invalidSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if maxSize > 0 && len(s) > maxSize {
		if smartTruncate {
			cut := strings.LastIndex(s[:maxSize], "-")
			if cut > 0 {
				s = s[:cut]
			} else {
				s = s[:maxSize]
			}
		} else {
			s = s[:maxSize]
		}
	}
	return strings.Trim(s, "-")
}

// renderer templates strings for one ApplicationSet: Go templates (parsed once per distinct
// string) or the legacy {{param}} form.
type renderer struct {
	goTemplate bool
	options    []string
	parsed     map[string]*template.Template
}

func newRenderer(goTemplate bool, options []string) *renderer {
	return &renderer{goTemplate: goTemplate, options: options, parsed: map[string]*template.Template{}}
}

// limitedBuffer fails writes past maxRenderedBytes.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxRenderedBytes {
		return 0, fmt.Errorf("renders more than %d bytes", maxRenderedBytes)
	}
	return b.Buffer.Write(p)
}

// str renders one string with params (nested for Go templates, flat for the legacy form).
func (r *renderer) str(s string, params map[string]any) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	if !r.goTemplate {
		return fastTemplate(s, params), nil
	}
	t := r.parsed[s]
	if t == nil {
		var err error
		t, err = template.New("").Funcs(funcs).Option(r.options...).Parse(s)
		if err != nil {
			return "", err
		}
		r.parsed[s] = t
	}
	var buf limitedBuffer
	if err := t.Execute(&buf, params); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// fastTemplate is Argo CD's legacy form: {{ key }} becomes the flat parameter's value; a tag
// naming no parameter stays as written.
func fastTemplate(s string, params map[string]any) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		tag := s[i+2 : i+2+j]
		if v, ok := params[strings.TrimSpace(tag)]; ok {
			b.WriteString(scalarString(v))
		} else {
			b.WriteString("{{" + tag + "}}")
		}
		s = s[i+2+j+2:]
	}
}

func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// value renders every string in a JSON value (map keys are kept, as in Argo CD).
func (r *renderer) value(v any, params map[string]any, path string) (any, error) {
	switch x := v.(type) {
	case string:
		out, err := r.str(x, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return out, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			out, err := r.value(e, params, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			m[k] = out
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			out, err := r.value(e, params, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			l[i] = out
		}
		return l, nil
	}
	return v, nil
}

func joinPath(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// toJSONValue turns a typed value into plain JSON values.
func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// mergeOver returns base with every non-empty leaf of over set (a generator's template over
// the ApplicationSet's, as Argo CD merges them).
func mergeOver(base, over any) any {
	om, ok := over.(map[string]any)
	if !ok {
		if isEmpty(over) {
			return base
		}
		return over
	}
	bm, _ := base.(map[string]any)
	if len(om) == 0 && bm == nil {
		return om // set, empty (automated: {})
	}
	out := make(map[string]any, len(bm)+len(om))
	for k, v := range bm {
		out[k] = v
	}
	for k, v := range om {
		out[k] = mergeOver(out[k], v)
	}
	return out
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, _ := target.(map[string]any)
	out := make(map[string]any, len(tm)+len(pm))
	for k, v := range tm {
		out[k] = v
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}
