package executor

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseExports feeds arbitrary export files (written by a step, so by the pipeline's
// author or anything the step ran) to ParseExports: it never panics, what it returns are valid,
// distinct names with values of one line, and writing them back as NAME=VALUE lines parses to
// the same variables without an error.
func FuzzParseExports(f *testing.F) {
	for _, s := range []string{"A=1\nB=two words\n", "A=1\r\nA=2\n# c\n\n", "1A=x\n=y\nA\n", "PATH=/bin:/x\nA==b\n", "A=x\r\r\n",
		"A=\"quoted\"\nB='q'\n", "A=1", "\n\n\r\n", "A=\x00\xff\n", "A<<EOF\nx\nEOF\n", "a_b_C9=ok\n_=u\n"} {
		f.Add([]byte(s))
	}
	f.Add(bytes.Repeat([]byte("A=xxxxxxxxxxxxxxx\n"), MaxExportFileSize/18+2))
	f.Fuzz(func(t *testing.T, data []byte) {
		vars, _ := ParseExports(bytes.NewReader(data))
		seen := map[string]bool{}
		var b strings.Builder
		for _, v := range vars {
			if !validExportName([]byte(v.Name)) || seen[v.Name] {
				t.Fatalf("returned name %q (seen before: %v)", v.Name, seen[v.Name])
			}
			seen[v.Name] = true
			if strings.Contains(v.Value, "\n") {
				t.Fatalf("%s's value %q holds a newline", v.Name, v.Value)
			}
			if len(v.Value) > MaxExportFileSize {
				t.Fatalf("%s's value is %d bytes", v.Name, len(v.Value))
			}
			b.WriteString(v.Name + "=" + v.Value + "\n")
		}
		if b.Len() > MaxExportFileSize {
			return
		}
		again, err := ParseExports(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("variables written back do not parse: %v\n%q", err, b.String())
		}
		if len(again) != len(vars) {
			t.Fatalf("round trip: %d variables, then %d", len(vars), len(again))
		}
		for i := range vars {
			if again[i] != vars[i] {
				t.Fatalf("round trip changed %+v into %+v", vars[i], again[i])
			}
		}
	})
}
