package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// billionLaughs returns the classic alias bomb: nine levels of nine, 9^9 strings.
func billionLaughs(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s- &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", indent)
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "%s- &l%d [%s]\n", indent, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 8)+fmt.Sprintf("*l%d", i-1))
	}
	return b.String()
}

// TestYAMLLibraryAliasProtection records what yaml.v3 does on its own: decoding an alias bomb
// into Go values fails, but decoding into a yaml.Node (which Parse needs for lines and order)
// does not expand aliases at all, so the compiler must bound expansion itself.
func TestYAMLLibraryAliasProtection(t *testing.T) {
	doc := "bomb:\n" + billionLaughs("  ")
	var v any
	err := yaml.Unmarshal([]byte(doc), &v)
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("yaml.v3 decoding an alias bomb into any: %v, want an excessive aliasing error", err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Errorf("yaml.v3 decoding into a Node: %v, want no error (aliases stay aliases)", err)
	}
}

// parseQuickly parses and lints src, and fails the test if that takes more than a second of
// CPU time (scaled for the race detector).
func parseQuickly(t *testing.T, src string) error {
	t.Helper()
	limit := time.Second * raceSlowdown
	start := cpuTime()
	_, err := Parse([]byte(src))
	Lint([]byte(src))
	if d := cpuTime() - start; d > limit {
		t.Errorf("Parse and Lint took %v of CPU, want under %v", d, limit)
	}
	return err
}

func TestAliasBombs(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{
			name: "billion laughs in commands",
			src:  "version: '1.0'\nindicators:\n" + billionLaughs("  ") + "steps:\n  a:\n    image: x\n    commands: *l8\n    environment: *l8\n",
			want: "steps.a.commands[0]: is a list: it must be a command string",
		},
		{
			name: "billion laughs as steps",
			src:  "version: '1.0'\nindicators:\n" + billionLaughs("  ") + "steps: *l8\n",
			want: "steps: is a list",
		},
		{
			name: "merge-key bomb",
			src: func() string {
				var b strings.Builder
				b.WriteString("version: '1.0'\nindicators:\n  - &m0 {k: v}\n")
				for i := 1; i < 8; i++ {
					fmt.Fprintf(&b, "  - &m%d {<<: [%s]}\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
				}
				b.WriteString("steps:\n  a:\n    <<: *m7\n    image: x\n")
				return b.String()
			}(),
			want: "the document expands to more than",
		},
		{
			name: "nested step aliases",
			src: func() string {
				var b strings.Builder
				b.WriteString("version: '1.0'\nindicators:\n  - &s0 {image: x, commands: [x]}\n")
				for i := 1; i < 12; i++ {
					fmt.Fprintf(&b, "  - &s%d {type: parallel, steps: {a%d: *s%d, b%d: *s%d}}\n", i, i, i-1, i, i-1)
				}
				b.WriteString("steps:\n  top: *s11\n")
				return b.String()
			}(),
			want: "nested too deeply",
		},
		{
			name: "budget spent before the step's fields",
			src: func() string {
				var b strings.Builder
				b.WriteString("version: '1.0'\nindicators:\n  - &m0 {k: v}\n  - &only [main, /x/]\n")
				for i := 1; i < 8; i++ {
					fmt.Fprintf(&b, "  - &m%d {<<: [%s]}\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
				}
				b.WriteString("steps:\n  a:\n    <<: *m7\n    when: {branch: {only: *only}}\n  b:\n    when: {branch: {only: *only}}\n")
				return b.String()
			}(),
			want: "the document expands to more than",
		},
		{
			name: "self-referencing alias",
			src:  "version: '1.0'\nsteps: &s\n  a: *s\n",
			want: "steps.a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseQuickly(t, tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	t.Run("document size", func(t *testing.T) {
		big := "version: '1.0'\n# " + strings.Repeat("x", MaxDocumentSize) + "\n"
		_, err := Parse([]byte(big))
		if !errors.Is(err, errdefs.ErrTooLarge) {
			t.Fatalf("error %v, want ErrTooLarge", err)
		}
		if is := Lint([]byte(big)); len(is) != 1 || !strings.Contains(is[0].Message, "the limit is 1048576 bytes") {
			t.Errorf("Lint = %v", is)
		}
	})
	t.Run("too many steps", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("version: '1.0'\nsteps:\n")
		for i := 0; i <= MaxSteps; i++ {
			fmt.Fprintf(&b, "  s%d: {image: x, commands: [x]}\n", i)
		}
		err := parseQuickly(t, b.String())
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d: steps.s%d: is one step too many", MaxSteps+3, MaxSteps)) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("deep YAML", func(t *testing.T) {
		src := "version: '1.0'\nindicators: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\nsteps:\n  a: {image: x, commands: [x]}\n"
		if err := parseQuickly(t, src); err == nil {
			t.Fatal("parsed a 20000-deep document")
		}
	})
	t.Run("many problems", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("version: '1.0'\nsteps:\n")
		for i := 0; i < 300; i++ {
			fmt.Fprintf(&b, "  s%d: {image: x, commands: [x], bad: 1}\n", i)
		}
		issues := Lint([]byte(b.String()))
		if len(issues) != maxIssues+1 {
			t.Fatalf("%d issues, want %d", len(issues), maxIssues+1)
		}
		if last := issues[len(issues)-1]; !strings.Contains(last.Message, "too many problems") || last.Line == 0 {
			t.Errorf("last issue %+v, want the truncation notice with a line", last)
		}
	})
}

func TestBadText(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"control character", "version: '1.0'\nsteps:\n  a: {image: x\x01}\n", "line 3: control character U+0001 is not allowed in YAML"},
		{"invalid UTF-8", "version: '1.0'\nsteps:\n  a: {image: \xff}\n", "line 3: byte 0xff is not valid UTF-8"},
		{"NUL", "version: '1.0'\x00", "line 1: control character U+0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			is := Lint([]byte(tt.src))
			if len(is) != 1 || is[0].Column == 0 {
				t.Errorf("Lint = %+v, want one issue with a column", is)
			}
		})
	}
	// Tabs, CR LF line ends, a BOM and non-ASCII text are fine.
	ok := "\ufeffversion: '1.0'\r\nsteps:\r\n  a:\r\n    image: x\t\r\n    commands: [echo héllo ✓]\r\n"
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("Parse: %v", err)
	}
}
