package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The end-to-end tests drive the built devcluster binary as a user would, against the real
// binaries in the cache. Without them they skip, unless FRESHET_TEST_KUBE=1.

var toolPath string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "devcluster-tool-")
	if err != nil {
		panic(err)
	}
	toolPath = filepath.Join(tmp, "devcluster")
	out, err := exec.Command("go", "build", "-o", toolPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build devcluster: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// harness is one test's isolated devcluster world: its own state root, real binary cache.
type harness struct {
	t     *testing.T
	state string
	env   []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	if missing := missingBinaries(bin); len(missing) > 0 {
		msg := fmt.Sprintf("devcluster binaries missing in %s (%s); build them with `make devcluster-build`", bin, strings.Join(missing, ", "))
		if os.Getenv("FRESHET_TEST_KUBE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	h := &harness{t: t, state: t.TempDir()}
	h.env = append(os.Environ(), EnvState+"="+h.state)
	t.Cleanup(func() {
		for _, ent := range mustReadDir(h.state) {
			h.run("down", "--name", ent, "--purge")
		}
		if left := procsMentioning(h.state); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
		}
	})
	return h
}

func mustReadDir(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

type result struct {
	stdout, stderr string
	code           int
}

func (h *harness) run(args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolPath, args...)
	cmd.Env = h.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		h.t.Fatalf("run devcluster %v: %v", args, err)
	}
	return r
}

func (h *harness) up(name string) upResult {
	h.t.Helper()
	r := h.run("up", "--name", name, "--json")
	if r.code != 0 {
		h.t.Fatalf("up --name %s: exit %d\n%s", name, r.code, r.stderr)
	}
	var res upResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		h.t.Fatalf("up --json output %q: %v", r.stdout, err)
	}
	return res
}

func (h *harness) status(name string) (statusResult, int) {
	h.t.Helper()
	r := h.run("status", "--name", name, "--json")
	var st statusResult
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		h.t.Fatalf("status --json output %q: %v", r.stdout, err)
	}
	return st, r.code
}

func pidOf(st statusResult, comp string) int {
	for _, c := range st.Components {
		if c.Name == comp {
			return c.PID
		}
	}
	return 0
}

func procsMentioning(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if st, err := readProcStat(pid); err == nil && st.state == 'Z' {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// kubeClient talks to an instance with its admin certificate.
func (h *harness) kubeClient(name string) (*instance, *http.Client) {
	h.t.Helper()
	h.t.Setenv(EnvState, h.state) // openInstance reads the state root from the environment
	in, err := openInstance(name)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := in.adminClient()
	if err != nil {
		h.t.Fatal(err)
	}
	return in, c
}

func TestUpStatusEnvDown(t *testing.T) {
	h := newHarness(t)
	res := h.up("a")
	if len(res.Started) != len(components) || len(res.StaleCleaned) != 0 {
		t.Fatalf("fresh up started %v, cleaned %v", res.Started, res.StaleCleaned)
	}
	t.Logf("up to ready: %.1fs", res.ReadySeconds)
	u := strings.TrimPrefix(res.Server, "https://")
	if host, _, _ := net.SplitHostPort(u); host != loopback {
		t.Fatalf("server %s not on loopback", res.Server)
	}
	for k, p := range res.Ports {
		if portFree(p) {
			t.Errorf("port %s=%d is not in use after up", k, p)
		}
	}

	st, code := h.status("a")
	if code != 0 || !st.Running {
		t.Fatalf("status exit %d running=%v", code, st.Running)
	}
	for _, c := range st.Components {
		if !c.Running || c.PID == 0 || c.RSSBytes < 10<<20 {
			t.Errorf("component %+v: want running with RSS >= 10 MiB", c)
		}
	}
	human := h.run("status", "--name", "a")
	for _, comp := range components {
		if !strings.Contains(human.stdout, comp) {
			t.Errorf("status output does not name %s:\n%s", comp, human.stdout)
		}
	}
	if env := h.run("env", "--name", "a"); env.stdout != "export KUBECONFIG="+res.Kubeconfig+"\n" {
		t.Errorf("env printed %q", env.stdout)
	}
	if plain := h.run("up", "--name", "a"); strings.TrimSpace(plain.stdout) != res.Kubeconfig {
		t.Errorf("up printed %q, want the kubeconfig path", plain.stdout)
	}

	// up on a healthy instance changes nothing.
	again := h.up("a")
	if len(again.Started) != 0 {
		t.Errorf("second up restarted %v", again.Started)
	}

	if r := h.run("down", "--name", "a"); r.code != 0 {
		t.Fatalf("down: exit %d %s", r.code, r.stderr)
	}
	if left := procsMentioning(h.state); len(left) > 0 {
		t.Fatalf("processes after down: %v", left)
	}
	st, code = h.status("a")
	if code != exitNotRunning || st.Running {
		t.Fatalf("status after down: exit %d running=%v", code, st.Running)
	}
	for k, p := range res.Ports {
		if !portFree(p) {
			t.Errorf("port %s=%d still in use after down", k, p)
		}
	}
}

func TestPortInUseIsReplaced(t *testing.T) {
	h := newHarness(t)
	first := h.up("p")
	if r := h.run("down", "--name", "p"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// Someone else takes the apiserver's and etcd's remembered ports while the instance is down.
	var held []int
	for _, k := range []string{portAPIServer, portEtcd} {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(first.Ports[k])))
		if err != nil {
			t.Fatalf("occupy %s port %d: %v", k, first.Ports[k], err)
		}
		defer l.Close()
		held = append(held, first.Ports[k])
	}
	second := h.up("p")
	for _, k := range []string{portAPIServer, portEtcd} {
		if second.Ports[k] == first.Ports[k] || slices.Contains(held, second.Ports[k]) {
			t.Errorf("%s port %d reused although it is taken", k, second.Ports[k])
		}
	}
	// Ports that stayed free are kept.
	if second.Ports[portScheduler] != first.Ports[portScheduler] {
		t.Errorf("free scheduler port changed %d -> %d", first.Ports[portScheduler], second.Ports[portScheduler])
	}
	// The kubeconfig follows the new apiserver port and works.
	in, c := h.kubeClient("p")
	if !strings.HasSuffix(in.serverURL(), ":"+strconv.Itoa(second.Ports[portAPIServer])) {
		t.Fatalf("state server %s, up reported port %d", in.serverURL(), second.Ports[portAPIServer])
	}
	kc, err := os.ReadFile(second.Kubeconfig)
	if err != nil || !strings.Contains(string(kc), in.serverURL()+"\n") {
		t.Fatalf("kubeconfig does not point at %s (err %v)", in.serverURL(), err)
	}
	if err := httpOK(t.Context(), c, in.serverURL()+"/readyz"); err != nil {
		t.Fatal(err)
	}
}

func TestStalePidFilesAreCleaned(t *testing.T) {
	h := newHarness(t)
	h.up("s")
	if r := h.run("down", "--name", "s"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	in, _ := h.kubeClient("s")
	if err := os.MkdirAll(in.path("run"), 0o755); err != nil {
		t.Fatal(err)
	}
	// 1. A live process that is not ours, with its true start time: only the command-line
	//    check tells it apart. It must survive up and down.
	bystander := exec.Command("sleep", "300")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bystander.Process.Kill(); _, _ = bystander.Process.Wait() }()
	bst, err := readProcStat(bystander.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	writePid := func(comp, content string) {
		if err := os.WriteFile(in.pidPath(comp), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePid(compScheduler, pidFile{PID: bystander.Process.Pid, StartTime: bst.startTime}.String())
	// 2. A process that exited (crash, reboot).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	writePid(compEtcd, pidFile{PID: gone.Process.Pid, StartTime: 1}.String())
	// 3. Garbage.
	writePid(compAPIServer, "not a pid\n")

	st, code := h.status("s")
	if code != exitNotRunning || pidOf(st, compScheduler) == 0 {
		t.Fatalf("status with stale pid files: exit %d %+v", code, st.Components)
	}
	for _, c := range st.Components {
		if c.Running {
			t.Errorf("%s reported running from a stale pid file", c.Name)
		}
	}

	res := h.up("s")
	slices.Sort(res.StaleCleaned)
	if want := []string{compEtcd, compAPIServer, compScheduler}; !slices.Equal(res.StaleCleaned, want) {
		t.Errorf("cleaned %v, want %v", res.StaleCleaned, want)
	}
	if len(res.Started) != len(components) {
		t.Errorf("started %v, want all components", res.Started)
	}
	st, code = h.status("s")
	if code != 0 || pidOf(st, compScheduler) == bystander.Process.Pid {
		t.Fatalf("after up: exit %d, scheduler pid %d (bystander %d)", code, pidOf(st, compScheduler), bystander.Process.Pid)
	}
	if r := h.run("down", "--name", "s"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the unrelated process was killed: %v", err)
	}
}

func TestCrashedComponentsAreRestartedByUp(t *testing.T) {
	h := newHarness(t)
	h.up("c")
	before, _ := h.status("c")
	for _, comp := range []string{compScheduler, compEtcd} {
		if err := syscall.Kill(pidOf(before, comp), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	// status names what crashed, and says so in its exit code.
	deadline := time.Now().Add(10 * time.Second)
	var human result
	for {
		human = h.run("status", "--name", "c")
		if human.code == exitNotRunning && strings.Contains(human.stderr, "not running: etcd, kube-scheduler") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after kill: exit %d\n%s\n%s", human.code, human.stdout, human.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, line := range strings.Split(human.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		crashed := f[0] == compScheduler || f[0] == compEtcd
		if slices.Contains(components, f[0]) && (f[1] == "running") == crashed {
			t.Errorf("status line %q", line)
		}
	}

	res := h.up("c")
	slices.Sort(res.Started)
	if want := []string{compEtcd, compScheduler}; !slices.Equal(res.Started, want) {
		t.Fatalf("up restarted %v, want exactly %v", res.Started, want)
	}
	after, code := h.status("c")
	if code != 0 {
		t.Fatalf("status after recovery: exit %d", code)
	}
	for _, comp := range []string{compAPIServer, compKCM, compKwok} {
		if pidOf(before, comp) != pidOf(after, comp) {
			t.Errorf("%s was restarted (pid %d -> %d) although it ran", comp, pidOf(before, comp), pidOf(after, comp))
		}
	}
	// The restarted scheduler schedules and etcd kept the cluster's data (same data dir).
	in, c := h.kubeClient("c")
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}`
	deadline = time.Now().Add(60 * time.Second)
	for {
		// Pods are refused until the restarted etcd serves again and the SA exists.
		resp, err := c.Post(in.serverURL()+"/api/v1/namespaces/default/pods", "application/json", strings.NewReader(pod))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusConflict {
				break
			}
			err = fmt.Errorf("%s: %s", resp.Status, b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("create pod: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		var p struct {
			Spec   struct{ NodeName string }
			Status struct{ Phase string }
		}
		err := getJSON(t.Context(), c, in.serverURL()+"/api/v1/namespaces/default/pods/p", &p)
		if err == nil && p.Spec.NodeName == nodeName && p.Status.Phase == "Running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not scheduled and Running: %+v %v", p, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestWatchdogStopsInstanceWhenOwnerExits(t *testing.T) {
	h := newHarness(t)
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _, _ = owner.Process.Wait() }()
	r := h.run("up", "--name", "w", "--down-when-exits", strconv.Itoa(owner.Process.Pid))
	if r.code != 0 {
		t.Fatalf("up: %s", r.stderr)
	}
	if st, code := h.status("w"); code != 0 || !st.Running {
		t.Fatalf("not running after up")
	}
	time.Sleep(time.Second)
	if st, _ := h.status("w"); !st.Running {
		t.Fatal("watchdog stopped the instance while its owner lives")
	}
	_ = owner.Process.Kill()
	_, _ = owner.Process.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := procsMentioning(h.state)
		_, err := os.Stat(filepath.Join(h.state, "w"))
		if len(left) == 0 && errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the owner died: processes %v, state dir err %v", left, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTwoInstancesRunAtOnce(t *testing.T) {
	h := newHarness(t)
	a := h.up("one")
	b := h.up("two")
	for k := range a.Ports {
		if a.Ports[k] == b.Ports[k] {
			t.Errorf("both instances use port %d for %s", a.Ports[k], k)
		}
	}
	if r := h.run("down", "--name", "one"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if st, code := h.status("two"); code != 0 || !st.Running {
		t.Fatal("stopping one instance affected the other")
	}
}

// A build interrupted half-way leaves a temp dir and maybe no binary (binaries are renamed
// into place only when complete); here, worse, a truncated binary at the final path. The next
// build must finish the job: rebuild only what is broken, keep what is valid.
func TestBuildFinishesAnInterruptedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("relinks kube-scheduler: seconds with a warm Go build cache, minutes with a cold one")
	}
	realBin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	if missing := missingBinaries(realBin); len(missing) > 0 {
		if os.Getenv("FRESHET_TEST_KUBE") == "1" {
			t.Fatalf("devcluster binaries missing: %v", missing)
		}
		t.Skipf("devcluster binaries missing (%v); build them with `make devcluster-build`", missing)
	}
	cache := t.TempDir()
	bin := filepath.Join(cache, "k8s-"+KubernetesVersion, "bin")
	if err := os.MkdirAll(filepath.Join(bin, tmpPrefix+"kube-123"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, tmpPrefix+"kube-123", binAPIServer), []byte("half"), 0o755); err != nil {
		t.Fatal(err)
	}
	keep := map[string]os.FileInfo{}
	for _, n := range []string{binAPIServer, binKCM, binKwok} {
		dst := filepath.Join(bin, n)
		if err := os.Link(filepath.Join(realBin, n), dst); err != nil {
			if err := copyFile(filepath.Join(realBin, n), dst); err != nil {
				t.Fatal(err)
			}
		}
		fi, err := os.Stat(dst)
		if err != nil {
			t.Fatal(err)
		}
		keep[n] = fi
	}
	whole, err := os.ReadFile(filepath.Join(realBin, binScheduler))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, binScheduler), whole[:len(whole)/2], 0o755); err != nil {
		t.Fatal(err)
	}

	// Phase 1: a build that is killed (kill -9 of its whole process group, as a cancelled CI
	// job or a lost terminal would) while it compiles kube-scheduler.
	killed := exec.Command(toolPath, "build")
	killed.Env = append(os.Environ(), EnvCache+"="+cache)
	killed.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := killed.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	sawBuilding := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), "building "+binScheduler) {
				found = true
				sawBuilding <- true
			}
		}
		if !found {
			sawBuilding <- false
		}
	}()
	select {
	case ok := <-sawBuilding:
		if !ok {
			t.Fatal("build ended without building kube-scheduler")
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("build did not start building kube-scheduler within 5 minutes")
	}
	_ = syscall.Kill(-killed.Process.Pid, syscall.SIGKILL)
	_ = killed.Wait()
	if err := checkBinary(filepath.Join(bin, binScheduler), binScheduler); err == nil {
		t.Fatal("kube-scheduler became valid although its build was killed (kill came too late to test anything)")
	}
	// The killed build removed the planted leftover on start and left its own temp dir.
	if olds, _ := filepath.Glob(filepath.Join(bin, tmpPrefix+"kube-*")); len(olds) != 1 || strings.HasSuffix(olds[0], "kube-123") {
		t.Fatalf("temp dirs after the killed build: %v, want exactly the killed build's own", olds)
	}

	// Phase 2: the next build finishes the job.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolPath, "build")
	cmd.Env = append(os.Environ(), EnvCache+"="+cache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Logf("build output:\n%s", out)
	if missing := missingBinaries(bin); len(missing) > 0 {
		t.Fatalf("after build, still missing or invalid: %v", missing)
	}
	for n, before := range keep {
		after, err := os.Stat(filepath.Join(bin, n))
		if err != nil || !os.SameFile(before, after) {
			t.Errorf("valid %s was rebuilt or replaced", n)
		}
	}
	if olds, _ := filepath.Glob(filepath.Join(bin, tmpPrefix+"*")); len(olds) > 0 {
		t.Errorf("leftover temp dirs: %v", olds)
	}
	if !strings.Contains(string(out), "rebuilding") || !strings.Contains(string(out), "leftover") {
		t.Errorf("build output does not mention the repair:\n%s", out)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// A component whose pid file was lost (deleted by hand, or devcluster killed between start
// and record) is found by its command line: up replaces it instead of starting a second
// copy, and down stops it.
func TestProcessesWithoutPidFileAreFound(t *testing.T) {
	h := newHarness(t)
	h.up("o")
	in, _ := h.kubeClient("o")
	before, _ := h.status("o")
	orphan := pidOf(before, compScheduler)
	if err := os.Remove(in.pidPath(compScheduler)); err != nil {
		t.Fatal(err)
	}
	res := h.up("o")
	if !slices.Equal(res.Started, []string{compScheduler}) {
		t.Fatalf("up started %v, want [kube-scheduler]", res.Started)
	}
	if st, err := readProcStat(orphan); err == nil && st.state != 'Z' {
		t.Fatalf("the orphaned scheduler (pid %d) still runs beside the new one", orphan)
	}
	after, code := h.status("o")
	if code != 0 || pidOf(after, compScheduler) == orphan {
		t.Fatalf("status exit %d, scheduler pid %d", code, pidOf(after, compScheduler))
	}

	if err := os.Remove(in.pidPath(compKwok)); err != nil {
		t.Fatal(err)
	}
	if r := h.run("down", "--name", "o"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if left := procsMentioning(h.state); len(left) > 0 {
		t.Fatalf("down left processes without pid file running: %v", left)
	}
}

// The apiserver crashed and, before up ran, something else took its port: up moves it to a
// free port, rewrites the kubeconfigs and restarts its clients (which had the old address);
// etcd, which does not depend on the apiserver, keeps running.
func TestCrashedAPIServerMovesWhenItsPortIsTaken(t *testing.T) {
	h := newHarness(t)
	first := h.up("m")
	before, _ := h.status("m")
	if err := syscall.Kill(pidOf(before, compAPIServer), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	old := first.Ports[portAPIServer]
	var l net.Listener
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if l, err = net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(old))); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("apiserver port %d not released after SIGKILL: %v", old, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer l.Close()

	res := h.up("m")
	if res.Ports[portAPIServer] == old {
		t.Fatalf("apiserver kept port %d, which is taken", old)
	}
	slices.Sort(res.Started)
	if want := []string{compAPIServer, compKCM, compScheduler, compKwok}; !slices.Equal(res.Started, want) {
		t.Fatalf("up started %v, want %v", res.Started, want)
	}
	after, code := h.status("m")
	if code != 0 || pidOf(after, compEtcd) != pidOf(before, compEtcd) {
		t.Fatalf("status exit %d; etcd pid %d -> %d", code, pidOf(before, compEtcd), pidOf(after, compEtcd))
	}
	kc, err := os.ReadFile(res.Kubeconfig)
	if err != nil || !strings.Contains(string(kc), ":"+strconv.Itoa(res.Ports[portAPIServer])+"\n") {
		t.Fatalf("kubeconfig not rewritten for port %d (err %v)", res.Ports[portAPIServer], err)
	}
}
