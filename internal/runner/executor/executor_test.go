package executor

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestStepValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		step   Step
		fields []string // fields named in the error; none when valid
	}{
		{"minimal", Step{Commands: []string{"true"}}, nil},
		{"full", Step{Name: "s", Image: "alpine", Commands: []string{"make"}, Shell: "/bin/bash", EntryPoint: []string{"bash", "-x"},
			WorkingDir: "src/app", Env: []EnvVar{{Name: "A", Value: ""}, {Name: "lower.dotted", Value: "x"}}, Timeout: time.Minute}, nil},
		{"absolute working dir", Step{WorkingDir: "/src"}, nil},
		{"negative timeout", Step{Timeout: -1}, []string{"timeout"}},
		{"shell with arguments", Step{Shell: "bash -e"}, []string{"shell"}},
		{"empty entry point program", Step{EntryPoint: []string{""}}, []string{"entry_point[0]"}},
		{"NUL in command", Step{Commands: []string{"ok", "a\x00b"}}, []string{"commands[1]"}},
		{"bad env names", Step{Env: []EnvVar{{Name: "OK"}, {Name: ""}, {Name: "A=B"}}}, []string{"environment[1].name", "environment[2].name"}},
		{"escaping working dir", Step{WorkingDir: "a/../../b"}, []string{"working_directory"}},
		{"several", Step{Timeout: -1, WorkingDir: ".."}, []string{"timeout", "working_directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.step.Validate()
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidStep) || !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalidStep and errdefs.ErrInvalid", err)
			}
			for _, f := range tc.fields {
				if !strings.Contains(err.Error(), f+": ") {
					t.Errorf("Validate() = %v, want it to name %s", err, f)
				}
			}
		})
	}
}

func TestScriptAndCommand(t *testing.T) {
	s := Step{Commands: []string{"echo a", "for i in 1 2; do\n  echo $i\ndone"}}
	if got, want := s.Script(), "set -e\necho a\nfor i in 1 2; do\n  echo $i\ndone\n"; got != want {
		t.Errorf("Script() = %q, want %q", got, want)
	}
	if got := (Step{}).Script(); got != "" {
		t.Errorf("Script() without commands = %q", got)
	}
	for _, tc := range []struct {
		step Step
		want []string
	}{
		{Step{Commands: []string{"x"}}, []string{"sh", "/s.sh"}},
		{Step{Commands: []string{"x"}, Shell: "bash"}, []string{"bash", "/s.sh"}},
		{Step{Commands: []string{"x"}, Shell: "bash", EntryPoint: []string{"python3", "-u"}}, []string{"python3", "-u", "/s.sh"}},
		{Step{EntryPoint: []string{"make", "test"}}, []string{"make", "test"}},
		{Step{}, nil},
	} {
		if got := tc.step.Command("/s.sh"); !slices.Equal(got, tc.want) {
			t.Errorf("%+v.Command() = %q, want %q", tc.step, got, tc.want)
		}
	}
	ep := make([]string, 1, 2) // room for an append that would write into the caller's array
	ep[0] = "a"
	cmd := Step{Commands: []string{"x"}, EntryPoint: ep}.Command("/s")
	cmd[0] = "changed"
	if ep[0] != "a" || ep[:2][1] != "" {
		t.Errorf("Command() shares its array with Step.EntryPoint: %q", ep[:2])
	}
}

func TestResolveWorkingDir(t *testing.T) {
	for _, tc := range []struct {
		wd, dir string
		in      bool
		invalid bool
	}{
		{"", "/ws", true, false},
		{".", "/ws", true, false},
		{"a/b/", "/ws/a/b", true, false},
		{"a/../b", "/ws/b", true, false},
		{"/ws/x", "/ws/x", true, false},
		{"/ws", "/ws", true, false},
		{"/wsx", "/wsx", false, false},
		{"/etc/../src", "/src", false, false},
		{"..", "", false, true},
		{"../ws2", "", false, true},
		{"a/../../b", "", false, true},
	} {
		dir, in, err := ResolveWorkingDir("/ws/", tc.wd)
		if tc.invalid {
			if !errors.Is(err, ErrInvalidStep) {
				t.Errorf("%q: err = %v, want ErrInvalidStep", tc.wd, err)
			}
			continue
		}
		if err != nil || dir != tc.dir || in != tc.in {
			t.Errorf("%q: = %q, %v, %v; want %q, %v", tc.wd, dir, in, err, tc.dir, tc.in)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv(
		[]EnvVar{{"PATH", "/bin"}, {"HOME", "/h"}},
		[]EnvVar{{"A", "1"}, {"PATH", "/mine"}, {"A", "2"}, {VolumePathEnv, "/nope"}},
		EnvVar{VolumePathEnv, "/ws"})
	want := []EnvVar{{"PATH", "/mine"}, {"HOME", "/h"}, {"A", "2"}, {VolumePathEnv, "/ws"}}
	if !slices.Equal(got, want) {
		t.Errorf("MergeEnv = %v, want %v", got, want)
	}
	if env := Environ(want); !slices.Equal(env, []string{"PATH=/mine", "HOME=/h", "A=2", VolumePathEnv + "=/ws"}) {
		t.Errorf("Environ = %q", env)
	}
}

func TestParseExports(t *testing.T) {
	in := "A=1\n\n# comment\nB=two words\r\nC=x=y\nA=3\nbad line\n9X=1\n=v\nD=\nE=last line without newline"
	vars, err := ParseExports(strings.NewReader(in))
	want := []EnvVar{{"A", "3"}, {"B", "two words"}, {"C", "x=y"}, {"D", ""}, {"E", "last line without newline"}}
	if !slices.Equal(vars, want) {
		t.Errorf("vars = %v, want %v", vars, want)
	}
	if err == nil {
		t.Fatal("no error for the bad lines")
	}
	for _, line := range []string{"line 7", "line 8", "line 9"} {
		if !strings.Contains(err.Error(), line) {
			t.Errorf("error %q does not name %s", err, line)
		}
	}
	if vars, err := ParseExports(strings.NewReader("")); err != nil || len(vars) != 0 {
		t.Errorf("empty file: %v, %v", vars, err)
	}
	huge := strings.Repeat("A", MaxExportFileSize)
	vars, err = ParseExports(strings.NewReader("B=1\nX=" + huge + "\nC=2\n"))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file larger than MaxExportFileSize: err = %v", err)
	}
	if !slices.Equal(vars, []EnvVar{{"B", "1"}}) {
		t.Errorf("a file larger than MaxExportFileSize: vars = %v, want B=1 only (X is cut)", vars)
	}
}

func TestCFExportScriptWritesExportFile(t *testing.T) {
	if !strings.Contains(CFExportScript, `/`+ExportFile+`"`) {
		t.Errorf("CFExportScript does not write to %s", ExportFile)
	}
	if !strings.HasPrefix(CFExportScript, "#!/bin/sh\n") {
		t.Error("CFExportScript does not start with #!/bin/sh")
	}
}

func TestResultSucceeded(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want bool
	}{
		{Result{}, true},
		{Result{ExitCode: 1}, false},
		{Result{TimedOut: true}, false},
		{Result{Canceled: true}, false},
		{Result{ImageIgnored: true}, true},
	} {
		if got := tc.r.Succeeded(); got != tc.want {
			t.Errorf("%+v.Succeeded() = %v", tc.r, got)
		}
	}
}
