package executor

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Validate reports every reason the step cannot be run, each wrapping ErrInvalidStep (and
// errdefs.ErrInvalid, with the field named). Executors call it before starting anything.
func (s Step) Validate() error {
	var errs []error
	bad := func(field, value, reason string) {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidStep, errdefs.Invalid(field, value, reason)))
	}
	if s.Timeout < 0 {
		bad("timeout", s.Timeout.String(), "must not be negative (0 means no limit)")
	}
	if s.Shell != "" && strings.ContainsAny(s.Shell, " \t\n\x00") {
		bad("shell", s.Shell, "must be a program name or an absolute path, without arguments (use the entry point for an interpreter with options)")
	}
	if len(s.EntryPoint) > 0 && s.EntryPoint[0] == "" {
		bad("entry_point[0]", "", "must name a program")
	}
	for i, a := range s.EntryPoint {
		if strings.ContainsRune(a, 0) {
			bad(fmt.Sprintf("entry_point[%d]", i), a, "must not contain a NUL byte")
		}
	}
	for i, a := range s.Cmd {
		if strings.ContainsRune(a, 0) {
			bad(fmt.Sprintf("cmd[%d]", i), a, "must not contain a NUL byte")
		}
	}
	switch s.PullPolicy {
	case "", PullAlways, PullIfNotPresent, PullNever:
	default:
		bad("pull_policy", s.PullPolicy, "must be Always, IfNotPresent or Never")
	}
	for i, c := range s.Commands {
		if strings.ContainsRune(c, 0) {
			bad(fmt.Sprintf("commands[%d]", i), c, "must not contain a NUL byte")
		}
	}
	for i, e := range s.Env {
		if !validEnvName(e.Name) {
			bad(fmt.Sprintf("environment[%d].name", i), e.Name, "must be non-empty, without '=' or NUL bytes")
		}
		if strings.ContainsRune(e.Value, 0) {
			bad(fmt.Sprintf("environment[%d].value", i), e.Name, "must not contain a NUL byte")
		}
	}
	if _, _, err := ResolveWorkingDir("/workspace", s.WorkingDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ShellOrDefault returns Shell, or DefaultShell when it is empty.
func (s Step) ShellOrDefault() string {
	if s.Shell == "" {
		return DefaultShell
	}
	return s.Shell
}

// Script returns the shell script the step's commands become: `set -e`, then each command on its
// own line(s), in order. A command may span several lines (a YAML block); it is not quoted or
// changed. With `set -e` the script stops at the first command that fails (with the usual shell
// exceptions: a command in an if/while condition, or in a && / || list, or the non-last command of
// a pipeline). Script returns "" for a step without commands.
func (s Step) Script() string {
	if len(s.Commands) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, c := range s.Commands {
		b.WriteString(c)
		b.WriteByte('\n')
	}
	return b.String()
}

// Command returns the step's command line, given where the executor stored Script: Shell and the
// script; or EntryPoint followed by the script; or, without commands, EntryPoint followed by Cmd
// (nil when the step has neither: the image's default command).
func (s Step) Command(scriptPath string) []string {
	switch {
	case len(s.Commands) == 0:
		return append(slices.Clone(s.EntryPoint), s.Cmd...)
	case len(s.EntryPoint) > 0:
		return append(slices.Clone(s.EntryPoint), scriptPath)
	default:
		return []string{s.ShellOrDefault(), scriptPath}
	}
}

// ResolveWorkingDir returns the directory a step with working directory wd starts in, for a
// workspace seen by steps at volumePath, and whether that directory is inside the workspace.
// Empty means volumePath; a relative path is taken inside the workspace and must not leave it
// (ErrInvalidStep); an absolute path is used as is (cleaned). Paths use forward slashes: steps run
// on Linux.
func ResolveWorkingDir(volumePath, wd string) (dir string, inWorkspace bool, err error) {
	if strings.ContainsRune(wd, 0) {
		return "", false, fmt.Errorf("%w: %w", ErrInvalidStep, errdefs.Invalid("working_directory", wd, "must not contain a NUL byte"))
	}
	root := path.Clean(volumePath)
	if wd == "" {
		return root, true, nil
	}
	if path.IsAbs(wd) {
		dir = path.Clean(wd)
		return dir, dir == root || strings.HasPrefix(dir, root+"/"), nil
	}
	rel := path.Clean(wd)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false, fmt.Errorf("%w: %w", ErrInvalidStep, errdefs.Invalid("working_directory", wd,
			"a relative working directory must stay inside the workspace (CF_VOLUME_PATH); use an absolute path for a directory elsewhere"))
	}
	return path.Join(root, rel), true, nil
}

// MergeEnv returns the environment of a step: base (the executor's own variables), then the
// step's Env, then fixed (variables the step must not override, such as VolumePathEnv). A later
// variable overrides an earlier one of the same name and keeps the earlier one's position.
func MergeEnv(base, step []EnvVar, fixed ...EnvVar) []EnvVar {
	out := make([]EnvVar, 0, len(base)+len(step)+len(fixed))
	index := make(map[string]int, cap(out))
	for _, list := range [][]EnvVar{base, step, fixed} {
		for _, e := range list {
			if i, ok := index[e.Name]; ok {
				out[i].Value = e.Value
				continue
			}
			index[e.Name] = len(out)
			out = append(out, e)
		}
	}
	return out
}

// Environ formats vars as NAME=VALUE strings, as exec.Cmd.Env takes them.
func Environ(vars []EnvVar) []string {
	out := make([]string, len(vars))
	for i, e := range vars {
		out[i] = e.Name + "=" + e.Value
	}
	return out
}

func validEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}
