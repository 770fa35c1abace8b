package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestLayerTarIsReproducible(t *testing.T) {
	es := []fileEntry{file("etc/passwd", 0o644, []byte("root\n")), dir("tmp", 0o1777), dir("etc", 0o755), symlink("bin/sh", "busybox")}
	a, err := layerTar(es)
	if err != nil {
		t.Fatal(err)
	}
	b, err := layerTar([]fileEntry{es[3], es[1], es[0], es[2]})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same entries in another order give another tar")
	}
	tr := tar.NewReader(bytes.NewReader(a))
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(layerEpoch) || h.Uname != "" {
			t.Errorf("%s: time %v, user %q", h.Name, h.ModTime, h.Uname)
		}
		got = append(got, h.Name+" "+string(rune(h.Typeflag)))
		if h.Name == "tmp/" && h.Mode != 0o1777 {
			t.Errorf("tmp/ mode %o, want 1777", h.Mode)
		}
	}
	want := []string{"bin/sh 2", "etc/ 5", "etc/passwd 0", "tmp/ 5"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("entries %v, want %v (sorted, directories with a slash)", got, want)
	}
	if _, err := layerTar([]fileEntry{dir("a", 0o755), dir("a", 0o755)}); err == nil {
		t.Error("a path twice: no error")
	}
	if w := whiteout("opt/b.txt"); w.Path != "opt/.wh.b.txt" || w.Type != tar.TypeReg || len(w.Data) != 0 {
		t.Errorf("whiteout: %+v", w)
	}
}

func TestHtpasswdLineIsBcrypt(t *testing.T) {
	line, err := htpasswdLine("freshet", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	user, hash, ok := strings.Cut(strings.TrimSpace(line), ":")
	if !ok || user != "freshet" || !strings.HasPrefix(hash, "$2a$") {
		t.Fatalf("htpasswd line %q", line)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret")) != nil {
		t.Error("the hash does not match the password")
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte("wrong")) == nil {
		t.Error("the hash matches a wrong password")
	}
}

func TestEnsurePKIKeepsTheCA(t *testing.T) {
	dir := t.TempDir()
	if err := ensurePKI(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	ca1, _ := os.ReadFile(filepath.Join(dir, caCertFile))
	srv1, _ := os.ReadFile(filepath.Join(dir, serverCertFile))
	if err := ensurePKI(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	ca2, _ := os.ReadFile(filepath.Join(dir, caCertFile))
	srv2, _ := os.ReadFile(filepath.Join(dir, serverCertFile))
	if !bytes.Equal(ca1, ca2) || !bytes.Equal(srv1, srv2) {
		t.Fatal("a second ensurePKI replaced valid certificates")
	}
	verify := func() {
		t.Helper()
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca2)
		blk, _ := pem.Decode(srv2)
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
				t.Errorf("server certificate for %s: %v", host, err)
			}
		}
	}
	verify()
	// A broken serving certificate is replaced; the CA clients trust stays.
	if err := os.WriteFile(filepath.Join(dir, serverCertFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ensurePKI(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	ca2, _ = os.ReadFile(filepath.Join(dir, caCertFile))
	srv2, _ = os.ReadFile(filepath.Join(dir, serverCertFile))
	if !bytes.Equal(ca1, ca2) || bytes.Equal(srv1, srv2) {
		t.Fatal("after a broken server certificate: the CA changed, or the certificate was not replaced")
	}
	verify()
	if fi, _ := os.Stat(filepath.Join(dir, caKeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestRegistryConfig(t *testing.T) {
	r := &registry{instance: instance{kind: kindRegistry, name: "x", dir: "/state/registry/x"},
		st: registryState{Port: 5123, TLS: true, HTTPSecret: "sec"}}
	cfg := r.config()
	for _, want := range []string{`addr: "127.0.0.1:5123"`, `rootdirectory: "/state/registry/x/data"`, `path: "/state/registry/x/htpasswd"`,
		`certificate: "/state/registry/x/tls/server.crt"`, `realm: freshet-test-registry`, `secret: "sec"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
	r.st.TLS = false
	if cfg := r.config(); strings.Contains(cfg, "tls:") {
		t.Errorf("plain HTTP config has tls:\n%s", cfg)
	}
	t.Setenv("REGISTRY", "127.0.0.1:1")
	t.Setenv("REGISTRY_HTTP_ADDR", ":80")
	for _, kv := range registryEnv() {
		if strings.HasPrefix(kv, "REGISTRY") {
			t.Errorf("registry environment keeps %s (the registry reads REGISTRY_* as configuration)", kv)
		}
	}
}

func TestEngineConfigs(t *testing.T) {
	e := &engine{instance: instance{kind: kindEngine, name: "x", dir: "/state/engine/x"},
		st: engineState{ID: "0123abcd", Slot: 3, Nofile: 20000, Nproc: 32768}}
	files, err := e.configs()
	if err != nil {
		t.Fatal(err)
	}
	cc := files["/state/engine/x/conf/containers.conf"]
	for _, want := range []string{`runtime = "runc"`, `cgroup_manager = "cgroupfs"`, `lock_type = "file"`, `log_driver = "k8s-file"`,
		`default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]`, `network_backend = "netavark"`,
		`default_subnet_pools = [{"base" = "10.131.0.0/16", "size" = 24}]`, `tmp_dir = "/run/freshet/engine-0123abcd/libpod"`,
		`network_config_dir = "/state/engine/x/networks"`, `init_path = "/usr/bin/catatonit"`} {
		if !strings.Contains(cc, want) {
			t.Errorf("containers.conf lacks %s:\n%s", want, cc)
		}
	}
	sc := files["/state/engine/x/conf/storage.conf"]
	if !strings.Contains(sc, `graphroot = "/state/engine/x/storage"`) || !strings.Contains(sc, `runroot = "/run/freshet/engine-0123abcd/storage"`) {
		t.Errorf("storage.conf:\n%s", sc)
	}
	if n := len("/run/freshet/engine-0123abcd/storage"); n > maxRunroot {
		t.Errorf("runroot is %d characters, Podman accepts %d", n, maxRunroot)
	}
	if p := files["/state/engine/x/home/.config/containers/policy.json"]; !strings.Contains(p, "insecureAcceptAnything") {
		t.Errorf("policy.json: %s", p)
	}
	env := strings.Join(e.env(), "\n")
	for _, want := range []string{"HOME=/state/engine/x/home", "CONTAINERS_CONF=/state/engine/x/conf/containers.conf",
		"XDG_RUNTIME_DIR=/run/freshet/engine-0123abcd/xdg"} {
		if !strings.Contains(env, want) {
			t.Errorf("service environment lacks %s:\n%s", want, env)
		}
	}
	if strings.Contains(env, "DOCKER_HOST") || strings.Contains(env, "CONTAINER_HOST") {
		t.Errorf("service environment passes the caller's engine settings:\n%s", env)
	}
	if e.certsDir() != "/state/engine/x/home/.config/containers/certs.d" {
		t.Errorf("certs.d is %s", e.certsDir())
	}
}

func TestCheckUlimitsLowersToTheService(t *testing.T) {
	e := &engine{st: engineState{Nofile: 1 << 40, Nproc: 1 << 40}}
	changed, err := e.checkUlimits(pidFile{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if !changed || e.st.Nofile >= 1<<40 || e.st.Nofile == 0 {
		t.Errorf("changed=%v nofile=%d: want lowered to this process's hard limit", changed, e.st.Nofile)
	}
	again, _ := e.checkUlimits(pidFile{PID: os.Getpid()})
	if again {
		t.Error("limits equal to the process's: reported changed")
	}
}

func TestSlots(t *testing.T) {
	old := slotDir
	slotDir = t.TempDir()
	t.Cleanup(func() { slotDir = old })
	ctx := context.Background()
	a, err := claimSlot(ctx, "/state/a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := claimSlot(ctx, "/state/a"); again != a {
		t.Errorf("a second claim of the same engine moved from slot %d to %d", a, again)
	}
	b, err := claimSlot(ctx, "/state/b")
	if err != nil || b == a {
		t.Fatalf("second engine: slot %d (first %d), %v", b, a, err)
	}
	// An engine whose service has exited frees its slot; one that is starting keeps it.
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	st, _ := readProcStat(sleep.Process.Pid)
	if err := recordSlotOwner(a, "/state/a", pidFile{PID: sleep.Process.Pid, StartTime: st.startTime}); err != nil {
		t.Fatal(err)
	}
	if c, _ := claimSlot(ctx, "/state/c"); c == a {
		t.Errorf("the slot of a running engine was given away")
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if d, _ := claimSlot(ctx, "/state/d"); d != a {
		t.Errorf("the slot of an exited engine (%d) was not reused: got %d", a, d)
	}
	releaseSlot(b, "/state/other")
	if _, err := os.Stat(slotPath(b)); err != nil {
		t.Error("releaseSlot removed another engine's claim")
	}
	releaseSlot(b, "/state/b")
	if _, err := os.Stat(slotPath(b)); !errors.Is(err, os.ErrNotExist) {
		t.Error("releaseSlot left the engine's claim")
	}
	if p := slotPool(3).String(); p != "10.131.0.0/16" {
		t.Errorf("slot 3 pool %s", p)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/short\04`: `/short\04`} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestMissingPackages(t *testing.T) {
	pkgs := []debPkg{{"present", "/bin/sh"}, {"absent-pkg", "/nonexistent/binary"}}
	if m := missingPackages(pkgs); len(m) != 1 || m[0].name != "absent-pkg" {
		t.Fatalf("missing %v", m)
	}
	err := ensurePackages(context.Background(), pkgs, false, t.Logf)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitMissingTools || !strings.Contains(err.Error(), "absent-pkg") || !strings.Contains(err.Error(), "make containers-deps") {
		t.Errorf("ensurePackages without install: %v, want exit code %d naming the package and the make target", err, exitMissingTools)
	}
}

func TestImageOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    imageOptions
		want string
	}{
		{imageOptions{push: false, base: baseScratch, version: "v1", platforms: "linux/amd64"}, "--push=false needs --oci-layout"},
		{imageOptions{push: true, base: "alpine", version: "v1", platforms: "linux/amd64"}, `--base "alpine"`},
		{imageOptions{push: true, base: baseScratch, version: "v1+dirty", platforms: "linux/amd64"}, `--version "v1+dirty"`},
		{imageOptions{push: true, base: baseScratch, version: "v1", platforms: "windows/amd64"}, `--platform "windows/amd64"`},
		{imageOptions{push: true, base: baseBusybox, version: "v1", platforms: "linux/amd64,linux/arm64"}, "--base busybox builds for"},
	} {
		_, err := tc.o.validate()
		var ee exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error with %q", tc.o, err, tc.want)
		}
	}
	ps, err := (&imageOptions{push: true, base: baseScratch, version: "v1.2.3-4-gabc", platforms: "linux/amd64, linux/arm/v7"}).validate()
	if err != nil || len(ps) != 2 || ps[1].Variant != "v7" {
		t.Errorf("valid options: %v %v", ps, err)
	}
}

func TestCommandErrorsNameTheFlag(t *testing.T) {
	t.Setenv(EnvState, t.TempDir())
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"registry", "up", "--name", "Bad_Name"}, exitUsage, `--name "Bad_Name"`},
		{[]string{"registry", "sideways"}, exitUsage, `unknown sub-command "sideways"`},
		{[]string{"engine", "trust", "--address", "nohost", "--ca-file", "/dev/null"}, exitUsage, `--address "nohost"`},
		{[]string{"registry", "status", "--name", "never"}, exitNotRunning, `registry "never" is not running`},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, io.Discard, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

func TestProcessAliveChecksStartTime(t *testing.T) {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	st, err := readProcStat(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := pidFile{PID: sleep.Process.Pid, StartTime: st.startTime}
	// Start returns once the child is in execve, and the kernel sets the new command line a
	// little later: until then /proc/PID/cmdline is empty (seen in CI, under load).
	for deadline := time.Now().Add(5 * time.Second); !ours(p, "60") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !running(p) || !ours(p, "60") || ours(p, "/some/instance/") {
		t.Errorf("running %v, ours(60) %v, ours(other) %v", running(p), ours(p, "60"), ours(p, "/some/instance/"))
	}
	if running(pidFile{PID: p.PID, StartTime: p.StartTime + 1}) {
		t.Error("a pid with another start time counts as running (pid reuse)")
	}
	path := filepath.Join(t.TempDir(), "x.pid")
	if err := os.WriteFile(path, []byte(p.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readPidFile(path); err != nil || got != p {
		t.Errorf("readPidFile: %+v %v, want %+v", got, err, p)
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for running(p) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if running(p) {
		t.Error("a killed process still counts as running")
	}
}
