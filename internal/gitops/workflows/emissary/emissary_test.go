package emissary

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs a real command under the emissary: its stdout passes through and becomes the
// result, an output parameter's file is read, a missing one is named, the exit code is the
// command's.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	term := filepath.Join(dir, "termination-log")
	t.Setenv(EnvTerminationPath, term)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"run", "--result", "--param", "p=" + filepath.Join(dir, "p"), "--param", "gone=" + filepath.Join(dir, "none"), "--",
		"sh", "-c", `echo hello; echo "value 1" > "$0"; exit 3`, filepath.Join(dir, "p")}, strings.NewReader(""), &stdout, &stderr)
	if code != 3 || stdout.String() != "hello\n" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(term)
	if err != nil {
		t.Fatal(err)
	}
	var out Outputs
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if *out.Result != "hello" || out.Parameters["p"] != "value 1" || !strings.Contains(out.Errors["gone"], "no such file") {
		t.Fatalf("outputs %s", b)
	}
}

func TestRunTooMuchOutput(t *testing.T) {
	term := filepath.Join(t.TempDir(), "termination-log")
	t.Setenv(EnvTerminationPath, term)
	var stdout bytes.Buffer
	p := filepath.Join(t.TempDir(), "p")
	if code := Main([]string{"run", "--result", "--param", "p=" + p, "--", "sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x; echo small > " + p}, strings.NewReader(""), &stdout, &bytes.Buffer{}); code != 0 {
		t.Fatalf("code %d", code)
	}
	b, _ := os.ReadFile(term)
	var out Outputs
	_ = json.Unmarshal(b, &out)
	// The long stdout is dropped as the result; the parameter is kept.
	if len(b) > MaxMessage || out.Result != nil || out.Parameters["p"] != "small" || !strings.Contains(out.Error, "too long to be the result") {
		t.Fatalf("%d bytes: %.300s", len(b), b)
	}
}

func TestInitCopiesItself(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "freshet")
	if code := Main([]string{"init", dest}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatal(code)
	}
	if st, err := os.Stat(dest); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%v %v", st, err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"run"}, {"run", "--"}, {"run", "--param", "x", "--", "true"}, {"what"}} {
		if code := Main(args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("%q: code %d", args, code)
		}
	}
}
