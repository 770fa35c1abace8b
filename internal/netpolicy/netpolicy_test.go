package netpolicy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/fakedns"
)

func policy(t testing.TB, o netpolicy.Options, deny ...string) *netpolicy.Policy {
	t.Helper()
	p, err := o.Policy(deny...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServerDefaultsRefuseLocalAndSpecialURLs(t *testing.T) {
	data := t.TempDir()
	p := policy(t, netpolicy.Options{}, data)
	for _, raw := range []string{
		"file://localhost/etc", "file://localhost" + data + "/x.git", "file:///etc", "/etc", "file://" + data + "/hosted/a/installation.git",
		"http://127.0.0.1:1/x.git", "http://127.1.2.3/x", "http://[::1]/x", "http://169.254.169.254/latest/meta-data",
		"http://localhost/x", "http://LOCALHOST./x", "https://gitea.localhost/x", "https://10.1.2.3/x", "http://0.0.0.0/x",
		"http://[::ffff:127.0.0.1]/x", "http://[fe80::1%25eth0]/x", "http://[64:ff9b::7f00:1]/x", "http://100.64.0.1/x",
		"http://192.168.1.1/x", "http://172.31.255.255/x", "http://[fd00::1]/x", "http://224.0.0.1/x", "http://255.255.255.255/x",
		"git://127.0.0.1/x", "ssh://git@127.0.0.1/x", "git@127.0.0.1:org/repo", "git@[::1]:org/repo", "ftp://example.com/x",
		"", "not a url", "http://2130706433/x", "http://0x7f.1/x", "http://127.1/x", "https://0X7F000001/x", "http://017700000001/x",
	} {
		err := p.CheckRepoURL("specRepo", raw)
		if err == nil {
			t.Errorf("%q was allowed", raw)
			continue
		}
		if errdefs.Field(err) != "specRepo" || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%q: error %v does not name specRepo as invalid", raw, err)
		}
	}
	for _, raw := range []string{"https://github.com/org/repo", "git@github.com:org/repo.git", "https://93.184.216.34/x", "http://example.com:8080/x",
		"ssh://git@gitlab.com/g/r", "https://[2606:4700::1111]/x"} {
		if err := p.CheckRepoURL("specRepo", raw); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
	err := p.CheckRepoURL("specRepo", "http://169.254.169.254/")
	for _, want := range []string{"169.254.169.254", "link-local", "public addresses only", "--allow-private-networks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := p.CheckRepoURL("specRepo", "file:///srv/git/x"); !strings.Contains(err.Error(), "--allow-file-repos") {
		t.Errorf("file URL refused with %q", err)
	}
}

func TestFileRepositoriesStayOutOfTheDataDir(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	repos := filepath.Join(root, "repos")
	for _, d := range []string{filepath.Join(data, "hosted", "a", "installation.git"), filepath.Join(data, "hosted", "b", "installation.git"), filepath.Join(repos, "app.git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink in an allowed directory that points into the data dir.
	if err := os.Symlink(filepath.Join(data, "hosted", "b"), filepath.Join(repos, "sneaky")); err != nil {
		t.Fatal(err)
	}
	p := policy(t, netpolicy.Options{FileRepoDirs: []string{repos}}, data)
	if got, err := p.LocalRepo("repoURL", "file://"+repos+"/app.git"); err != nil || got != resolve(t, filepath.Join(repos, "app.git")) {
		t.Fatalf("allowed repository: %q, %v", got, err)
	}
	for _, raw := range []string{
		"file://" + repos + "/sneaky/installation.git", "file://" + repos + "/../data/hosted/b/installation.git", "file://" + data + "/hosted/b/installation.git",
		"file:///etc", "file://localhost" + repos + "/app.git", repos + "/sneaky/installation.git", "file://" + repos + "/sneaky/not-yet-there.git",
	} {
		if err := p.CheckRepoURL("repoURL", raw); err == nil {
			t.Errorf("%q was allowed", raw)
		}
	}
	// A hosted runtime may read its own installation repository, and only that one.
	own := p.WithOwnRepo(filepath.Join(data, "hosted", "a", "installation.git"))
	if err := own.CheckRepoURL("repoURL", "file://"+data+"/hosted/a/installation.git"); err != nil {
		t.Errorf("own installation repository: %v", err)
	}
	if err := own.CheckRepoURL("repoURL", "file://"+data+"/hosted/b/installation.git"); err == nil {
		t.Error("another tenant's installation repository was allowed")
	}
	if err := p.CheckRepoURL("repoURL", "file://"+data+"/hosted/a/installation.git"); err == nil {
		t.Error("WithOwnRepo changed the policy it copied")
	}
	// `freshet up`: anywhere but the data dir.
	local := policy(t, netpolicy.Options{FileRepoDirs: []string{"/"}, PrivateNetworks: []string{"loopback", "private"}}, data)
	if err := local.CheckRepoURL("repoURL", "file://"+repos+"/app.git"); err != nil {
		t.Error(err)
	}
	if err := local.CheckRepoURL("repoURL", "file://"+repos+"/sneaky/installation.git"); err == nil {
		t.Error("a symlink into the data dir was allowed under freshet up's defaults")
	}
	if err := local.CheckRepoURL("repoURL", "http://127.0.0.1:3000/me/app.git"); err != nil {
		t.Error(err)
	}
	if err := local.CheckRepoURL("repoURL", "http://169.254.169.254/"); err == nil {
		t.Error("freshet up's defaults allow instance metadata")
	}
}

func resolve(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProviderURLs(t *testing.T) {
	p := policy(t, netpolicy.Options{ProviderHosts: []string{"gitlab.corp.example", "git.example.org:8443"}})
	for _, raw := range []string{"https://api.github.com", "https://gitlab.com", "https://gitlab.corp.example/", "https://git.example.org:8443", "https://codeberg.org"} {
		if err := p.CheckProviderURL("baseURL", raw); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
	for _, raw := range []string{"https://evil.example", "http://127.0.0.1:8080", "http://169.254.169.254", "https://api.github.com:8443",
		"https://git.example.org", "file:///etc", "https://user:pw@gitlab.com", "gitlab.com", "https://localhost"} {
		err := p.CheckProviderURL("baseURL", raw)
		if err == nil || errdefs.Field(err) != "baseURL" {
			t.Errorf("%q: %v", raw, err)
		}
	}
	if err := p.CheckProviderURL("baseURL", "https://evil.example"); !strings.Contains(err.Error(), "gitlab.corp.example") || !strings.Contains(err.Error(), "--git-provider-hosts") {
		t.Errorf("the refusal does not say what is allowed: %v", err)
	}
	// A listed host still may not reach a refused address.
	q := policy(t, netpolicy.Options{ProviderHosts: []string{"127.0.0.1:3000"}})
	if err := q.CheckProviderURL("baseURL", "http://127.0.0.1:3000"); err == nil {
		t.Error("a listed loopback provider was allowed without --allow-private-networks")
	}
	if err := netpolicy.Unrestricted().CheckProviderURL("baseURL", "http://10.0.0.5:3000"); err != nil {
		t.Errorf("unrestricted: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []netpolicy.Options{
		{FileRepoDirs: []string{"relative/dir"}},
		{PrivateNetworks: []string{"10.0.0.0/33"}},
		{PrivateNetworks: []string{"everything"}},
		{ProviderHosts: []string{"https://gitlab.example.com"}},
		{ProviderHosts: []string{"gitlab.example.com/api"}},
	} {
		if err := o.Validate(); err == nil || !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if err := (netpolicy.Options{FileRepoDirs: []string{"/srv/git"}, PrivateNetworks: []string{"10.20.0.0/16", "192.168.1.5", "loopback"}, ProviderHosts: []string{"*"}}).Validate(); err != nil {
		t.Error(err)
	}
}

// recorder is a TCP listener that counts the connections it accepts.
func recorder(t *testing.T, addr string) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), &n
}

func TestDialerChecksWhatItConnectsTo(t *testing.T) {
	addr, hits := recorder(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(addr)
	dns := fakedns.Start(t, map[string][]string{
		"evil.test":   {"127.0.0.1"},
		"mixed.test":  {"93.184.216.34", "127.0.0.1"},
		"meta.test":   {"169.254.169.254"},
		"mapped.test": {"::ffff:127.0.0.1"},
	})
	p := policy(t, netpolicy.Options{Resolver: dns.Resolver()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, host := range []string{"evil.test", "mixed.test", "meta.test", "mapped.test", "127.0.0.1", "[::1]", "localhost"} {
		c, err := p.DialContext(ctx, "tcp", net.JoinHostPort(strings.Trim(host, "[]"), port))
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", host)
			continue
		}
		if !netpolicy.IsRefused(err) || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v is not a refusal", host, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the listener saw %d connections", n)
	}
	// The operator allows loopback: the same name connects, to the address that was checked.
	allowed := policy(t, netpolicy.Options{Resolver: dns.Resolver(), PrivateNetworks: []string{"loopback"}})
	c, err := allowed.DialContext(ctx, "tcp", net.JoinHostPort("evil.test", port))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := allowed.DialContext(ctx, "tcp", net.JoinHostPort("meta.test", port)); !netpolicy.IsRefused(err) {
		t.Errorf("link-local with loopback allowed: %v", err)
	}
}

// A name is resolved once per connection: an answer that changes after the check (DNS
// rebinding) cannot slip a refused address in.
func TestDialerPinsWhatItChecked(t *testing.T) {
	addr, hits := recorder(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(addr)
	dns := fakedns.Start(t, map[string][]string{"rebind.test": {"127.0.0.2"}})
	p := policy(t, netpolicy.Options{Resolver: dns.Resolver(), PrivateNetworks: []string{"127.0.0.2"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// 127.0.0.2 is allowed but nothing listens there on port: the dial fails without reaching 127.0.0.1.
	if c, err := p.DialContext(ctx, "tcp", net.JoinHostPort("rebind.test", port)); err == nil {
		c.Close()
		t.Fatal("connected to 127.0.0.2, where nothing listens")
	}
	dns.Set("rebind.test", "127.0.0.1")
	if _, err := p.DialContext(ctx, "tcp", net.JoinHostPort("rebind.test", port)); !netpolicy.IsRefused(err) {
		t.Fatalf("after rebinding: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback listener saw %d connections", n)
	}
}

func TestHTTPClientRefusesRedirectsToRefusedAddresses(t *testing.T) {
	var internal atomic.Int32
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internal.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	defer secret.Close()
	// The "allowed" server listens on 127.0.0.2, which the policy allows; it redirects to
	// 127.0.0.1, which it does not.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	allowed := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.RedirectHandler(secret.URL+"/latest/meta-data", http.StatusFound)}}
	allowed.Start()
	defer allowed.Close()
	p := policy(t, netpolicy.Options{PrivateNetworks: []string{"127.0.0.2/32"}})
	for name, hc := range map[string]*http.Client{
		"policy client":     p.HTTPClient(5 * time.Second),
		"context transport": {Transport: netpolicy.ContextTransport()},
	} {
		req, _ := http.NewRequestWithContext(netpolicy.NewContext(context.Background(), p), http.MethodGet, allowed.URL, nil)
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: followed the redirect: %s", name, body)
			continue
		}
		if !netpolicy.IsRefused(err) || strings.Contains(err.Error(), "internal secret") {
			t.Errorf("%s: %v", name, err)
		}
		if d := netpolicy.Describe(err); !strings.Contains(d, "127.0.0.1") {
			t.Errorf("%s: Describe = %q", name, d)
		}
	}
	if n := internal.Load(); n != 0 {
		t.Fatalf("the internal server got %d requests", n)
	}
	// Without a policy in the context, the context transport connects anywhere (other callers
	// of a process-wide client are unaffected).
	resp, err := (&http.Client{Transport: netpolicy.ContextTransport()}).Get(secret.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestDescribeKeepsRemoteBytesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Like a line-based internal service: it reads the request line, then answers in its
			// own protocol.
			bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "-ERR internal-redis-banner secret\r\n")
			c.Close()
		}
	}()
	_, err = http.Get("http://" + ln.Addr().String() + "/")
	if err == nil || !strings.Contains(err.Error(), "internal-redis-banner") {
		t.Fatalf("the raw error was expected to carry the banner (the reason for Describe): %v", err)
	}
	if d := netpolicy.Describe(err); strings.Contains(d, "banner") {
		t.Fatalf("Describe echoes the remote: %q", d)
	}
	if d := netpolicy.Describe(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}); d != "cannot connect: connection refused" {
		t.Errorf("Describe(dial) = %q", d)
	}
}

// A host that netip does not parse but the C resolver (inet_aton) and browsers read as an
// IPv4 address is refused wherever a URL is checked, with the way to write it instead.
func TestOtherAddressSpellingsRefused(t *testing.T) {
	p := policy(t, netpolicy.Options{}, t.TempDir())
	for _, raw := range []string{"https://2130706433:6443", "https://0x7f000001", "https://10.1:6443", "https://1.2.3.0x4"} {
		err := p.CheckServerURL("server", raw)
		if err == nil || errdefs.Field(err) != "server" || !strings.Contains(err.Error(), "dotted decimal") {
			t.Errorf("%q: %v", raw, err)
		}
	}
	for _, raw := range []string{"https://kube.example.com:6443", "https://93.184.216.34:6443", "https://k8s-1.internal2.example"} {
		if err := p.CheckServerURL("server", raw); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
