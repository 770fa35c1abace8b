package spec

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestParseExports(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		masked  []string
		wantErr string
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "pairs", in: "A=1\nB=two words\nC=\n", want: map[string]string{"A": "1", "B": "two words", "C": ""}},
		{name: "value kept byte for byte", in: "A=\"quoted\" = x\r\nB= lead\n", want: map[string]string{"A": "\"quoted\" = x\r", "B": " lead"}},
		{name: "later wins", in: "A=1\nA=2\n", want: map[string]string{"A": "2"}},
		{name: "comments and blank lines", in: "# comment\n\nA=1\n", want: map[string]string{"A": "1"}},
		{name: "multi-line", in: "CERT<<EOF\nline 1\n\nline 3\nEOF\nB=2\n", want: map[string]string{"CERT": "line 1\n\nline 3", "B": "2"}},
		{name: "multi-line empty", in: "A<<X\nX\n", want: map[string]string{"A": ""}},
		{name: "heredoc with = in value line", in: "A<<EOF\nB=1\nEOF\n", want: map[string]string{"A": "B=1"}},
		{name: "value with <<", in: "A=x<<y\n", want: map[string]string{"A": "x<<y"}},
		{name: "no final newline", in: "A=1", want: map[string]string{"A": "1"}},
		{name: "mask", in: "#cf_export:mask TOKEN\nTOKEN=s3cret\n#cf_export:mask TOKEN\n", want: map[string]string{"TOKEN": "s3cret"}, masked: []string{"TOKEN"}},
		{name: "bad name", in: "A=1\n1BAD=x\n", wantErr: `env_vars_to_export line 2: cf_export: "1BAD" is not a valid variable name`},
		{name: "bad name chars", in: "MY-VAR=x\n", wantErr: `"MY-VAR" is not a valid variable name`},
		{name: "built-in", in: "CF_BRANCH=x\n", wantErr: `line 1: cf_export: "CF_BRANCH" is a built-in variable and cannot be exported`},
		{name: "no equals", in: "A=1\nJUSTANAME\n", wantErr: `line 2: cf_export: "JUSTANAME" is not NAME=VALUE or NAME<<DELIMITER`},
		{name: "empty name", in: "=x\n", wantErr: `is not NAME=VALUE`},
		{name: "unclosed heredoc", in: "A<<EOF\nx\n", wantErr: `line 1: cf_export: "EOF" (the delimiter of A) never appears on a line of its own`},
		{name: "heredoc without delimiter", in: "A<<\n", wantErr: `has no delimiter`},
		{name: "bad mask name", in: "#cf_export:mask 9x\n", wantErr: `"9x" is not a valid variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := ParseExportFile(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if !errors.Is(err, errdefs.ErrInvalid) {
					t.Errorf("error does not wrap errdefs.ErrInvalid")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(ex.Values, tt.want) {
				t.Errorf("values = %q, want %q", ex.Values, tt.want)
			}
			if !slices.Equal(ex.Masked, tt.masked) {
				t.Errorf("masked = %q, want %q", ex.Masked, tt.masked)
			}
			vals, err := ParseExports(strings.NewReader(tt.in))
			if err != nil || !maps.Equal(vals, tt.want) {
				t.Errorf("ParseExports = %q, %v", vals, err)
			}
		})
	}
}

func TestParseExportsTooLarge(t *testing.T) {
	big := strings.Repeat("A=1234567\n", MaxExportFileSize/10+1)
	if _, err := ParseExports(strings.NewReader(big)); !errors.Is(err, errdefs.ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
}

// TestExportShellFunction runs the cf_export shell function in the shells a step may have and
// reads what it wrote with ParseExportFile: the two halves of the contract must agree.
func TestExportShellFunction(t *testing.T) {
	shells := []string{"sh", "bash", "dash", "busybox"}
	ran := 0
	for _, sh := range shells {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		ran++
		t.Run(sh, func(t *testing.T) {
			dir := t.TempDir()
			script := ExportShellFunction() + `
set -e
export EXISTING='from the env'
cf_export A=1 'B=two words' C= "MULTI=line 1
line 2
CF_EOF
end"
cf_export EXISTING
cf_export --mask TOKEN=s3cret
cf_export 'Q=it'"'"'s "quoted" $HOME'
if cf_export 1BAD=x 2>/dev/null; then echo "accepted a bad name"; exit 1; fi
if cf_export CF_BRANCH=x 2>/dev/null; then echo "accepted a built-in"; exit 1; fi
if cf_export --force A=1 2>/dev/null; then echo "accepted an unknown option"; exit 1; fi
`
			args := []string{"-c", script}
			if sh == "busybox" {
				args = append([]string{"sh"}, args...)
			}
			cmd := exec.Command(path, args...)
			cmd.Env = append(os.Environ(), "CF_VOLUME_PATH="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", sh, err, out)
			}
			f, err := os.Open(filepath.Join(dir, ExportFileName))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ex, err := ParseExportFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"A": "1", "B": "two words", "C": "", "MULTI": "line 1\nline 2\nCF_EOF\nend",
				"EXISTING": "from the env", "TOKEN": "s3cret", "Q": `it's "quoted" $HOME`,
			}
			if !maps.Equal(ex.Values, want) {
				t.Errorf("exported %q, want %q", ex.Values, want)
			}
			if !slices.Equal(ex.Masked, []string{"TOKEN"}) {
				t.Errorf("masked %q, want [TOKEN]", ex.Masked)
			}
		})
	}
	if ran == 0 {
		t.Skip("no POSIX shell found")
	}
}

// TestExportScript installs cf_export as an executable on PATH, the other way a runner may
// provide it, and calls it from a shell.
func TestExportScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir, bin := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "cf_export"), []byte(ExportScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `set -e
cf_export A=1 "B=x y"
if cf_export 9=x 2>/dev/null; then exit 1; fi`)
	cmd.Env = append(os.Environ(), "CF_VOLUME_PATH="+dir, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, ExportFileName))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := ParseExports(strings.NewReader(string(data)))
	if err != nil || !maps.Equal(vals, map[string]string{"A": "1", "B": "x y"}) {
		t.Errorf("exports = %q, %v", vals, err)
	}
}
