// Package e2e drives the built freshet binary the way a user does: it starts `freshet up` on a
// free port with a temp data dir and runs CLI commands against it.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

var binary string

func TestMain(m *testing.M) {
	bin, cleanup, err := proc.BuildFreshet()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = bin
	code := kube.Run(m) // stops the loopback clusters the GitOps tests started
	cleanup()
	os.Exit(code)
}

// instance is a running `freshet up`.
type instance struct {
	url     string
	cmd     *exec.Cmd
	stdout  *proc.Buffer
	stderr  *proc.Buffer
	dataDir string
}

func startUp(t *testing.T, dataDir string, port int, extraEnv ...string) *instance {
	t.Helper()
	in := &instance{url: fmt.Sprintf("http://127.0.0.1:%d", port), stdout: &proc.Buffer{}, stderr: &proc.Buffer{}, dataDir: dataDir}
	in.cmd = exec.Command(binary, "up", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	in.cmd.Env = append(os.Environ(), extraEnv...)
	in.cmd.Stdout, in.cmd.Stderr = in.stdout, in.stderr
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if in.cmd.ProcessState == nil {
			in.cmd.Process.Kill()
			in.cmd.Wait()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(in.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return in
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("freshet up not ready in 20s:\n%s\n%s", in.stdout, in.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- in.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("freshet up exited with %v after SIGTERM:\n%s", err, in.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("freshet up did not stop within 15s of SIGTERM")
	}
}

// cli runs a freshet CLI command with the test's own CLI config and returns stdout.
func cli(t *testing.T, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("freshet %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func mustCLI(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := cli(t, env, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUserJourney(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, "config.yaml")
	env := []string{"FRESHET_CLI_CONFIG=" + cfg, "FRESHET_SERVER=", "FRESHET_TOKEN="}
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t))

	// The first start prints the URL and the admin credentials once.
	pw := regexp.MustCompile(`Admin password \(shown once\): (\S+)`).FindStringSubmatch(in.stdout.String())
	if pw == nil || !strings.Contains(in.stdout.String(), in.url) {
		t.Fatalf("freshet up did not print the URL and password:\n%s", in.stdout)
	}

	// Log in with the password on stdin (as a prompt would take it).
	out, err := cli(t, env, pw[1]+"\n", "login", "--server", in.url, "--username", "admin@freshet.local")
	if err != nil || !strings.Contains(out, "Logged in") {
		t.Fatalf("login: %s %v", out, err)
	}
	if st, err := os.Stat(cfg); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CLI config %s: %v mode %v, want 0600", cfg, err, st.Mode())
	}
	if cur := strings.TrimSpace(mustCLI(t, env, "config", "current-context")); cur == "" {
		t.Fatal("no current context after login")
	}

	// Create a user; list users as JSON.
	mustCLI(t, env, "user", "create", "--email", "dev@example.com", "--role", "member", "--password", "dev-password-1")
	var users []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, env, "user", "list", "-o", "json")), &users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 2 || users[1]["email"] != "dev@example.com" || users[1]["id"] == "" {
		t.Fatalf("user list = %+v", users)
	}
	if y := mustCLI(t, env, "user", "list", "-o", "yaml"); !strings.Contains(y, "email: dev@example.com") {
		t.Fatalf("user list -o yaml:\n%s", y)
	}

	// Create an API key, use it, revoke it: then it fails.
	var key struct{ Token, ID string }
	if err := json.Unmarshal([]byte(mustCLI(t, env, "apikey", "create", "--name", "ci", "--role", "viewer", "--expires", "720h", "-o", "json")), &key); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key.Token, "fsk_") || key.ID == "" {
		t.Fatalf("apikey create -o json = %+v", key)
	}
	keyEnv := append(env[:len(env):len(env)], "FRESHET_TOKEN="+key.Token, "FRESHET_SERVER="+in.url)
	if out := mustCLI(t, keyEnv, "account", "get", "-o", "json"); !strings.Contains(out, `"name": "default"`) {
		t.Fatalf("account get with the key: %s", out)
	}
	if _, err := cli(t, keyEnv, "", "user", "create", "--email", "x@example.com", "--role", "viewer"); err == nil || !strings.Contains(err.Error(), "role") {
		t.Fatalf("viewer key created a user: %v", err)
	}
	mustCLI(t, env, "apikey", "revoke", key.ID)
	if _, err := cli(t, keyEnv, "", "account", "get"); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("revoked key still works: %v", err)
	}
	var keys []map[string]any
	json.Unmarshal([]byte(mustCLI(t, env, "apikey", "list", "-o", "json")), &keys)
	if len(keys) != 1 || keys[0]["status"] != "revoked" || keys[0]["name"] != "ci" {
		t.Fatalf("apikey list = %+v", keys)
	}

	// Each step is in the audit log.
	var evs []struct{ Action, Result, Actor string }
	if err := json.Unmarshal([]byte(mustCLI(t, env, "audit", "list", "-o", "json")), &evs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range evs {
		seen[e.Action+"/"+e.Result] = e.Actor
	}
	for _, want := range []string{"account.create/success", "auth.login/success", "user.create/success", "apikey.create/success", "user.create/denied", "apikey.revoke/success"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("audit log lacks %s; has %v", want, seen)
		}
	}
	if a := seen["user.create/denied"]; !strings.Contains(a, "api key ci") {
		t.Errorf("denied user.create actor = %q, want the API key named", a)
	}
	var filtered []struct{ Action string }
	json.Unmarshal([]byte(mustCLI(t, env, "audit", "list", "--action", "apikey.*", "--since", "1h", "-o", "json")), &filtered)
	if len(filtered) != 2 {
		t.Errorf("audit list --action apikey.* = %+v, want 2", filtered)
	}

	// Restart: the data and the login survive; no second admin is created.
	in.stop(t)
	in2 := startUp(t, in.dataDir, proc.FreePort(t))
	if strings.Contains(in2.stdout.String(), "Admin password") {
		t.Fatalf("restart created credentials again:\n%s", in2.stdout)
	}
	if out := mustCLI(t, append(env[:len(env):len(env)], "FRESHET_SERVER="+in2.url), "user", "list"); !strings.Contains(out, "dev@example.com") {
		t.Fatalf("user list after restart:\n%s", out)
	}
	in2.stop(t)
}

func TestAdminPasswordFromEnvAndBadStarts(t *testing.T) {
	home := t.TempDir()
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=from-the-env-1")
	if strings.Contains(in.stdout.String(), "Admin password") {
		t.Fatal("printed a password it was given")
	}
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "c.yaml")}
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "from-the-env-1")
	in.stop(t)

	// Unreachable database: one clear line, non-zero exit, quickly.
	start := time.Now()
	_, err := cli(t, nil, "", "server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--db", "postgres://u:secret@127.0.0.1:1/x?connect_timeout=2")
	msg := ""
	if err != nil {
		msg = err.Error()[strings.Index(err.Error(), "Error:"):]
	}
	if !strings.Contains(msg, "connect to postgres database") || strings.Contains(msg, "secret") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Fatalf("unreachable db: %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("unreachable db took %s to fail", time.Since(start))
	}
	// Corrupt config file: file and line named.
	bad := filepath.Join(home, "bad.yaml")
	os.WriteFile(bad, []byte("listen: 127.0.0.1:0\nlog-level: [x\n"), 0o600)
	if _, err := cli(t, nil, "", "server", "--config", bad); err == nil || !strings.Contains(err.Error(), bad+":") {
		t.Fatalf("corrupt config: %v", err)
	}
	os.WriteFile(bad, []byte("listen: 127.0.0.1:0\ncolour: blue\n"), 0o600)
	if _, err := cli(t, nil, "", "server", "--config", bad); err == nil || !strings.Contains(err.Error(), bad+":2: unknown setting \"colour\"") {
		t.Fatalf("unknown config key: %v", err)
	}
	// A port in use: a clear error.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	if _, err := cli(t, nil, "", "up", "--data-dir", t.TempDir(), "--listen", l.Addr().String()); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("port in use: %v", err)
	}
}

func TestCLIErrors(t *testing.T) {
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(t.TempDir(), "c.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN="}
	if _, err := cli(t, env, "", "user", "list"); err == nil || !strings.Contains(err.Error(), "freshet login") {
		t.Fatalf("no login: %v", err)
	}
	if _, err := cli(t, env, "", "login", "--server", "ftp://x", "-u", "a@b.c", "-p", "x"); err == nil || !strings.Contains(err.Error(), "http") {
		t.Fatalf("bad server URL: %v", err)
	}
	if _, err := cli(t, env, "", "config", "use-context", "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown context: %v", err)
	}
	out := mustCLI(t, env, "completion", "bash")
	if !strings.Contains(out, "freshet") {
		t.Fatal("no bash completion")
	}
	if v := mustCLI(t, env, "version"); !strings.HasPrefix(v, "freshet ") {
		t.Fatalf("version = %q", v)
	}
	sc := bufio.NewScanner(strings.NewReader(mustCLI(t, env, "server", "--help")))
	flags := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), "--") {
			flags++
		}
	}
	if flags < 10 {
		t.Fatalf("server --help documents only %d flags", flags)
	}
}
