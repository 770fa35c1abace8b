package security_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/proc"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/cli"
)

// envUpChild makes the test binary `freshet up` (the arguments after it are the command line):
// a process of its own, so that its environment holds the admin password as a real server's
// does.
const envUpChild = "FRESHET_SECURITY_UP_CHILD"

// runUpChild runs `freshet up` as cmd/freshet does and returns its exit code.
func runUpChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// nobody is the unprivileged user `freshet up` runs as to attack its namespaces isolation when
// the suite runs as root.
const nobody = 65534

// upServer is a running `freshet up` in a process of its own.
type upServer struct {
	cmd     *exec.Cmd
	url     string
	dataDir string
	out     *proc.Buffer
}

var runningAt = regexp.MustCompile(`Freshet is running at (http://\S+)`)

// startUp starts `freshet up` as uid (os.Geteuid() for the suite's own user) with the admin
// password in its environment. It returns nil with the output when `freshet up` exits instead.
func startUp(t *testing.T, uid int, password string, extra ...string) (*upServer, string) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	if uid != os.Geteuid() {
		// A copy of the test binary and a home that uid can use.
		for d := base; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(base, "freshet")
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if uid != os.Geteuid() {
		if err := os.Chown(home, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	up := &upServer{dataDir: filepath.Join(home, "data"), out: &proc.Buffer{}}
	args := append([]string{"up", "--data-dir", up.dataDir, "--listen", "127.0.0.1:0"}, extra...)
	up.cmd = exec.Command(bin, args...)
	up.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8",
		"FRESHET_ADMIN_PASSWORD=" + password, envUpChild + "=1"}
	if uid != os.Geteuid() {
		up.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	}
	up.cmd.Stdout, up.cmd.Stderr = up.out, up.out
	if err := up.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = up.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = up.cmd.Process.Kill()
		<-exited
	})
	deadline := time.After(60 * time.Second)
	for {
		if m := runningAt.FindStringSubmatch(up.out.String()); m != nil {
			up.url = m[1]
			return up, ""
		}
		select {
		case <-exited:
			return nil, up.out.String()
		case <-deadline:
			t.Fatalf("freshet up did not start within 60s:\n%s", up.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// read returns a file of the data dir (the test's view of the host).
func (up *upServer) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(up.dataDir, name))
	if err != nil {
		t.Fatalf("read the data dir's %s: %v", name, err)
	}
	return strings.TrimSpace(string(b))
}

// runnerAttacks are what a member's step tries against the `freshet up` that runs it, by name;
// SERVER stands for the server's PID, DATA for its data dir, $PARENT is the step's parent
// process. Each prints what it got (nothing
// when it failed).
var runnerAttacks = [][2]string{
	{"the parent's environment", `tr '\0' '\n' < /proc/$PARENT/environ`},
	{"the server's environment", `tr '\0' '\n' < /proc/SERVER/environ`},
	{"every process's environment", `cat /proc/[0-9]*/environ | tr '\0' '\n' | grep FRESHET_ADMIN_PASSWORD`},
	{"the server's command line", `tr '\0' ' ' < /proc/SERVER/cmdline`},
	{"the server's memory", `exec 3< /proc/SERVER/mem && echo opened`},
	{"the server's open files", `ls /proc/SERVER/fd/ | grep .`},
	{"the data dir through the server's root", `cat /proc/SERVER/root/DATA/master.key`},
	{"the master key", `cat DATA/master.key`},
	{"the database", `head -c 16 DATA/freshet.db`},
	{"the runner token", `cat DATA/runner.token`},
	{"the runtime token", `cat DATA/runtime.token`},
	{"the data dir's listing", `ls -A DATA | grep -vx builds`},
	{"every master.key on the host", `find / -name master.key -not -path '/proc/*' -not -path '/sys/*' 2>/dev/null | while read f; do echo "$f:"; cat "$f"; done`},
	{"another build's workspace", `cat DATA/builds/freshet-*/workspace/victim-secret`},
	{"another build through its processes", `cat /proc/[0-9]*/cwd/victim-secret`},
	{"ptrace the server", `gdb -batch -nx -p SERVER -ex 'info proc' 2>/dev/null | grep -x 'process SERVER'`},
	{"signal the server", `kill -0 SERVER && echo signalled`},
	{"write into the data dir", `echo pwned > DATA/pwned && echo written`},
	{"the embedded NATS", `for h in $(awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp | sort -u); do
  p=$(printf %d 0x$h)
  (r=$(timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p && head -c 160 <&3" 2>/dev/null)
   case $r in *freshet-embedded*) echo "NATS at $p";; esac) &
done; wait`},
}

// attackScript is the member's step: every attack, each printing @@GOT name@@ and what it got,
// or @@NOPE name@@.
func attackScript(serverPID int, dataDir string) string {
	var b strings.Builder
	b.WriteString("set +e\nPARENT=$PPID; export PARENT\n")
	b.WriteString(`try() { out=$(timeout 20 sh -c "$2" 2>/dev/null | head -c 4000); if [ -n "$out" ]; then printf '@@GOT %s@@%s\n' "$1" "$out"; else printf '@@NOPE %s@@\n' "$1"; fi; }` + "\n")
	r := strings.NewReplacer("SERVER", fmt.Sprint(serverPID), "DATA", dataDir)
	for _, a := range runnerAttacks {
		fmt.Fprintf(&b, "try %s %s\n", shellQuote(a[0]), shellQuote(r.Replace(a[1])))
	}
	return b.String()
}

// shellQuote is s as one single-quoted shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// yamlBlock is s as a YAML block scalar item of a step's commands.
func yamlBlock(s string) string {
	return "      - |\n" + regexp.MustCompile(`(?m)^`).ReplaceAllString(strings.TrimRight(s, "\n"), "        ") + "\n"
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// runnerAttack runs the attack against a `freshet up` started as uid with extra flags: a member
// runs the attack step while another build of the account (the victim) holds a secret in its
// workspace. It returns the attempts, which of them got in, how long the attack's build took,
// and its log.
func runnerAttack(t *testing.T, uid int, extra ...string) (attempts int, got []string, worst time.Duration, log string) {
	t.Helper()
	ctx := context.Background()
	password := "admin-" + randomHex(t)
	up, out := startUp(t, uid, password, extra...)
	if up == nil {
		// freshet up refuses to start where it cannot isolate steps: that is the defence.
		if !strings.Contains(out, "--insecure-local-steps") {
			t.Fatalf("freshet up exited without saying how to run steps:\n%s", out)
		}
		t.Logf("freshet up refuses to run unisolated steps here:\n%s", out)
		return 1, nil, 0, ""
	}
	admin := client.New(up.url, client.WithToken(sessionToken(t, up.url, "admin@freshet.local", password)))
	if _, err := admin.CreateUser(ctx, client.CreateUserRequest{Email: "mallory@first.test", Role: "member", Password: "mallory-password"}); err != nil {
		t.Fatal(err)
	}
	member := client.New(up.url, client.WithToken(sessionToken(t, up.url, "mallory@first.test", "mallory-password")))

	// The victim: an admin's build holding a secret in its workspace while the attack runs.
	victimSecret := "victim-" + randomHex(t)
	if _, err := admin.CreateProject(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	victimSpec := "version: '1.0'\nsteps:\n  hold:\n    commands:\n" + yamlBlock("echo "+victimSecret+" > victim-secret\necho victim-ready\nsleep 120")
	if _, err := admin.CreatePipeline(ctx, client.PipelineRequest{Project: "ops", Name: "deploy", Spec: victimSpec}); err != nil {
		t.Fatal(err)
	}
	victim, err := admin.RunPipeline(ctx, "ops/deploy", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CancelBuild(context.Background(), victim.ID) })
	deadline := time.Now().Add(time.Minute)
	for {
		log, _ := admin.BuildLog(ctx, victim.ID, 0)
		if bytes.Contains(log, []byte("victim-ready")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim build did not start:\n%s\n%s", log, up.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	if _, err := member.CreateProject(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	spec := "version: '1.0'\nsteps:\n  attack:\n    commands:\n" + yamlBlock(attackScript(up.cmd.Process.Pid, up.dataDir))
	if _, err := member.CreatePipeline(ctx, client.PipelineRequest{Project: "mine", Name: "ci", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	b, err := member.RunPipeline(ctx, "mine/ci", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	build, log := waitInjBuild(t, member, b.ID)
	if build.StartedAt != nil && build.FinishedAt != nil {
		worst = build.FinishedAt.Sub(*build.StartedAt)
	}
	for _, a := range runnerAttacks {
		attempts++
		switch {
		case strings.Contains(log, "@@GOT "+a[0]+"@@"):
			got = append(got, a[0])
		case !strings.Contains(log, "@@NOPE "+a[0]+"@@"):
			t.Errorf("the attack %q did not run; build %s, log:\n%s", a[0], build.Status, log)
		}
	}
	// Whatever the attempts printed, none of the server's secrets may be in the log.
	secrets := map[string]string{
		"admin password": password, "master key": up.read(t, "master.key"), "runner token": up.read(t, "runner.token"),
		"runtime token": up.read(t, "runtime.token"), "database": "SQLite format 3", "victim's secret": victimSecret,
	}
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		attempts++
		if strings.Contains(log, secrets[name]) {
			got = append(got, "the log holds the "+name)
		}
	}
	attempts += 2
	if _, err := os.Stat(filepath.Join(up.dataDir, "pwned")); err == nil {
		got = append(got, "a file written into the data dir")
	}
	if err := up.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		got = append(got, "the server is gone")
	}
	return attempts, got, worst, log
}

// A member of the account `freshet up` serves runs a build whose step attacks the server that
// runs it: the admin password in its environment, its master key, database and tokens in the
// data dir, another build's workspace, the server's process (ptrace, signals), the embedded
// NATS. freshet up runs the step isolated — as root as an unprivileged user of its own, else in
// user namespaces — and none of it gets in. The same attack without isolation
// (--insecure-local-steps) gets in, which shows that the attack can tell.
func TestInProcessRunnerStepsCannotReachTheServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("isolation is Linux's")
	}
	type mode struct {
		name string
		uid  int // freshet up's
	}
	modes := []mode{{"freshet up as a user, steps in user namespaces", os.Geteuid()}}
	if os.Geteuid() == 0 {
		modes = []mode{{"freshet up as root, steps as an unprivileged user", 0}, {"freshet up as a user, steps in user namespaces", nobody}}
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			n, got, worst, log := runnerAttack(t, m.uid)
			attack(t, "in-process runner: a member's step against freshet up", n, len(got), worst)
			for _, g := range got {
				t.Errorf("got in: %s", g)
			}
			if len(got) > 0 {
				t.Logf("log of the attack:\n%s", log)
			}
		})
	}
	t.Run("where steps cannot be isolated, freshet up refuses", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if os.Geteuid() != 0 || err != nil {
			t.Skip("needs root and setpriv (util-linux) to start freshet up without CAP_SYS_ADMIN")
		}
		bin, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		home := t.TempDir()
		// Root without CAP_SYS_ADMIN, as in a container without --cap-add SYS_ADMIN.
		cmd := exec.CommandContext(ctx, setpriv, "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin",
			bin, "up", "--data-dir", filepath.Join(home, "data"), "--listen", "127.0.0.1:0")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, envUpChild + "=1"}
		out, err := cmd.CombinedOutput()
		// Refused before the first start: the admin's password, printed once, is not wasted.
		started := 0
		if ctx.Err() != nil || err == nil || strings.Contains(string(out), "Freshet is running") || strings.Contains(string(out), "Admin password") {
			started = 1
		}
		if started > 0 || !strings.Contains(string(out), "CAP_SYS_ADMIN") || !strings.Contains(string(out), "--insecure-local-steps") {
			t.Errorf("freshet up without CAP_SYS_ADMIN (%v): want it to refuse before it starts, saying why and how to opt out:\n%s", err, out)
		}
		attack(t, "in-process runner: a member's step against freshet up", 1, started, 0)
	})
	t.Run("without isolation, the attack gets in", func(t *testing.T) {
		_, got, _, _ := runnerAttack(t, os.Geteuid(), "--insecure-local-steps")
		for _, want := range []string{"the server's environment", "the master key", "the log holds the admin password", "the log holds the master key"} {
			if !slices.Contains(got, want) {
				t.Errorf("without isolation the attack did not get %q (it got %v): it could not tell an isolated step from one that is not", want, got)
			}
		}
	})
}
