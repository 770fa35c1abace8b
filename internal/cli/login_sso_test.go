package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
	"golang.org/x/oauth2"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// ssoCLIRun is a `freshet login --sso` running in the background.
type ssoCLIRun struct {
	url    string   // the login URL it printed
	exit   chan int // its exit code, once it ends
	stdout *bytes.Buffer
	mu     sync.Mutex
	stderr strings.Builder
}

func (r *ssoCLIRun) errText() string { r.mu.Lock(); defer r.mu.Unlock(); return r.stderr.String() }

// startSSOLogin runs the CLI with args in the background and returns once it printed its login
// URL on stderr.
func startSSOLogin(t *testing.T, args ...string) *ssoCLIRun {
	t.Helper()
	return startLogin(t, "a login URL", func(string) bool { return true }, args...)
}

// startLogin runs freshet with args in the background and returns once it printed a URL that
// want accepts (r.url). Its exit code is reported only once every line it wrote is in r.stderr.
func startLogin(t *testing.T, what string, want func(url string) bool, args ...string) *ssoCLIRun {
	t.Helper()
	r := &ssoCLIRun{exit: make(chan int, 1), stdout: &bytes.Buffer{}}
	pr, pw := io.Pipe()
	urls := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.stderr.WriteString(line + "\n")
			r.mu.Unlock()
			if u := strings.TrimSpace(line); strings.HasPrefix(u, "http") && want(u) {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()
	go func() {
		code := Main(context.Background(), args, strings.NewReader(""), r.stdout, pw)
		pw.Close()
		<-scanned // the last lines are read from the pipe before they are in r.stderr
		r.exit <- code
	}()
	select {
	case r.url = <-urls:
	case code := <-r.exit:
		t.Fatalf("freshet %s ended (exit %d) before printing %s:\n%s", strings.Join(args, " "), code, what, r.errText())
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s printed within 30s", what)
	}
	return r
}

func (r *ssoCLIRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.exit:
		return code
	case <-time.After(60 * time.Second):
		t.Fatal("the CLI did not end within 60s")
		return -1
	}
}

// TestLoginSSO runs `freshet login --sso` against a real server whose account uses a real
// OpenID provider (mockoidc on 127.0.0.1); the test is the browser: it opens the URL the CLI
// prints and follows every redirect with a cookie jar, through the provider, to the CLI's
// listener on 127.0.0.1.
func TestLoginSSO(t *testing.T) {
	idp, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := idp.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Shutdown() })
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
	ctx := context.Background()
	if _, err := s.Admin.CreateAccount(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.SetSSO(ctx, client.SSOConfigRequest{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
		AllowedDomains: []string{"first.test"}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvServer, "")
	t.Setenv(EnvToken, "")
	t.Setenv(EnvContext, "")
	t.Setenv(EnvCLIConfig, filepath.Join(t.TempDir(), "config.yaml"))
	login := []string{"login", "--server", s.URL, "--sso", "--account", "first", "--no-browser", "--name", "sso"}

	// The happy path: the browser ends at the CLI's page, the CLI saves a session context.
	idp.QueueUser(&mockoidc.MockUser{Subject: "jane", Email: "jane@first.test", EmailVerified: true})
	run := startSSOLogin(t, login...)
	u, err := url.Parse(run.url)
	if err != nil || u.Path != "/auth/sso/first/login" || !u.Query().Has("cli_port") || len(u.Query().Get("cli_challenge")) != 43 {
		t.Fatalf("login URL %q", run.url)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := browser.Get(run.url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	final := resp.Request.URL
	if resp.StatusCode != http.StatusOK || final.Host != "127.0.0.1:"+u.Query().Get("cli_port") || final.Path != "/callback" ||
		!strings.Contains(string(page), "Logged in to Freshet as jane@first.test (account first). You can close this tab.") {
		t.Fatalf("browser ended at %s with %d: %q", final, resp.StatusCode, page)
	}
	srvURL, _ := url.Parse(s.URL)
	for _, c := range jar.Cookies(srvURL) {
		if c.Name == "freshet_session" {
			t.Fatal("the CLI login set a session cookie in the browser")
		}
	}
	if code := run.wait(t); code != 0 || !strings.Contains(run.stdout.String(), "Logged in to "+s.URL+" as jane@first.test (account first, role member); context \"sso\" saved.") {
		t.Fatalf("login: exit %d\n%s%s", code, run.stdout, run.errText())
	}
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"account", "list"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "first") || !strings.Contains(out.String(), "member") {
		t.Fatalf("account list with the saved context: exit %d %s%s", code, out.String(), errb.String())
	}
	// The code it used is gone: replaying it (with any verifier) is refused as used.
	_, err = client.New(s.URL).SSOToken(ctx, client.SSOTokenRequest{Code: final.Query().Get("code"), Verifier: oauth2.GenerateVerifier()})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "unknown, expired or already used") {
		t.Fatalf("replayed code: %v", err)
	}

	// A code taken by someone without the CLI's verifier: refused, and the code is used up,
	// so the CLI reports a failed login too.
	idp.QueueUser(&mockoidc.MockUser{Subject: "jane", Email: "jane@first.test", EmailVerified: true})
	run = startSSOLogin(t, login...)
	u, _ = url.Parse(run.url)
	var stolen *url.URL
	thief := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Hostname() == "127.0.0.1" && r.URL.Port() == u.Query().Get("cli_port") {
			stolen = r.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	if resp, err = thief.Get(run.url); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if stolen == nil || stolen.Query().Get("code") == "" {
		t.Fatalf("no redirect to the CLI's listener (%d)", resp.StatusCode)
	}
	_, err = client.New(s.URL).SSOToken(ctx, client.SSOTokenRequest{Code: stolen.Query().Get("code"), Verifier: oauth2.GenerateVerifier()})
	if !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "does not answer the challenge") {
		t.Fatalf("wrong verifier: %v", err)
	}
	if resp, err = browser.Get(stolen.String()); err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if code := run.wait(t); code != 1 || resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(page), "Freshet login failed") ||
		!strings.Contains(run.errText(), "unknown, expired or already used") {
		t.Fatalf("login with a used code: exit %d, page %d %q\n%s", code, resp.StatusCode, page, run.errText())
	}

	// Nothing but 127.0.0.1 and a port can be a redirect target: the login is refused naming
	// the field before the browser goes anywhere.
	challenge := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	noFollow := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct{ port, challenge, field string }{
		{"80@evil.example", challenge, "cli_port"},
		{"8080@evil.example", challenge, "cli_port"},
		{"8080/../@evil.example", challenge, "cli_port"},
		{"80", challenge, "cli_port"},
		{"8080", "not-a-challenge", "cli_challenge"},
	} {
		resp, err := noFollow.Get(s.URL + "/auth/sso/first/login?" + url.Values{"cli_port": {c.port}, "cli_challenge": {c.challenge}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"field":"`+c.field+`"`) || resp.Header.Get("Location") != "" {
			t.Errorf("cli_port %q cli_challenge %q: %d %s (Location %q), want 400 naming %s", c.port, c.challenge, resp.StatusCode, body, resp.Header.Get("Location"), c.field)
		}
	}

	// An account without SSO: the browser gets the refusal, the CLI gives up after --timeout.
	run = startSSOLogin(t, "login", "--server", s.URL, "--sso", "--account", "second", "--no-browser", "--timeout", "2s")
	if resp, err = browser.Get(run.url); err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(page), "has no single sign-on configured") {
		t.Fatalf("account without SSO: %d %s", resp.StatusCode, page)
	}
	if code := run.wait(t); code != 1 || !strings.Contains(run.errText(), "no answer from the browser within 2s") {
		t.Fatalf("timeout: exit %d\n%s", code, run.errText())
	}

	// --sso needs an account and no password.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"login", "--server", s.URL, "--sso"}, "--account is required with --sso"},
		{[]string{"login", "--server", s.URL, "--sso", "--account", "first", "--username", "jane@first.test"}, "give no --username"},
	} {
		var out, errb bytes.Buffer
		if code := Main(ctx, c.args, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("freshet %s: exit %d %q, want 2 naming %q", strings.Join(c.args, " "), code, errb.String(), c.want)
		}
	}
}
