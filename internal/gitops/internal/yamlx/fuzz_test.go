package yamlx_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

// FuzzSplitConvert feeds arbitrary YAML streams (manifests, Applications and values files from
// git) through SplitDocuments and ToValue: nothing panics, every error is a *yamlx.Error, the
// limits hold (no alias bomb or nesting gets through), and every converted value is JSON that
// converts back to itself.
func FuzzSplitConvert(f *testing.F) {
	for _, s := range []string{"a: 1\n---\nb: [1, 2.5, true, null, x]\n", "---\n---\n# only comments\n", "a: &a [1]\nb: *a\nc: {<<: {d: 1}, e: 2}\n",
		"a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d]\n",
		"a: 1\na: 2\n", "? [a]\n: 1\n", strings.Repeat("[", 200) + strings.Repeat("]", 200), "x: !!binary aGVsbG8=\n",
		"n: .nan\ni: .inf\nh: 0x1F\no: 0o17\nbig: 123456789012345678901234567890\n", "\xef\xbb\xbfkind: List\n", "a: 'unterminated\n",
		"<<: *undefined\n", "a: !custom 3\n", "t: 2001-12-14t21:59:43.10-05:00\n", "{\"a\": [1, {\"b\": null}]}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := yamlx.SplitDocuments(data)
		if err != nil {
			var ye *yamlx.Error
			if !errors.As(err, &ye) {
				t.Fatalf("SplitDocuments error %T %v is not a *yamlx.Error", err, err)
			}
			return
		}
		for _, d := range docs {
			v, err := yamlx.ToValue(d.Node)
			if err != nil {
				var ye *yamlx.Error
				if !errors.As(err, &ye) {
					t.Fatalf("ToValue error %T %v is not a *yamlx.Error", err, err)
				}
				continue
			}
			j, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("converted value %#v is not JSON: %v", v, err)
			}
			back, err := yamlx.SplitDocuments(j)
			if err != nil || len(back) != 1 {
				t.Fatalf("JSON %s of a converted document does not split back: %v", j, err)
			}
			v2, err := yamlx.ToValue(back[0].Node)
			if err != nil {
				t.Fatalf("JSON %s of a converted document does not convert back: %v", j, err)
			}
			if j2, _ := json.Marshal(v2); !bytes.Equal(j, j2) {
				t.Fatalf("round trip changed the value:\n%s\n%s", j, j2)
			}
		}
	})
}
