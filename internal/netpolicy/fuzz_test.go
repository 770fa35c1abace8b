package netpolicy_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// FuzzCheckRepoURL: whatever the input, a URL the server's default policy accepts is a network
// URL whose host is neither localhost nor a special-purpose address, and a file:// URL that
// `freshet up`'s policy accepts resolves outside the data dir.
func FuzzCheckRepoURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/org/repo.git", "git@github.com:org/repo", "file:///etc", "file://localhost/etc", "/etc/passwd",
		"http://127.0.0.1:8080/x", "http://[::ffff:127.0.0.1]/x", "http://[fe80::1%25lo]/x", "http://169.254.169.254/latest",
		"http://LOCALHOST./x", "ssh://git@[::1]:22/x", "git://0.0.0.0/x", "http://2130706433/x", "http://0x7f.1/x", "file:////data/x",
		"file:///data/../data/x", "http://[64:ff9b::a9fe:a9fe]/", "https://user:pw@10.0.0.1/x",
	} {
		f.Add(s)
	}
	data := filepath.Join(f.TempDir(), "data")
	server, err := netpolicy.Options{}.Policy(data)
	if err != nil {
		f.Fatal(err)
	}
	local, err := netpolicy.Options{FileRepoDirs: []string{"/"}, PrivateNetworks: []string{"loopback", "private"}}.Policy(data)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if err := server.CheckRepoURL("repoURL", raw); err == nil {
			u, perr := repourl.Parse(raw)
			if perr != nil {
				t.Fatalf("%q accepted but does not parse: %v", raw, perr)
			}
			if u.Scheme == "file" {
				t.Fatalf("%q: a file URL accepted by the server defaults", raw)
			}
			host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
			if host == "localhost" || strings.HasSuffix(host, ".localhost") {
				t.Fatalf("%q: localhost accepted", raw)
			}
			if a, err := netip.ParseAddr(host); err == nil {
				a = a.Unmap().WithZone("")
				if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() || !a.IsGlobalUnicast() {
					t.Fatalf("%q: address %s accepted", raw, a)
				}
			}
		}
		if err := local.CheckRepoURL("repoURL", raw); err == nil {
			if u, _ := repourl.Parse(raw); u != nil && u.Scheme == "file" {
				p, err := local.LocalRepo("repoURL", raw)
				if err != nil || p == data || strings.HasPrefix(p, data+string(filepath.Separator)) {
					t.Fatalf("%q: resolves to %q (%v), in the data dir", raw, p, err)
				}
			}
		}
	})
}
