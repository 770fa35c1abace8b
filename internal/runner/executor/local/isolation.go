package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrIsolationUnavailable is wrapped by New's error when the isolation asked for cannot be had
// on this host; the message says why and what would enable it.
var ErrIsolationUnavailable = errors.New("steps cannot be isolated on this host")

// The user IsolationUser runs steps as by default.
const (
	// DefaultUser is used when /etc/passwd has it (an operator who wants a named user creates
	// it: useradd --system --no-create-home --shell /usr/sbin/nologin freshet-build).
	DefaultUser = "freshet-build"
	// DefaultUID and DefaultGID are used when there is no DefaultUser: an ID that no account of
	// the host has (New checks), so that nothing on the host belongs to it, no group lists it
	// and no sudo rule names it. It lies above the login range (1000–59999), below systemd's
	// dynamic users (61184–65519) and under 65536 (tar's and NFSv3's limits). Inside the step's
	// mount namespace /etc/passwd and /etc/group gain an entry for it, so that tools that look
	// the user up (ssh, git without user.name, whoami) work without an account on the host.
	DefaultUID = 61000
	DefaultGID = 61000
)

// scratchDirs get an empty, writable tmpfs in every isolated step: other users' and other
// builds' temporary files are not the step's business (TMPDIR, in the build directory, is what
// a build's steps share).
var scratchDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// parseUser parses Options.User: NAME, UID or UID:GID (GID defaults to UID). It refuses root.
func parseUser(s string) (name string, uid, gid int, err error) {
	u, g, hasGID := strings.Cut(s, ":")
	id, uerr := strconv.Atoi(u)
	switch {
	case uerr != nil && hasGID:
		return "", 0, 0, errors.New("must be NAME, UID or UID:GID")
	case uerr != nil:
		if u == "" || strings.ContainsAny(u, " \t\n/") {
			return "", 0, 0, errors.New("must be NAME, UID or UID:GID")
		}
		return u, 0, 0, nil
	}
	uid, gid = id, id
	if hasGID {
		if gid, err = strconv.Atoi(g); err != nil {
			return "", 0, 0, errors.New("must be NAME, UID or UID:GID")
		}
	}
	if uid <= 0 || gid <= 0 || uid >= 1<<31 || gid >= 1<<31 {
		return "", 0, 0, errors.New("the UID and GID must be between 1 and 2147483647: steps never run as root")
	}
	return "", uid, gid, nil
}

// stepUser is who IsolationUser runs steps as.
type stepUser struct {
	uid, gid int
	name     string
	// passwd and group are the host's files plus an entry for the user, bound over
	// /etc/passwd and /etc/group in the step's mount namespace (nil when the host has the user).
	passwd, group []byte
}

// resolveUser finds the user spec (Options.User) names; self is the runner's UID.
func resolveUser(spec string, self int) (stepUser, error) {
	var su stepUser
	name, uid, gid, err := parseUser(spec)
	if spec != "" && err != nil {
		return su, fmt.Errorf("%w: User = %q: %v", ErrInvalidOptions, spec, err)
	}
	switch {
	case spec == "":
		if u, err := user.Lookup(DefaultUser); err == nil {
			return lookedUp(u, self)
		}
		if u, err := user.LookupId(strconv.Itoa(DefaultUID)); err == nil {
			return su, fmt.Errorf("%w: UID %d, which steps run as by default, belongs to the host's user %q: create a user %s for steps, or name one with --build-user",
				ErrIsolationUnavailable, DefaultUID, u.Username, DefaultUser)
		}
		uid, gid, name = DefaultUID, DefaultGID, DefaultUser
	case name != "":
		u, err := user.Lookup(name)
		if err != nil {
			return su, fmt.Errorf("%w: User = %q: no such user on this host (%v)", ErrInvalidOptions, spec, err)
		}
		return lookedUp(u, self)
	default:
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			su = stepUser{uid: uid, gid: gid, name: u.Username}
			return su, checkNotSelf(su, spec, self)
		}
		name = DefaultUser
	}
	su = stepUser{uid: uid, gid: gid, name: name}
	if err := checkNotSelf(su, spec, self); err != nil {
		return su, err
	}
	// No account: give the step's view one.
	su.passwd = withEntry("/etc/passwd", fmt.Sprintf("%s:x:%d:%d:Freshet build steps:/nonexistent:/bin/sh", name, uid, gid))
	su.group = withEntry("/etc/group", fmt.Sprintf("%s:x:%d:", name, gid))
	return su, nil
}

func lookedUp(u *user.User, self int) (stepUser, error) {
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return stepUser{}, fmt.Errorf("%w: User = %q: UID %q, GID %q are not numbers", ErrInvalidOptions, u.Username, u.Uid, u.Gid)
	}
	su := stepUser{uid: uid, gid: gid, name: u.Username}
	return su, checkNotSelf(su, u.Username, self)
}

func checkNotSelf(su stepUser, spec string, self int) error {
	switch {
	case su.uid == 0 || su.gid == 0:
		return fmt.Errorf("%w: User = %q: is root (UID %d, GID %d); steps must run as an unprivileged user", ErrInvalidOptions, spec, su.uid, su.gid)
	case su.uid == self:
		return fmt.Errorf("%w: User = %q: is the runner's own user (UID %d); steps must run as another user", ErrInvalidOptions, spec, su.uid)
	}
	return nil
}

// withEntry returns file's content with line appended (file missing: just the line).
func withEntry(file, line string) []byte {
	b, _ := os.ReadFile(file)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return append(b, line+"\n"...)
}

// closedAncestor returns the first directory on the way from / to dir that su may not enter
// (by its mode bits), or "".
func closedAncestor(dir string, su stepUser) string {
	p := "/"
	for _, el := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		p = filepath.Join(p, el)
		fi, err := os.Stat(p)
		if err != nil {
			return ""
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return ""
		}
		mode := fi.Mode().Perm()
		switch {
		case int(st.Uid) == su.uid && mode&0o100 != 0:
		case int(st.Uid) != su.uid && int(st.Gid) == su.gid && mode&0o010 != 0:
		case int(st.Uid) != su.uid && int(st.Gid) != su.gid && mode&0o001 != 0:
		default:
			return p
		}
	}
	return ""
}

// sandboxMount is a path an isolated step's mount namespace covers.
type sandboxMount struct {
	Path    string
	Scratch bool // an empty writable tmpfs (mode 1777); else hidden: an empty tmpfs (0755), or /dev/null over a file
}

// sandboxMounts returns what covers the host in an isolated step's view, sorted (outer paths
// first): the scratch directories, and the hidden paths, each as a real path. A path inside a
// hidden one is left out (covering the outer one covers it), and so is a scratch directory
// inside another; a hidden path inside a scratch directory stays, so that it shows in the
// step's view as what it is: an empty read-only directory. A scratch directory that is also to
// be hidden (Root = /tmp) is a scratch directory: a fresh one hides too.
func sandboxMounts(hide []string) []sandboxMount {
	var all []sandboxMount
	for _, p := range scratchDirs {
		all = append(all, sandboxMount{Path: realPath(p), Scratch: true})
	}
	for _, p := range hide {
		all = append(all, sandboxMount{Path: realPath(p)})
	}
	slices.SortStableFunc(all, func(a, b sandboxMount) int { return strings.Compare(a.Path, b.Path) })
	var out []sandboxMount
	for _, m := range all {
		if slices.ContainsFunc(out, func(o sandboxMount) bool {
			return within(m.Path, o.Path) && (m.Path == o.Path || !o.Scratch || m.Scratch)
		}) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// realPath is p with symbolic links resolved, or cleaned when it does not exist.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// sandboxConfig is what the runner tells the sandbox helper that starts an isolated step.
type sandboxConfig struct {
	Mode     Isolation
	UID, GID int // IsolationUser: the step's user; IsolationNamespaces: the runner's own
	Mounts   []sandboxMount
	// BuildDir is bound back at its own path once the mounts cover it ("" for the probe).
	BuildDir string
	// Passwd and Group are files bound over /etc/passwd and /etc/group ("" for none).
	Passwd, Group string
	Argv          []string
	Env           []string
	Dir           string
	MakeDir       bool // create Dir (inside the workspace), as the step's user
	Probe         bool // start Argv with no lookup (the probe child)
}

// sandboxStatus is the helper's one answer, written once the step's process has started (Pid)
// or could not be (Exit and Notice: the program was not found or could not be executed), or
// when the sandbox could not be set up (Error).
type sandboxStatus struct {
	Pid    int    `json:"pid,omitempty"`
	Exit   int    `json:"exit,omitempty"`
	Notice string `json:"notice,omitempty"`
	Error  string `json:"error,omitempty"`
}

// isolationHint says what would make namespaces available, from the host's settings.
func isolationHint(mode Isolation) string {
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return string(bytes.TrimSpace(b))
	}
	if mode == IsolationUser {
		return "the runner is root but cannot create mount and PID namespaces: it needs CAP_SYS_ADMIN " +
			"(in a container: run it with --cap-add SYS_ADMIN, or run freshet outside the container)"
	}
	switch {
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "unprivileged user namespaces are disabled: enable them with sysctl -w kernel.unprivileged_userns_clone=1"
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "user namespaces are disabled: enable them with sysctl -w user.max_user_namespaces=15000"
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces: allow them with sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 " +
			"or an AppArmor profile for freshet with the userns permission"
	}
	return "unprivileged user, mount and PID namespaces are needed (inside a container, its seccomp profile or a /proc with masked " +
		"paths can forbid them; run freshet as root there, or outside the container)"
}

// runtimeDirs are the runner's per-user runtime directories (agent sockets, D-Bus): hidden in
// IsolationNamespaces, where steps have the runner's UID.
func runtimeDirs(uid int) []string {
	var dirs []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, d)
	}
	return append(dirs, "/run/user/"+strconv.Itoa(uid))
}
