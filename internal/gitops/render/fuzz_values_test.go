package render

import (
	"encoding/json"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
)

// FuzzHelmValues feeds arbitrary Helm values (a values file or spec.source.helm.values from git)
// and a parameter (spec.source.helm.parameters, as --set) through what helm() does with them:
// chartutil.ReadValues, mergeValues, copyValues and strvals: nothing panics or runs away (alias
// bombs, huge list indices), and the merged values encode as JSON (NaN aside, which JSON lacks).
func FuzzHelmValues(f *testing.F) {
	for _, s := range [][3]string{{"replicas: 3\nimage: {tag: v1}\n", "image.tag", "v2"}, {"a: [1, 2]\n", "a[1]", "x"}, {"", "list[70000]", "x"},
		{"a: &a [*a]\n", "b", "{1,2}"}, {"a: &x {b: 1}\nc: *x\n", "c.b", "2"}, {"- 1\n", "a\\.b", "v"}, {"{", "a[-1]", "x"},
		{"x: !!binary aGk=\n", "a.b.c.d.e", "1,2"}, {"k: .nan\n", "n", "null"}} {
		f.Add([]byte(s[0]), s[1], s[2], false)
	}
	f.Fuzz(func(t *testing.T, data []byte, name, value string, forceString bool) {
		vals := map[string]any{}
		m, err := chartutil.ReadValues(data)
		if err == nil {
			mergeValues(vals, m)
			mergeValues(vals, copyValues(m))
		}
		if !strings.HasPrefix(value, "{") {
			value = strings.ReplaceAll(value, ",", `\,`)
		}
		parse := strvals.ParseInto
		if forceString {
			parse = strvals.ParseIntoString
		}
		_ = parse(name+"="+value, vals)
		if _, err := json.Marshal(vals); err != nil && !strings.Contains(err.Error(), "unsupported value") {
			t.Fatalf("merged values do not encode: %v", err)
		}
	})
}
