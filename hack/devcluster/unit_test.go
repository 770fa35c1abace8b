package main

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWrapperGoModPinsEveryStagingModule(t *testing.T) {
	kubeGoMod := []byte(`module k8s.io/kubernetes

go 1.24.0

godebug default=go1.24

require (
	github.com/spf13/cobra v1.8.1
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/kube-scheduler => ./staging/src/k8s.io/kube-scheduler
	github.com/something/else => github.com/fork/else v1.0.0
)
`)
	got, err := wrapperGoMod(kubeGoMod, "v1.33.13")
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		"module " + wrapperModule + "\n",
		"go 1.24.0\n",
		"godebug default=go1.24\n",
		"require k8s.io/kubernetes v1.33.13\n",
		"\tk8s.io/api => k8s.io/api v0.33.13\n",
		"\tk8s.io/kube-scheduler => k8s.io/kube-scheduler v0.33.13\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("wrapper go.mod lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "github.com/fork/else") {
		t.Errorf("non-staging replace copied:\n%s", s)
	}
	if _, err := wrapperGoMod([]byte("module x\n"), "v1.33.13"); err == nil {
		t.Error("a go.mod without staging replaces was accepted")
	}
}

func TestKubeLDFlagsSetVersion(t *testing.T) {
	ld := kubeLDFlags("v1.33.13")
	for _, want := range []string{
		"k8s.io/component-base/version.gitVersion=v1.33.13",
		"k8s.io/client-go/pkg/version.gitVersion=v1.33.13",
		"k8s.io/component-base/version.gitMinor=33",
		"k8s.io/component-base/version.gitMajor=1",
	} {
		if !strings.Contains(ld, want) {
			t.Errorf("ldflags %q lack %q", ld, want)
		}
	}
}

func TestCheckBinaryRejectsIncompleteFiles(t *testing.T) {
	dir := t.TempDir()
	truncated := filepath.Join(dir, binScheduler)
	exe, err := os.Executable() // the test binary: a real Go binary, but not kube-scheduler
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, b[:len(b)/3], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(truncated, binScheduler); err == nil {
		t.Error("a truncated binary passed the check")
	}
	foreign := filepath.Join(dir, binKwok)
	if err := os.WriteFile(foreign, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(foreign, binKwok); err == nil || !strings.Contains(err.Error(), "want sigs.k8s.io/kwok") {
		t.Errorf("a foreign Go binary passed as kwok: %v", err)
	}
	if err := checkBinary(filepath.Join(dir, "missing"), binAPIServer); err == nil {
		t.Error("a missing binary passed")
	}
}

// startMarked starts a process whose command line contains marker, the way devcluster's
// components contain their instance directory.
func startMarked(t *testing.T, marker string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	// argv[0] is a path inside the marker directory, as devcluster's components have their
	// instance directory in their arguments.
	if err := os.MkdirAll(marker, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(marker, "sleep")
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd
}

func TestProcessAliveGuardsAgainstPidReuse(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "state", "dev") + "/"
	cmd := startMarked(t, marker)
	st, err := readProcStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ours := pidFile{PID: cmd.Process.Pid, StartTime: st.startTime}
	if !sameProcessRunning(ours) {
		t.Fatal("a just-started process is not seen running")
	}
	// Its command line appears once execve has finished (Start returns a little earlier).
	for deadline := time.Now().Add(5 * time.Second); !processAlive(ours, marker); {
		if time.Now().After(deadline) {
			t.Fatal("our live process is not seen alive")
		}
		time.Sleep(time.Millisecond)
	}
	if processAlive(ours, strings.Replace(marker, "/dev/", "/other/", 1)) {
		t.Error("a process of another instance (marker differs) is seen as ours")
	}
	if processAlive(pidFile{PID: ours.PID, StartTime: ours.StartTime + 1}, marker) {
		t.Error("a pid with another start time (reused pid) is seen as ours")
	}
	if processAlive(pidFile{PID: ours.PID}, marker) {
		t.Error("a pid file without start time is trusted")
	}

	// A zombie (exited, not yet reaped: what an init that does not reap leaves) is dead,
	// although kill(pid, 0) still succeeds on it.
	_ = cmd.Process.Signal(os.Kill)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := readProcStat(ours.PID)
		if err != nil || st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child did not exit after SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if processAlive(ours, marker) || sameProcessRunning(ours) {
		t.Error("a killed (zombie) process is seen alive")
	}
}

func TestPidFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.pid")
	if err := os.WriteFile(p, []byte(pidFile{PID: 42, StartTime: 7}.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readPidFile(p)
	if err != nil || got != (pidFile{PID: 42, StartTime: 7}) {
		t.Fatalf("readPidFile = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "abc", "-3"} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readPidFile(p); err == nil {
			t.Errorf("pid file %q accepted", bad)
		}
	}
}

func TestAssignPortsReplacesOnlyTakenPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	free, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{st: state{Ports: map[string]int{portEtcd: taken, portEtcdPeer: free[0], portAPIServer: 1}}}
	changed, err := in.assignPorts(compEtcd, false)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || in.st.Ports[portEtcd] == taken || in.st.Ports[portEtcd] == 0 {
		t.Fatalf("taken port %d not replaced: %v", taken, in.st.Ports)
	}
	if in.st.Ports[portEtcdPeer] != free[0] {
		t.Fatalf("free remembered port %d replaced: %v", free[0], in.st.Ports)
	}
	if in.st.Ports[portAPIServer] != 1 {
		t.Fatalf("another component's port changed: %v", in.st.Ports)
	}
	changed, err = in.assignPorts(compEtcd, false)
	if err != nil || changed {
		t.Fatalf("second assign changed ports: %v %v", changed, err)
	}
	if !portFree(in.st.Ports[portEtcd]) {
		t.Fatal("assigned port is not free")
	}
}

func TestPKI(t *testing.T) {
	dir := t.TempDir()
	if err := ensurePKI(dir); err != nil {
		t.Fatal(err)
	}
	load := func(name string) *x509.Certificate {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name+".crt"))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca := load(pkiCA)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv := load(pkiAPIServer)
	if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("apiserver cert for 127.0.0.1: %v", err)
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "kubernetes.default.svc"}); err != nil {
		t.Errorf("apiserver cert for kubernetes.default.svc: %v", err)
	}
	admin := load(pkiAdmin)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin client cert: %v", err)
	}
	if len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin groups = %v", admin.Subject.Organization)
	}
	if kcm := load(pkiKCM); kcm.Subject.CommonName != "system:kube-controller-manager" {
		t.Errorf("controller-manager user = %q", kcm.Subject.CommonName)
	}
	// Idempotent: a second call keeps the CA (kubeconfigs handed out stay valid).
	if err := ensurePKI(dir); err != nil {
		t.Fatal(err)
	}
	if !load(pkiCA).Equal(ca) {
		t.Error("ensurePKI regenerated an existing CA")
	}
	kc, err := kubeconfig(dir, "dev", "https://127.0.0.1:1234", pkiAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "server: https://127.0.0.1:1234\n") || !strings.Contains(string(kc), "client-certificate-data: ") {
		t.Errorf("kubeconfig:\n%s", kc)
	}
}

func TestInstanceNames(t *testing.T) {
	for _, ok := range []string{"dev", "a", "ci-1", strings.Repeat("a", 40)} {
		if err := checkName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Dev", "-x", "x-", "a/b", "../x", strings.Repeat("a", 41)} {
		if err := checkName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/root/.local/state/x": "/root/.local/state/x",
		"/tmp/a b":             "'/tmp/a b'",
		"/tmp/it's":            `'/tmp/it'\''s'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	var out, errb strings.Builder
	if code := run(t.Context(), nil, &out, &errb); code != exitUsage {
		t.Errorf("no command: exit %d", code)
	}
	if code := run(t.Context(), []string{"frobnicate"}, &out, &errb); code != exitUsage {
		t.Errorf("unknown command: exit %d", code)
	}
	if code := run(t.Context(), []string{"status", "--name", "Bad/Name"}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "--name") {
		t.Errorf("bad name: exit %d, stderr %q", code, errb.String())
	}
}

// Start returns once the close-on-exec pipe closes, before execve has put the new arguments
// in place: a check of the command line right after start sees an empty one now and then
// (often, on a busy machine). A freshly started daemon must nevertheless count as running,
// or up reports a healthy component as "exited right after start".
func TestJustStartedDaemonCountsAsRunning(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "inst") + "/"
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(marker, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(marker, "sleep")
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		pf, err := startDaemon(bin, []string{"30"}, filepath.Join(marker, "log"), filepath.Join(marker, "pid"), os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		running := sameProcessRunning(pf)
		stopProcesses([]pidFile{pf}, marker, time.Second)
		if !running {
			t.Fatalf("start %d: a just-started daemon is not seen running", i)
		}
		if sameProcessRunning(pf) {
			t.Fatalf("start %d: daemon still runs after stopProcesses", i)
		}
	}
}
