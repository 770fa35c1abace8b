package spec

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStepFixtures runs every fixture under testdata/steps/<step type>/, written from
// Codefresh's published step documentation, with typed plugin steps resolved in
// testdata/catalog. valid_*.yml must compile without an error
// (warnings allowed). invalid_*.yml lists its expected errors in "# want: FIELD: FRAGMENT"
// comments: each must be reported as an error on FIELD whose message contains FRAGMENT, with a
// line, and no other error may be reported.
func TestStepFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/steps/*/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	perType := map[string][2]int{}
	for _, f := range files {
		typ := filepath.Base(filepath.Dir(f))
		name := strings.TrimSuffix(filepath.Base(f), ".yml")
		n := perType[typ]
		t.Run(typ+"/"+name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{StepTypes: testCatalog{}}
			var errs []Issue
			for _, is := range LintWith(data, opts) {
				if is.Severity == SeverityError {
					errs = append(errs, is)
				}
			}
			_, perr := ParseWith(data, opts)
			if (perr == nil) != (len(errs) == 0) {
				t.Fatalf("Parse error %v disagrees with Lint's errors %v", perr, errs)
			}
			switch {
			case strings.HasPrefix(name, "valid_"):
				if len(errs) > 0 {
					t.Fatalf("valid fixture has errors:\n%s", issuesText(errs))
				}
			case strings.HasPrefix(name, "invalid_"):
				wants := fixtureWants(t, data)
				if len(wants) == 0 {
					t.Fatal("invalid fixture has no # want: lines")
				}
				matched := make([]bool, len(errs))
				for _, w := range wants {
					found := false
					for i, is := range errs {
						if is.Field == w[0] && strings.Contains(is.Message, w[1]) && is.Line > 0 {
							matched[i], found = true, true
						}
					}
					if !found {
						t.Errorf("no error on %s containing %q; got:\n%s", w[0], w[1], issuesText(errs))
					}
				}
				for i, ok := range matched {
					if !ok {
						t.Errorf("unexpected error: %s", errs[i])
					}
				}
			default:
				t.Fatal("a fixture is named valid_*.yml or invalid_*.yml")
			}
		})
		if strings.HasPrefix(name, "valid_") {
			n[0]++
		} else {
			n[1]++
		}
		perType[typ] = n
	}
	for _, typ := range stepTypes {
		if n := perType[string(typ)]; n[0] < 1 || n[1] < 3 {
			t.Errorf("step type %s has %d valid and %d invalid fixtures: want at least 1 and 3", typ, n[0], n[1])
		}
	}
}

// testCatalog is the step catalogue of testdata/catalog, read as the control plane reads a
// catalogue's git repository.
type testCatalog struct{}

func (testCatalog) StepType(name, version string) (*StepTypeDef, error) {
	def, _, err := ReadStepType(name, version, func(p string) ([]byte, bool, error) {
		data, err := os.ReadFile(filepath.Join("testdata/catalog", filepath.FromSlash(p)))
		if os.IsNotExist(err) {
			return nil, false, nil
		}
		return data, err == nil, err
	})
	return def, err
}

// fixtureWants reads the "# want: FIELD: FRAGMENT" comments of a fixture.
func fixtureWants(t *testing.T, data []byte) [][2]string {
	t.Helper()
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "# want: ")
		if !ok {
			continue
		}
		field, frag, ok := strings.Cut(rest, ": ")
		if !ok {
			t.Fatalf("bad want line %q: write # want: FIELD: FRAGMENT", sc.Text())
		}
		out = append(out, [2]string{field, frag})
	}
	return out
}
