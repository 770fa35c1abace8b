package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// startDeviceLogin runs `freshet login --sso --device` with args in the background and returns
// once it printed the verification URL with the user code in it (r.url).
func startDeviceLogin(t *testing.T, args ...string) *ssoCLIRun {
	t.Helper()
	return startLogin(t, "a verification URL", func(u string) bool { return strings.Contains(u, "user_code=") }, args...)
}

var confirmRE = regexp.MustCompile(`name="confirm" value="([A-Za-z0-9_-]{43})"`)

// devicePage opens the verification page u with browser (another machine's browser) and returns
// the page and the confirmation token its buttons carry.
func openDevicePage(t *testing.T, browser *http.Client, u string) (string, string) {
	t.Helper()
	resp, err := browser.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := confirmRE.FindStringSubmatch(string(page))
	if resp.StatusCode != http.StatusOK || m == nil || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("verification page %s: %d %q", u, resp.StatusCode, page)
	}
	return string(page), m[1]
}

// pressDevice presses a button of the verification page (approve or deny) and follows every
// redirect (through the identity provider when approving).
func pressDevice(t *testing.T, browser *http.Client, server, userCode, confirm, action string) (int, string) {
	t.Helper()
	resp, err := browser.Get(server + "/auth/sso/device?" + url.Values{"user_code": {userCode}, "confirm": {confirm}, "action": {action}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(page)
}

// TestLoginSSODevice runs `freshet login --sso --device` against a real server whose account
// uses a real OpenID provider (mockoidc on 127.0.0.1). The test is the browser on another
// machine: it opens the verification page the CLI prints, presses Approve or Deny, and follows
// every redirect through the provider with a cookie jar.
// It runs on SQLite, and on PostgreSQL with FRESHET_TEST_POSTGRES.
func TestLoginSSODevice(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) { testLoginSSODevice(t, d) })
	}
}

func testLoginSSODevice(t *testing.T, d store.Dialect) {
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
	s := servertest.StartWith(t, d, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
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
	login := []string{"login", "--server", s.URL, "--sso", "--device", "--account", "first", "--name", "headless"}
	newBrowser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 30 * time.Second}
	}

	// The happy path: the CLI prints the page and the code, the browser approves, the CLI saves
	// a session context like the browser flow's.
	run := startDeviceLogin(t, login...)
	u, err := url.Parse(run.url)
	userCode := u.Query().Get("user_code")
	if err != nil || u.Path != "/auth/sso/device" || len(userCode) != 9 || !strings.Contains(run.errText(), "\n  "+userCode+"\n") ||
		!strings.Contains(run.errText(), "\n  "+s.URL+"/auth/sso/device\n") {
		t.Fatalf("the CLI printed:\n%s", run.errText())
	}
	browser := newBrowser()
	page, confirm := openDevicePage(t, browser, run.url)
	for _, want := range []string{"account <strong>first</strong>", userCode, "127.0.0.1", "freshet-cli/", "Approve and log in", "Deny"} {
		if !strings.Contains(page, want) {
			t.Errorf("the verification page does not show %q:\n%s", want, page)
		}
	}
	// Without the confirmation this browser got with the page, nothing happens.
	if code, page := pressDevice(t, newBrowser(), s.URL, userCode, confirm, "approve"); code != http.StatusBadRequest || !strings.Contains(page, "confirmation") {
		t.Fatalf("approve from another browser: %d %q", code, page)
	}
	idp.QueueUser(&mockoidc.MockUser{Subject: "jane", Email: "jane@first.test", EmailVerified: true})
	if code, page := pressDevice(t, browser, s.URL, userCode, confirm, "approve"); code != http.StatusOK || !strings.Contains(page, "Approved: the device login is logged in as jane@first.test") {
		t.Fatalf("approve: %d %q", code, page)
	}
	srvURL, _ := url.Parse(s.URL)
	for _, c := range browser.Jar.Cookies(srvURL) {
		if c.Name == "freshet_session" {
			t.Fatal("the device approval set a session cookie in the browser")
		}
	}
	if code := run.wait(t); code != 0 || !strings.Contains(run.stdout.String(), "Logged in to "+s.URL+" as jane@first.test (account first, role member); context \"headless\" saved.") {
		t.Fatalf("login: exit %d\n%s%s", code, run.stdout, run.errText())
	}
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"account", "list"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "first") || !strings.Contains(out.String(), "member") {
		t.Fatalf("account list with the saved context: exit %d %s%s", code, out.String(), errb.String())
	}

	// Denied at the verification page: the CLI says so.
	run = startDeviceLogin(t, login...)
	browser = newBrowser()
	u, _ = url.Parse(run.url)
	_, confirm = openDevicePage(t, browser, run.url)
	if code, page := pressDevice(t, browser, s.URL, u.Query().Get("user_code"), confirm, "deny"); code != http.StatusOK || !strings.Contains(page, "Denied") {
		t.Fatalf("deny: %d %q", code, page)
	}
	if code := run.wait(t); code != 1 || !strings.Contains(run.errText(), "access_denied") || !strings.Contains(run.errText(), "denied at the verification page") {
		t.Fatalf("denied login: exit %d\n%s", code, run.errText())
	}

	// A person whose email domain the account does not allow: the browser and the CLI both
	// get the reason.
	run = startDeviceLogin(t, login...)
	browser = newBrowser()
	u, _ = url.Parse(run.url)
	_, confirm = openDevicePage(t, browser, run.url)
	idp.QueueUser(&mockoidc.MockUser{Subject: "mallory", Email: "mallory@evil.test", EmailVerified: true})
	if code, page := pressDevice(t, browser, s.URL, u.Query().Get("user_code"), confirm, "approve"); code != http.StatusUnauthorized || !strings.Contains(page, `email domain \"evil.test\" is not allowed`) {
		t.Fatalf("outside domain: %d %q", code, page)
	}
	if code := run.wait(t); code != 1 || !strings.Contains(run.errText(), "access_denied") || !strings.Contains(run.errText(), `email domain "evil.test" is not allowed`) {
		t.Fatalf("outside domain login: exit %d\n%s", code, run.errText())
	}

	// Nobody approves in time: the CLI gives up after --timeout.
	run = startDeviceLogin(t, append(login, "--timeout", "2s")...)
	if code := run.wait(t); code != 1 || !strings.Contains(run.errText(), "not approved within 2s") {
		t.Fatalf("timeout: exit %d\n%s", code, run.errText())
	}

	// The server out of reach for a while (a restart, a replica going away) ends nothing: the
	// CLI says so once and polls on, and the approval given meanwhile logs it in.
	var down atomic.Bool
	target, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close() // a connection cut, as from a server that went away
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	viaFront := append([]string(nil), login...)
	viaFront[2] = front.URL
	run = startDeviceLogin(t, viaFront...)
	down.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(run.errText(), "Could not reach "+front.URL) {
		if time.Now().After(deadline) {
			t.Fatalf("the CLI did not say the server is out of reach:\n%s", run.errText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	down.Store(false)
	u, _ = url.Parse(run.url)
	browser = newBrowser()
	_, confirm = openDevicePage(t, browser, s.URL+"/auth/sso/device?"+u.RawQuery)
	idp.QueueUser(&mockoidc.MockUser{Subject: "jane", Email: "jane@first.test", EmailVerified: true})
	if code, page := pressDevice(t, browser, s.URL, u.Query().Get("user_code"), confirm, "approve"); code != http.StatusOK || !strings.Contains(page, "Approved") {
		t.Fatalf("approve after the outage: %d %q", code, page)
	}
	if code := run.wait(t); code != 0 || !strings.Contains(run.stdout.String(), "as jane@first.test") {
		t.Fatalf("login through an outage: exit %d\n%s%s", code, run.stdout, run.errText())
	}

	// A wrong code at the page is a clear refusal there.
	resp, err := newBrowser().Get(s.URL + "/auth/sso/device?user_code=BBBB-BBBB")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "is not a pending device login") {
		t.Fatalf("wrong user code: %d %q", resp.StatusCode, body)
	}

	// An account without SSO, and --device without --sso: refused by name.
	for _, c := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"login", "--server", s.URL, "--sso", "--device", "--account", "second"}, 1, "has no single sign-on configured"},
		{[]string{"login", "--server", s.URL, "--device", "--account", "first"}, 2, "--device is the device flow of single sign-on"},
		{[]string{"login", "--server", s.URL, "--sso", "--device", "--no-browser", "--account", "first"}, 2, "--no-browser"},
	} {
		var out, errb bytes.Buffer
		if code := Main(ctx, c.args, strings.NewReader(""), &out, &errb); code != c.exit || !strings.Contains(errb.String(), c.want) {
			t.Errorf("freshet %s: exit %d %q, want %d naming %q", strings.Join(c.args, " "), code, errb.String(), c.exit, c.want)
		}
	}
}
