package spec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzParseExportFile feeds arbitrary cf_export files to ParseExportFile: it never panics, a
// refusal is invalid input naming "cf_export" (or too large), what is accepted has valid names,
// and writing it back (NAME=VALUE, NAME<<DELIM for multi-line values, the mask directives)
// parses to the same values and masks.
func FuzzParseExportFile(f *testing.F) {
	for _, s := range []string{"A=1\nB=two words\n", "A=1\r\nA=2\n# c\n\n", "1A=x\n", "A<<EOF\nx\ny\nEOF\nB=z\n", "A<<EOF\nx\n",
		"#cf_export:mask A\nA=s3cret\n", "#cf_export:mask 9\n", "A<<\n", "A<<B=C\nq\nB=C\n", "CF_BRANCH=x\n", "A=<<x\n", "<<X\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ex, err := ParseExportFile(strings.NewReader(string(data)))
		if err != nil {
			if !errors.Is(err, errdefs.ErrTooLarge) && (!errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "cf_export") {
				t.Fatalf("error %v is neither too large nor invalid cf_export", err)
			}
			return
		}
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(ex.Values)) {
			if checkExportName(name) != nil {
				t.Fatalf("accepted name %q", name)
			}
			v := ex.Values[name]
			if !strings.Contains(v, "\n") { // a name holds no '<': "=" comes before any "<<"
				fmt.Fprintf(&b, "%s=%s\n", name, v)
				continue
			}
			delim := "EOF"
			for i := 0; slices.Contains(strings.Split(v, "\n"), delim); i++ {
				delim = fmt.Sprintf("EOF%d", i)
			}
			fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", name, delim, v, delim)
		}
		for _, name := range ex.Masked {
			if checkExportName(name) != nil {
				t.Fatalf("accepted mask name %q", name)
			}
			fmt.Fprintf(&b, "%s%s\n", maskDirective, name)
		}
		again, err := ParseExportFile(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("written back, %q does not parse: %v", b.String(), err)
		}
		if !maps.Equal(again.Values, ex.Values) || !slices.Equal(again.Masked, ex.Masked) {
			t.Fatalf("round trip changed %+v into %+v", ex, again)
		}
	})
}
