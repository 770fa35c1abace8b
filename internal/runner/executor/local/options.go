package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

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
	// Isolation is how steps are kept from the runner's host (default IsolationNone). See
	// Isolation's values and docs/executors.md.
	Isolation Isolation
	// User is the user steps run as with IsolationUser: a name, a UID, or UID:GID (default:
	// the user DefaultUser when /etc/passwd has it, else DefaultUID:DefaultGID). It must not be
	// root or the runner's own user.
	User string
	// Hide lists absolute paths that isolated steps must not see: each directory is covered by
	// an empty file system, each file by /dev/null (Root is always hidden, but for the step's own
	// build directory). `freshet up` hides its data dir.
	Hide []string
}

// Isolation is how the local executor keeps a step from the runner's host.
type Isolation string

// The isolation modes.
const (
	// IsolationNone runs steps as the runner's own user, seeing what it sees: for trusted
	// pipelines only. The zero value means it.
	IsolationNone Isolation = "none"
	// IsolationUser (the runner must be root) runs each step as an unprivileged user of its own
	// (Options.User, no supplementary groups), in new mount and PID namespaces: the step sees
	// no other process, not Root beyond its own build, not Options.Hide, and gets an empty /tmp.
	IsolationUser Isolation = "user"
	// IsolationNamespaces (the runner must not be root) runs each step as the runner's user in
	// new user, mount and PID namespaces: as IsolationUser, and the runner's home directory
	// is hidden too. It needs unprivileged user namespaces.
	IsolationNamespaces Isolation = "namespaces"
	// IsolationAuto is IsolationUser when the runner is root, IsolationNamespaces otherwise.
	IsolationAuto Isolation = "auto"
)

// isolations are the valid values of Options.Isolation (besides "").
var isolations = []Isolation{IsolationNone, IsolationUser, IsolationNamespaces, IsolationAuto}

// BindFlags registers the flags of the options `freshet runner` exposes (Root is --work-dir,
// registered by the runner).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.Var((*isolationFlag)(&o.Isolation), "isolation", "how the local executor isolates steps from this host: none (steps run as this user and see what it sees), "+
		"user (as root: each step as an unprivileged user in its own mount and PID namespaces), namespaces (as another user: in unprivileged user namespaces) or auto (user as root, else namespaces)")
	fs.StringVar(&o.User, "build-user", "", "with --isolation user: the user steps run as, NAME, UID or UID:GID (default: "+DefaultUser+" if it exists, else "+
		fmt.Sprintf("%d:%d", DefaultUID, DefaultGID)+")")
	fs.StringSliceVar(&o.Hide, "hide-path", nil, "with --isolation: an absolute path isolated steps must not see (repeatable; the work dir is always hidden)")
}

// isolationFlag is Options.Isolation as a flag value.
type isolationFlag Isolation

func (f *isolationFlag) String() string {
	if *f == "" {
		return string(IsolationNone)
	}
	return string(*f)
}

func (f *isolationFlag) Set(s string) error {
	if !slices.Contains(isolations, Isolation(s)) {
		return fmt.Errorf("%q is not one of %s", s, isolationNames())
	}
	*f = isolationFlag(s)
	return nil
}

func (f *isolationFlag) Type() string { return "mode" }

func isolationNames() string {
	names := make([]string, len(isolations))
	for i, m := range isolations {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
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
	if o.Isolation != "" && !slices.Contains(isolations, o.Isolation) {
		bad("Isolation", o.Isolation, "must be one of "+isolationNames()+" (empty means none)")
	}
	if o.User != "" {
		if _, _, _, err := parseUser(o.User); err != nil {
			bad("User", o.User, err.Error())
		}
	}
	for i, p := range o.Hide {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
			bad(fmt.Sprintf("Hide[%d]", i), p, "must be an absolute path other than /")
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
	if o.Isolation == "" {
		o.Isolation = IsolationNone
	}
	return o
}
