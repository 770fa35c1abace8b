package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("invalid local executor options")

// DefaultPath is the PATH steps get (after the cf_export directory) when Options.Path is empty
// and the runner itself has no PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// DefaultLang is the LANG steps get when the runner has none.
const DefaultLang = "C.UTF-8"

// reservedEnv are variables the executor sets itself; Options.PassEnv cannot name them.
var reservedEnv = []string{"PATH", "HOME", "TMPDIR", executor.VolumePathEnv, ProcessTagEnv}

// Options configures the local executor. The zero value is valid and means the defaults.
type Options struct {
	// Root is the directory in which build directories are made (default: os.TempDir()). It must
	// exist; it should be on a local file system with room for the builds' workspaces.
	Root string
	// KillGrace is how long a stopped step has between SIGTERM and SIGKILL (default
	// executor.DefaultKillGrace).
	KillGrace time.Duration
	// Path is the PATH steps start with, after the directory holding cf_export (default: the
	// runner's own PATH, or DefaultPath when it has none). PATH is not secret, and steps need
	// the tools installed on the host.
	Path string
	// PassEnv names variables of the runner's environment that steps receive as they are (for
	// example SSL_CERT_FILE or HTTPS_PROXY). Nothing else of the runner's environment reaches a
	// step: it may hold the runner's token.
	PassEnv []string
}

// Validate reports every invalid field, naming the field, its value and what is valid.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, value any, valid string) {
		errs = append(errs, fmt.Errorf("%w: %s = %q: %s", ErrInvalidOptions, field, fmt.Sprint(value), valid))
	}
	if o.Root != "" && !filepath.IsAbs(o.Root) {
		bad("Root", o.Root, "must be an absolute path (empty means the system's temporary directory)")
	}
	if o.KillGrace < 0 {
		bad("KillGrace", o.KillGrace, fmt.Sprintf("must not be negative (0 means %s)", executor.DefaultKillGrace))
	}
	if strings.ContainsRune(o.Path, 0) {
		bad("Path", o.Path, "must not contain a NUL byte")
	}
	for i, name := range o.PassEnv {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			bad(fmt.Sprintf("PassEnv[%d]", i), name, "must be a variable name, without '=' or NUL bytes")
		case slices.Contains(reservedEnv, name):
			bad(fmt.Sprintf("PassEnv[%d]", i), name, "is set by the executor; names it sets ("+strings.Join(reservedEnv, ", ")+") cannot be passed (use Path for PATH)")
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of o with zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.Root == "" {
		o.Root = os.TempDir()
	}
	o.Root = filepath.Clean(o.Root)
	if o.KillGrace == 0 {
		o.KillGrace = executor.DefaultKillGrace
	}
	if o.Path == "" {
		o.Path = os.Getenv("PATH")
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	return o
}
