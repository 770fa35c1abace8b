//go:build linux

package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/executortest"
)

// envAsNobody marks the test binary started again as an unprivileged user by
// TestContractNamespacesAsAnotherUser.
const envAsNobody = "FRESHET_LOCAL_TEST_AS_NOBODY"

// nobodyUID is the unprivileged user the namespaces tests run as when the tests run as root.
const nobodyUID = 65534

// newIsolated returns an executor with isolation auto (user as root, namespaces otherwise), or
// skips the test when this host cannot isolate steps (the error says why).
func newIsolated(t *testing.T, opts Options) *Local {
	t.Helper()
	opts.Isolation = IsolationAuto
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = testGrace
	}
	l, err := New(opts)
	if errors.Is(err, ErrIsolationUnavailable) && os.Getenv(envAsNobody) == "" {
		t.Skipf("this host cannot isolate steps: %v", err)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// TestContractIsolated runs the contract suite with isolation: as root each step runs as the
// step user, otherwise in user namespaces. A step still gets its workspace, environment, exit
// codes, timeouts and cancellation. Starting one takes a process more (the helper, this test
// binary again: slow to start with the race detector), hence the larger slack.
func TestContractIsolated(t *testing.T) {
	executortest.Run(t, func(t *testing.T) executor.Executor { return newIsolated(t, Options{}) }, executortest.Options{
		KillGrace: testGrace,
		Slack:     2 * executortest.DefaultSlack,
		Leftovers: leftovers,
	})
}

// TestContractNamespacesAsAnotherUser: run as root, the tests above use isolation user; this runs
// them again as an unprivileged user, where isolation means user namespaces.
func TestContractNamespacesAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs the namespaces tests as another user, which takes root; TestContractIsolated already uses namespaces")
	}
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "local.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobodyUID, nobodyUID); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run", "^(TestContractIsolated|TestIsolatedStepSeesNothingOfTheHost|TestIsolatedStepHasItsOwnTmp|TestIsolationRefusedWhereItCannotWork)$", "-test.count=1", "-test.v")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8", envAsNobody + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as UID %d: %v\n%s", nobodyUID, err, out)
	}
	for _, name := range []string{"TestContractIsolated", "TestIsolatedStepSeesNothingOfTheHost", "TestIsolatedStepHasItsOwnTmp", "TestIsolationRefusedWhereItCannotWork"} {
		if !bytes.Contains(out, []byte("--- PASS: "+name+" ")) {
			t.Errorf("%s did not pass as UID %d:\n%s", name, nobodyUID, out)
		}
	}
}

// TestIsolatedStepSeesNothingOfTheHost: an isolated step tries to reach what is not its own —
// a hidden directory, another build's workspace, the runner's process, the host's /tmp — and
// to undo its sandbox.
func TestIsolatedStepSeesNothingOfTheHost(t *testing.T) {
	// Without the scratch directories the hidden paths below (in the test's temporary directory)
	// are hidden by Options.Hide and Root alone.
	saved := scratchDirs
	scratchDirs = nil
	t.Cleanup(func() { scratchDirs = saved })

	secretDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "master.key"), []byte("the-master-key"), 0o644); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte("the-token"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newIsolated(t, Options{Hide: []string{secretDir, secretFile}})
	other := prepare(t, l)
	if err := os.WriteFile(filepath.Join(other.Path, "other-build"), []byte("other build's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := prepare(t, l)
	uid, gid := l.StepUser()
	tries := map[string]string{ // what the step prints when the attack works
		"hidden dir":          `cat ` + filepath.Join(secretDir, "master.key"),
		"hidden dir listing":  `ls -A ` + secretDir + ` | grep .`,
		"hidden file":         `cat ` + secretFile,
		"other build":         `cat ` + filepath.Join(other.Path, "other-build"),
		"other build listing": `ls ` + l.opts.Root + ` | grep -v ` + filepath.Base(ws.Handle),
		"runner cmdline":      fmt.Sprintf(`cat /proc/%d/cmdline`, os.Getpid()),
		"runner environ":      fmt.Sprintf(`cat /proc/%d/environ`, os.Getpid()),
		"other processes":     `ls /proc | grep '^[0-9]' | while read p; do [ "$p" -gt 100 ] && echo $p; done`,
		"signal the runner":   fmt.Sprintf(`kill -0 %d && echo alive`, os.Getpid()),
		"unmount":             `umount -l ` + secretDir + ` 2>/dev/null && cat ` + filepath.Join(secretDir, "master.key"),
		"unmount in userns":   `unshare -Urm sh -c 'umount -l ` + secretDir + ` && cat ` + filepath.Join(secretDir, "master.key") + `' 2>/dev/null`,
		"remount proc":        `unshare -Urm sh -c 'mount -t proc proc /proc && cat /proc/` + strconv.Itoa(os.Getpid()) + `/cmdline' 2>/dev/null`,
	}
	names := make([]string, 0, len(tries))
	for name := range tries {
		names = append(names, name)
	}
	slices.Sort(names)
	var cmds []string
	for _, name := range names {
		cmds = append(cmds, fmt.Sprintf(`if out=$( (%s) 2>/dev/null) && [ -n "$out" ]; then printf '@@GOT %s@@%%s\n' "$out"; fi`, tries[name], name))
	}
	cmds = append(cmds, `echo "id=$(id -u):$(id -g):$(id -G)"`)
	res, out, _ := run(t, l, ws, executor.Step{Name: "attack", Commands: cmds})
	if !res.Succeeded() {
		t.Fatalf("result %+v\n%s", res, out)
	}
	for _, name := range names {
		if strings.Contains(out, "@@GOT "+name+"@@") {
			t.Errorf("%s: the step got in:\n%s", name, out)
		}
	}
	if want := fmt.Sprintf("id=%d:%d:%d\n", uid, gid, gid); !strings.Contains(out, want) {
		t.Errorf("output %q: want the step's user and no supplementary group, %q", out, want)
	}
	if b, err := os.ReadFile(filepath.Join(secretDir, "master.key")); err != nil || string(b) != "the-master-key" {
		t.Errorf("the hidden file after the step: %q, %v", b, err)
	}
}

// TestIsolatedStepHasItsOwnTmp: /tmp, /var/tmp and /dev/shm are empty and writable in an
// isolated step, and nothing written there reaches the host or the next step — also with the
// builds in the temporary directory itself (`freshet runner`'s default work dir).
func TestIsolatedStepHasItsOwnTmp(t *testing.T) {
	t.Run("builds in a directory of their own", func(t *testing.T) { testOwnTmp(t, "") })
	t.Run("builds in the temporary directory", func(t *testing.T) { testOwnTmp(t, os.TempDir()) })
}

func testOwnTmp(t *testing.T, root string) {
	marker, err := os.CreateTemp("", "freshet-host-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	marker.Close()
	t.Cleanup(func() { os.Remove(marker.Name()) })
	l := newIsolated(t, Options{Root: root})
	ws := prepare(t, l)
	// Where the build directory is under one of them, the path to it is there.
	onTheWay := "^freshet-step-"
	for _, d := range scratchDirs {
		if rest, ok := strings.CutPrefix(ws.Handle, d+"/"); ok {
			onTheWay = "^" + strings.Split(rest, "/")[0] + "$"
		}
	}
	for _, step := range []string{"first", "second"} {
		res, out, _ := run(t, l, ws, executor.Step{Name: step, Commands: []string{
			`for d in /tmp /var/tmp /dev/shm; do ls -A $d | grep -v -e '^freshet-step-' -e '` + onTheWay + `' | grep . && echo "$d is not empty"; touch $d/freshet-step-` + step + `; done`,
			`test ! -e ` + marker.Name(),
		}})
		if !res.Succeeded() || out != "" {
			t.Errorf("step %s: %+v, output %q; want success and no output", step, res, out)
		}
	}
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if _, err := os.Stat(filepath.Join(d, "freshet-step-first")); err == nil {
			t.Errorf("a step's file reached the host's %s", d)
		}
	}
}

// TestIsolatedStepUserHasAnAccount: the step user, which has no account on the host, has one in
// the step's view (ssh and git look the user up), and the workspace is the step's.
func TestIsolatedStepUserHasAnAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation user needs root")
	}
	l := newIsolated(t, Options{})
	ws := prepare(t, l)
	res, out, _ := run(t, l, ws, executor.Step{Name: "who", Commands: []string{`id -un`, `touch "$CF_VOLUME_PATH/mine" "$HOME/mine" "$TMPDIR/mine"`, `stat -c %U "$CF_VOLUME_PATH/mine"`}})
	if want := DefaultUser + "\n" + DefaultUser + "\n"; !res.Succeeded() || out != want {
		t.Errorf("result %+v, output %q; want %q", res, out, want)
	}
	if fi, err := os.Stat(ws.Handle); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("build directory: %v, %v; want mode 0711, the runner's", fi.Mode(), err)
	}
}

// TestIsolatedStepCannotTurnTheRunnerAgainstTheHost: a step plants symbolic links where the
// runner (root) reads or creates files after it: the export file, and a working directory of a
// later step. Nothing outside the workspace is read or created.
func TestIsolatedStepCannotTurnTheRunnerAgainstTheHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runner is only more privileged than its steps as root")
	}
	saved := scratchDirs
	scratchDirs = nil // so that the targets, in the test's temporary directory, are in the step's view
	t.Cleanup(func() { scratchDirs = saved })
	// Root's, mode 0700, in the step's view (not under the test's directory, which is closed to
	// the step's user and so covered in its view).
	private, err := os.MkdirTemp("", "freshet-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	secret := filepath.Join(private, "secret")
	if err := os.WriteFile(secret, []byte("STOLEN=the-runner's-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newIsolated(t, Options{})
	ws := prepare(t, l)
	res, out, _ := run(t, l, ws, executor.Step{Name: "plant", Commands: []string{
		`rm "$CF_VOLUME_PATH/env_vars_to_export"`,
		`ln -s ` + secret + ` "$CF_VOLUME_PATH/env_vars_to_export"`,
		`ln -s ` + private + ` "$CF_VOLUME_PATH/link"`,
	}})
	if slices.ContainsFunc(res.Exports, func(e executor.EnvVar) bool { return e.Name == "STOLEN" }) || strings.Contains(out, "secret") {
		t.Errorf("the runner read its own file for the step: exports %v, output %q", res.Exports, out)
	}
	var climbed executortest.Buffer
	res, err = l.Run(context.Background(), ws, executor.Step{Name: "climb", WorkingDir: "link/created", Commands: []string{"pwd"}}, &climbed)
	if err == nil && res.Succeeded() {
		t.Errorf("a step ran in a directory through a link to the runner's: %+v %q", res, climbed.String())
	}
	if _, err := os.Stat(filepath.Join(private, "created")); err == nil {
		t.Error("the working directory was created in the runner's private directory")
	}
	// A working directory outside the workspace is the step's business, in its own view: the
	// runner does not look for it (and tell whether it exists) as root.
	res, out, _ = run(t, l, ws, executor.Step{Name: "abs", WorkingDir: private, Commands: []string{"pwd"}})
	if res.ExitCode != executor.ExitCodeNotFound-1 || !strings.Contains(out, "permission denied") {
		t.Errorf("a step in a directory its user may not enter: %+v, output %q; want exit code %d and why", res, out, executor.ExitCodeNotFound-1)
	}
}

// TestIsolationRefusedWhereItCannotWork: isolation user without root, and namespaces as root,
// are refused at New with ErrIsolationUnavailable; so are bad options.
func TestIsolationRefusedWhereItCannotWork(t *testing.T) {
	wrong := IsolationUser
	if os.Geteuid() == 0 {
		wrong = IsolationNamespaces
	}
	if _, err := New(Options{Root: t.TempDir(), Isolation: wrong}); !errors.Is(err, ErrIsolationUnavailable) {
		t.Errorf("isolation %s as UID %d: %v, want ErrIsolationUnavailable", wrong, os.Geteuid(), err)
	}
	if _, err := New(Options{Root: "/", Isolation: IsolationAuto}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("isolation with Root /: %v, want ErrInvalidOptions", err)
	}
	if os.Geteuid() == 0 {
		for _, u := range []string{"root", "0", "0:5", "5:0", strconv.Itoa(os.Geteuid())} {
			if _, err := New(Options{Root: t.TempDir(), Isolation: IsolationUser, User: u}); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("User %q: %v, want ErrInvalidOptions", u, err)
			}
		}
		if _, err := New(Options{Root: t.TempDir(), Isolation: IsolationUser, User: "no-such-user-xyz"}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("an unknown user: %v, want ErrInvalidOptions", err)
		}
	}
}

// TestSandboxMounts: hidden paths inside others are dropped (covering the outer one covers
// them), those inside scratch directories stay, links are resolved.
func TestSandboxMounts(t *testing.T) {
	saved := scratchDirs
	t.Cleanup(func() { scratchDirs = saved })
	scratchDirs = []string{"/tmp"}
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	got := sandboxMounts([]string{"/srv/data/builds", "/srv/data", "/srv/database", link, "/tmp/x", "/tmp"})
	want := []sandboxMount{{Path: "/srv/data"}, {Path: "/srv/database"}, {Path: "/tmp", Scratch: true}, {Path: "/tmp/x"}, {Path: realPath(dir)}}
	slices.SortFunc(want, func(a, b sandboxMount) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(got, want) {
		t.Errorf("sandboxMounts = %v, want %v", got, want)
	}
}
