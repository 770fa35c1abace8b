package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// runIn runs the CLI against url with token, stdin as standard input.
func runIn(t *testing.T, url, token, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(EnvServer, url)
	t.Setenv(EnvToken, token)
	t.Setenv("FRESHET_CLI_CONFIG", filepath.Join(t.TempDir(), "config.yaml"))
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "registry CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRegistryContextCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runIn(t, s.URL, key.Token, stdin, args...)
	}
	must := func(want string, stdin string, args ...string) string {
		t.Helper()
		code, out, errs := run(stdin, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("freshet %s: exit %d, want %q in\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		code, out, errs := run("", args...)
		if code == 0 || !strings.Contains(errs, want) {
			t.Fatalf("freshet %s: exit %d, want a failure saying %q; got\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
	}
	const pw = "ghcr-token-from-stdin"
	ca := writeCA(t)
	must("Created registry context ghcr for ghcr.io/acme (as bot, default).", pw+"\n",
		"context", "create", "registry", "ghcr", "--url", "ghcr.io/acme", "--username", "bot", "--password-stdin", "--default", "--ca-file", ca)
	if c, err := s.Admin.GetContext(ctx, "ghcr", true); err != nil || c.Registry == nil || c.Registry.Password != pw || !strings.Contains(c.Registry.CA, "BEGIN CERTIFICATE") {
		t.Fatalf("created %+v, %v", c.Registry, err)
	}
	must("Created registry context quay for quay.io.", "", "context", "create", "registry", "quay", "--url", "quay.io", "--password", "quay-token")
	out := must("ghcr.io/acme (as bot, default)", "", "context", "list")
	quayListed := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		quayListed = quayListed || len(f) >= 3 && f[0] == "quay" && f[1] == "registry" && f[2] == "quay.io"
	}
	if !quayListed {
		t.Errorf("context list lacks quay:\n%s", out)
	}
	out = must("password  *****", "", "context", "get", "ghcr")
	for _, want := range []string{"url       ghcr.io/acme", "username  bot", "ca        1 certificate", "default   true"} {
		if !strings.Contains(out, want) {
			t.Errorf("context get lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, pw) {
		t.Errorf("context get shows the password:\n%s", out)
	}
	must("password  "+pw, "", "context", "get", "ghcr", "--decrypt")
	var got client.Context
	if code, out, _ := run("", "context", "get", "ghcr", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &got) != nil ||
		got.Registry == nil || got.Registry.Password != "*****" || got.Type != "registry" {
		t.Fatalf("context get -o json: %d %s", code, out)
	}

	// Updates keep the password while the URL and CA stay; changing either needs it again.
	must("Updated registry context ghcr: ghcr.io/acme (as robot, default).", "", "context", "update", "ghcr", "--username", "robot")
	if c, _ := s.Admin.GetContext(ctx, "ghcr", true); c.Registry.Password != pw || c.Registry.Username != "robot" || c.Registry.CA == "" {
		t.Fatalf("after update: %+v", c.Registry)
	}
	fails("registry.password", "context", "update", "ghcr", "--url", "ghcr.io/other")
	must("ghcr.io/other (as robot, default)", "new-token\n", "context", "update", "ghcr", "--url", "ghcr.io/other", "--password-stdin")
	// Default switching.
	must("quay.io (default)", "", "context", "update", "quay", "--default")
	fails("registry.ca", "context", "update", "ghcr", "--ca-file", "")
	must("ghcr.io/other (as robot)", "new-token", "context", "update", "ghcr", "--ca-file", "", "--password-stdin")
	if c, _ := s.Admin.GetContext(ctx, "ghcr", false); c.Registry.Default || c.Registry.CA != "" {
		t.Fatalf("ghcr after quay became the default and its CA was removed: %+v", c.Registry)
	}

	// Mistakes are refused with the field or flag named.
	fails("registry.url", "context", "create", "registry", "bad", "--url", "https://ghcr.io")
	fails("--url: only for registry contexts", "context", "create", "plain", "--kv", "A=b", "--url", "ghcr.io")
	fails("no values", "context", "create", "registry", "r2", "--url", "ghcr.io", "--kv", "A=b")
	fails("--password and --password-stdin", "context", "create", "registry", "r3", "--url", "ghcr.io", "--password", "x", "--password-stdin")
	fails("give NAME, registry NAME", "context", "create", "secret", "x", "--kv", "A=b")
	must("Created secret context s1", "", "context", "create", "s1", "--type", "secret", "--kv", "A=b")
	fails("only for registry contexts", "context", "update", "s1", "--url", "ghcr.io")
	// A config context may still be named registry.
	must("Created config context registry with 1 keys.", "", "context", "create", "registry", "--kv", "A=b")
}

// `freshet build get` shows the images a build pushed: in the table one line per tag, and in
// -o json/yaml as the API has them.
func TestBuildGetShowsImages(t *testing.T) {
	started := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	finished := started.Add(42 * time.Second)
	b := client.Build{ID: "bld_1", Name: "app/ci #7", Number: 7, PipelineID: "pip_1", Pipeline: "app/ci", Status: "success", Trigger: "manual",
		TriggeredBy: "admin@first.test", Branch: "main", SHA: "0123456789abcdef0123456789abcdef01234567", Attempt: 1, CreatedAt: started,
		StartedAt: &started, FinishedAt: &finished,
		Steps: []client.Step{{Name: "build", Status: "success", Attempts: 1}, {Name: "push", Status: "success", Attempts: 1}},
		Images: []client.Image{
			{ID: "img_1", BuildID: "bld_1", Step: "build", Registry: "ghcr", Repository: "ghcr.io/acme/app", Tags: []string{"1.4.2", "latest"},
				Digest: "sha256:" + strings.Repeat("ab", 32), Size: 13_421_773, SHA: "0123456789abcdef0123456789abcdef01234567", Branch: "main", CreatedAt: finished},
			{ID: "img_2", BuildID: "bld_1", Step: "push", Registry: "local", Repository: "127.0.0.1:5000/app", Tags: []string{},
				Digest: "sha256:" + strings.Repeat("cd", 32), Size: 900, SHA: "0123456789abcdef0123456789abcdef01234567", Branch: "main", CreatedAt: finished},
		}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/builds/bld_1" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(b)
	}))
	defer srv.Close()
	code, out, errs := runIn(t, srv.URL, "test-token", "", "build", "get", "bld_1")
	i := strings.Index(out, "STEP ")
	if code != 0 || i < 0 {
		t.Fatalf("build get: exit %d %s%s", code, out, errs)
	}
	golden(t, "build-get", out[i:]) // the steps and images; the header above has local times
	var back client.Build
	if code, out, _ := runIn(t, srv.URL, "test-token", "", "build", "get", "bld_1", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &back) != nil ||
		len(back.Images) != 2 || back.Images[0].Digest != b.Images[0].Digest || back.Images[0].Tags[1] != "latest" {
		t.Fatalf("build get -o json: %d %s", code, out)
	}
	if code, out, _ := runIn(t, srv.URL, "test-token", "", "build", "get", "bld_1", "-o", "yaml"); code != 0 || !strings.Contains(out, "repository: ghcr.io/acme/app") {
		t.Fatalf("build get -o yaml: %d %s", code, out)
	}
}

func TestGitContextCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runIn(t, s.URL, key.Token, stdin, args...)
	}
	must := func(want string, stdin string, args ...string) string {
		t.Helper()
		code, out, errs := run(stdin, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("freshet %s: exit %d, want %q in\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		code, out, errs := run("", args...)
		if code == 0 || !strings.Contains(errs, want) {
			t.Fatalf("freshet %s: exit %d, want a failure saying %q; got\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
	}
	const tok = "ghp-git-token-from-stdin"
	must("Created git context gh for github https://api.github.com.", tok+"\n", "context", "create", "git", "gh", "--provider", "github", "--password-stdin")
	if c, err := s.Admin.GetContext(ctx, "gh", true); err != nil || c.Git == nil || c.Git.Token != tok || c.Type != "git" {
		t.Fatalf("created %+v, %v", c.Git, err)
	}
	must("github https://api.github.com", "", "context", "list")
	out := must("token     *****", "", "context", "get", "gh")
	if strings.Contains(out, tok) || !strings.Contains(out, "provider  github") {
		t.Errorf("context get:\n%s", out)
	}
	must("token     "+tok, "", "context", "get", "gh", "--decrypt")
	// The token is kept while provider and URL stay; a new URL needs it again.
	must("Updated git context gh: github https://api.github.com (as ci-bot).", "", "context", "update", "gh", "--username", "ci-bot")
	if c, _ := s.Admin.GetContext(ctx, "gh", true); c.Git.Token != tok || c.Git.Username != "ci-bot" {
		t.Fatalf("after update: %+v", c.Git)
	}
	fails("git.token", "context", "update", "gh", "--provider", "gitlab", "--url", "https://gitlab.com")
	must("gitlab https://gitlab.com", "glpat\n", "context", "update", "gh", "--provider", "gitlab", "--url", "https://gitlab.com", "--password-stdin")

	fails("git.provider", "context", "create", "git", "x", "--provider", "svn", "--password", "t")
	fails("git.url", "context", "create", "git", "x", "--provider", "gitea", "--password", "t")
	fails("--default: only for registry contexts", "context", "create", "git", "x", "--provider", "github", "--password", "t", "--default")
	fails("no values", "context", "create", "git", "x", "--provider", "github", "--kv", "A=b")
	fails("--provider: only for git contexts", "context", "create", "plain", "--kv", "A=b", "--provider", "github")
	must("Created secret context s1", "", "context", "create", "s1", "--type", "secret", "--kv", "A=b")
	fails("only for git contexts", "context", "update", "s1", "--provider", "github")
}
