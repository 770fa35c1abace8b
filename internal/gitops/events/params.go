package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"sigs.k8s.io/yaml"
)

// maxParamBytes bounds one resolved parameter value.
const maxParamBytes = 1 << 20

func yamlToJSON(b []byte) ([]byte, error) { return yaml.YAMLToJSON(b) }

// resolveParam is a parameter's value from the events, as Argo's ResolveParamValue: the
// context or data key (gjson paths), a template over them (.Input), the default value when
// the key is absent, or the whole event's data. raw says the value is JSON to insert as is.
func resolveParam(src *TriggerParameterSource, evs map[string]*Event) (val string, raw bool, err error) {
	ev := evs[src.DependencyName]
	def := func(what string) (string, bool, error) {
		if src.Value != nil {
			return *src.Value, false, nil
		}
		return "", false, fmt.Errorf("%s, and src.value gives no default", what)
	}
	if ev == nil {
		return def("dependency " + src.DependencyName + " has no event")
	}
	ctxJSON, _ := json.Marshal(ev.Context)
	switch {
	case src.ContextKey != "":
		r := gjson.GetBytes(ctxJSON, src.ContextKey)
		if !r.Exists() {
			return def("the event's context has no " + src.ContextKey)
		}
		return r.String(), false, nil
	case src.ContextTemplate != "":
		return execTemplate(src.ContextTemplate, ctxJSON)
	case src.DataKey != "":
		r := gjson.GetBytes(ev.Data, src.DataKey)
		if !r.Exists() {
			return def("the event's data has no " + src.DataKey)
		}
		if src.UseRawData || r.IsObject() || r.IsArray() {
			return r.Raw, src.UseRawData, nil
		}
		return r.String(), false, nil
	case src.DataTemplate != "":
		return execTemplate(src.DataTemplate, ev.Data)
	case src.Value != nil:
		return *src.Value, false, nil
	}
	return string(ev.Data), src.UseRawData, nil
}

func execTemplate(t string, input []byte) (string, bool, error) {
	tm, err := parseTemplate(t)
	if err != nil {
		return "", false, err
	}
	var in any
	_ = json.Unmarshal(input, &in)
	var buf bytes.Buffer
	lw := &limitedWriter{w: &buf, n: maxParamBytes}
	if err := tm.Execute(lw, map[string]any{"Input": in}); err != nil {
		return "", false, fmt.Errorf("template: %v", err)
	}
	return buf.String(), false, nil
}

type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		return 0, fmt.Errorf("output is larger than %d bytes", l.n)
	}
	return l.w.Write(p)
}

// applyParams sets each parameter's dest (an sjson path) in doc.
func applyParams(field string, doc []byte, ps []TriggerParameter, evs map[string]*Event) ([]byte, error) {
	for i, p := range ps {
		pf := fmt.Sprintf("%s[%d]", field, i)
		val, raw, err := resolveParam(p.Src, evs)
		if err != nil {
			return nil, fmt.Errorf("%s.src: %w", pf, err)
		}
		if len(val) > maxParamBytes {
			return nil, fmt.Errorf("%s: the value is larger than %d bytes", pf, maxParamBytes)
		}
		switch p.Operation {
		case "append", "prepend":
			cur := gjson.GetBytes(doc, p.Dest)
			if cur.Exists() {
				if p.Operation == "append" {
					val = cur.String() + val
				} else {
					val = val + cur.String()
				}
				raw = false
			}
		}
		if raw && json.Valid([]byte(val)) {
			doc, err = sjson.SetRawBytes(doc, p.Dest, []byte(val))
		} else {
			doc, err = sjson.SetBytes(doc, p.Dest, val)
		}
		if err != nil {
			return nil, fmt.Errorf("%s.dest %q: %w", pf, p.Dest, err)
		}
	}
	return doc, nil
}

// subjectToken makes a name usable as one NATS subject token: as is when it is letters,
// digits, '-' and '_', else "_" and its hex (names of the kinds start with a letter or digit, so the two never meet).
func subjectToken(s string) string {
	ok := s != ""
	for _, c := range s {
		if !(c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return "_" + strings.ToLower(fmt.Sprintf("%x", s))
}
