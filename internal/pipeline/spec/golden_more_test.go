package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestGoldenExports parses every testdata/exports/*.txt as an export file and compares the
// result (or, for bad_*.txt, the error) with the .golden file next to it.
func TestGoldenExports(t *testing.T) {
	files, _ := filepath.Glob("testdata/exports/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata/exports/*.txt")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := ParseExportFile(bytes.NewReader(data))
			var got []byte
			if strings.HasPrefix(name, "bad_") {
				if err == nil {
					t.Fatal("parsed, want an error")
				}
				got = []byte(err.Error() + "\n")
			} else {
				if err != nil {
					t.Fatal(err)
				}
				got = marshal(t, ex)
			}
			compareGolden(t, strings.TrimSuffix(f, ".txt")+".golden", got)
		})
	}
}

// TestGoldenInterpolation interpolates every string of the interpolation.yml plan with a fixed
// set of variables, as a runner does when a step starts.
func TestGoldenInterpolation(t *testing.T) {
	data, err := os.ReadFile("testdata/interpolation.yml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"CF_BRANCH":                "feature/login",
		"CF_BRANCH_TAG_NORMALIZED": BranchTagNormalized("feature/login"),
		"CF_SHORT_REVISION":        ShortRevision("0123456789abcdef0123456789abcdef01234567"),
		"CF_VOLUME_PATH":           "/workspace",
		"CF_REPO_NAME":             "api",
		"steps.build.imageId":      "sha256:0b1c",
	}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	var lines []string
	p.Walk(func(s *Step) bool {
		for _, c := range s.Commands {
			lines = append(lines, s.Name+" command: "+Interpolate(c, lookup))
		}
		for _, e := range s.Env {
			lines = append(lines, s.Name+" env: "+e.Name+"="+Interpolate(e.Value, lookup))
		}
		lines = append(lines, s.Name+" working directory: "+Interpolate(s.WorkingDir, lookup))
		return true
	})
	var names []string
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# variables:\n")
	for _, n := range names {
		b.WriteString("#   " + n + "=" + vars[n] + "\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	compareGolden(t, "testdata/interpolation.interpolated.golden", []byte(b.String()))
}

func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update and review the diff)\n--- got:\n%s\n--- want:\n%s", golden, got, want)
	}
}
