// Package netpolicy decides which URLs from tenants the server may use, and which addresses it
// may connect to on their behalf: the operator's answer to server-side request forgery.
//
// A Policy checks a URL before anything is fetched — its scheme, a host written as an address,
// "localhost", and for file:// URLs the path after symlinks are resolved (never the server's
// data directory, never outside the directories the operator allows) — and it checks again
// where it counts, at connect time: its dialer resolves a name once, refuses it when any of its
// addresses is refused, and connects to exactly the addresses it checked, so a name that
// resolves to 127.0.0.1 or 169.254.169.254, now or after a DNS change (rebinding), or a redirect
// to one, reaches nothing.
//
// Loopback, private, link-local, multicast and other special-purpose addresses are refused
// unless the operator allows their range (Options.PrivateNetworks); public addresses are always
// allowed. Git provider APIs (listing repositories with a tenant's token) are limited to the
// known SaaS hosts and those the operator lists.
//
// The package is a leaf: the control plane and the agents (runtimes, the GitOps engine) share
// it. Describe turns a connection failure into words without anything the remote sent, for
// error messages that must never echo a remote body.
package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// SaaSProviderHosts are the git provider API hosts every policy allows: GitHub's API, GitLab,
// Gitea's and Codeberg's public instances.
var SaaSProviderHosts = []string{"api.github.com", "gitlab.com", "gitea.com", "codeberg.org", "api.bitbucket.org"}

// Policy is the operator's decision about URLs from tenants. It is immutable and safe for
// concurrent use; build it with Options.Policy (or Unrestricted).
type Policy struct {
	fileDirs      []string // resolved directories file:// repositories may be in; "/" for any
	denyDirs      []string // directories no file:// URL may name (cleaned and resolved forms)
	ownRepos      []string // resolved local repositories always allowed (a runtime's installation repository)
	networks      []netip.Prefix
	networkNames  []string // as the operator wrote them, for messages
	anyProvider   bool
	providerHosts []string // lower-case host or host:port
	resolver      *net.Resolver
	proxies       map[string]bool // host:port of the environment's HTTP(S) proxies
}

// Unrestricted is the policy of a runtime in a customer's own network (a hybrid runtime):
// every address, every git provider, file:// repositories anywhere except in deny.
func Unrestricted(deny ...string) *Policy {
	p, _ := Options{FileRepoDirs: []string{"/"}, PrivateNetworks: []string{"all"}, ProviderHosts: []string{"*"}}.Policy(deny...) // valid options: no error
	return p
}

// WithOwnRepo returns a copy of p that also allows the local repository at dir (a runtime's
// own installation repository), even inside a denied directory.
func (p *Policy) WithOwnRepo(dir string) *Policy {
	q := *p
	q.ownRepos = append(slices.Clip(p.ownRepos), resolvePath(filepath.Clean(dir)))
	return &q
}

// CheckRepoURL checks a git repository URL (any form repourl.Parse accepts) for field: a
// file:// URL or absolute path must be inside a directory the operator allows and not in the
// data directory (after symlinks are resolved); a network URL must not name a refused address
// or localhost. Names are checked again when dialed.
func (p *Policy) CheckRepoURL(field, raw string) error {
	u, err := repourl.Parse(raw)
	if err != nil {
		var fe *errdefs.FieldError
		if errors.As(err, &fe) {
			return errdefs.Invalid(field, fe.Value, fe.Reason)
		}
		return errdefs.Invalid(field, repourl.Redact(raw), err.Error())
	}
	if u.Scheme == "file" {
		_, err := p.LocalRepo(field, raw)
		return err
	}
	return p.checkHost(field, repourl.Redact(raw), u.Hostname())
}

// CheckRepoURLNow is CheckRepoURL plus, for a network URL naming a host, a check of the
// addresses the name resolves to now: for URLs kept now and dialed later (an application's
// repository), so the caller hears at once what the dialer would refuse then. A name that does
// not resolve passes; the dialer decides when it does.
func (p *Policy) CheckRepoURLNow(ctx context.Context, field, raw string) error {
	if err := p.CheckRepoURL(field, raw); err != nil {
		return err
	}
	u, err := repourl.Parse(raw)
	if err != nil || u.Scheme == "file" {
		return err
	}
	var refused *Error
	if _, err := p.Resolve(ctx, u.Hostname()); errors.As(err, &refused) {
		return errdefs.Invalid(field, repourl.Redact(raw), fmt.Sprintf("names %s, which resolves to %s, %s: %s", refused.Host, refused.Addr, refused.What, refused.Allowed))
	}
	return nil
}

// LocalRepo checks a file:// URL or absolute path like CheckRepoURL and returns the
// repository's path with symlinks resolved: the path to hand to git, so that what is read is
// what was checked.
func (p *Policy) LocalRepo(field, raw string) (string, error) {
	u, err := repourl.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "file" {
		return "", errdefs.Invalid(field, repourl.Redact(raw), "is not a local repository")
	}
	clean := filepath.Clean(filepath.FromSlash(u.Path))
	real := resolvePath(clean)
	if slices.Contains(p.ownRepos, real) {
		return real, nil
	}
	if len(p.fileDirs) == 0 {
		return "", errdefs.Invalid(field, raw, "is a local path: this server allows no file:// repositories (the operator can allow directories with --allow-file-repos)")
	}
	for _, d := range p.denyDirs {
		if within(clean, d) || within(real, d) {
			return "", errdefs.Invalid(field, raw, "is inside the server's data directory, which no repository URL may name")
		}
	}
	for _, d := range p.fileDirs {
		if within(real, d) {
			return real, nil
		}
	}
	return "", errdefs.Invalid(field, raw, fmt.Sprintf("is outside the directories this server allows file:// repositories in (%s; symlinks resolved)", strings.Join(p.fileDirs, ", ")))
}

// CheckProviderURL checks a git provider API base URL for field: http(s), a host that is one
// of SaaSProviderHosts or that the operator lists, and no refused address.
func (p *Policy) CheckProviderURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
		return errdefs.Invalid(field, raw, "is not an http(s) URL")
	}
	if u.User != nil {
		return errdefs.Invalid(field, repourl.Redact(raw), "must not carry credentials: the token goes in its own header")
	}
	if !p.anyProvider {
		host, hostport := strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), strings.ToLower(u.Host)
		ok := slices.Contains(SaaSProviderHosts, host) && (u.Port() == "" || u.Port() == "443")
		for _, h := range p.providerHosts {
			ok = ok || h == hostport || h == host
		}
		if !ok {
			return errdefs.Invalid(field, raw, fmt.Sprintf("is not a git provider this server lists repositories from: it allows %s (the operator can add hosts with --git-provider-hosts)",
				strings.Join(append(slices.Clone(SaaSProviderHosts), p.providerHosts...), ", ")))
		}
	}
	return p.checkHost(field, raw, u.Hostname())
}

// CheckServerURL checks the URL of a server the runtime is to connect to (a managed cluster's
// API server) for field: no refused address or localhost. Names are checked again when
// dialed.
func (p *Policy) CheckServerURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errdefs.Invalid(field, raw, "is not a URL with a host")
	}
	return p.checkHost(field, raw, u.Hostname())
}

// checkHost refuses a host that is a refused address, or localhost (which always resolves to
// loopback, RFC 6761).
func (p *Policy) checkHost(field, shown, host string) error {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		for _, a := range []string{"127.0.0.1", "::1"} {
			if what := p.checkAddr(netip.MustParseAddr(a)); what != "" {
				return errdefs.Invalid(field, shown, fmt.Sprintf("names %s, which is %s: %s", host, what, p.allowedText()))
			}
		}
		return nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if what := p.checkAddr(a); what != "" {
			return errdefs.Invalid(field, shown, fmt.Sprintf("reaches %s, %s: %s", a.WithZone(""), what, p.allowedText()))
		}
		return nil
	}
	if otherAddressSpelling(h) {
		return errdefs.Invalid(field, shown, fmt.Sprintf("names %s, an IP address in a spelling other than dotted decimal (resolvers read 2130706433, 0x7f.1 or 127.1 as 127.0.0.1): write the address as a.b.c.d or use a DNS name", host))
	}
	return nil
}

// otherAddressSpelling reports whether h, which is not an address netip parses, is still an
// IPv4 address to the C resolver (inet_aton) and to browsers: a DNS name's last label is never
// all digits or hexadecimal with 0x.
func otherAddressSpelling(h string) bool {
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	last := strings.ToLower(labels[len(labels)-1])
	return last != "" && (strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x"))
}

// checkAddr returns what kind of refused address a is, or "" when it may be reached.
func (p *Policy) checkAddr(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	what := classify(a)
	if what == "" {
		return ""
	}
	for _, n := range p.networks {
		if n.Contains(a) {
			return ""
		}
	}
	return what
}

// allowedText says what the operator allows, for error messages.
func (p *Policy) allowedText() string {
	if len(p.networkNames) == 0 {
		return "URLs from tenants may reach public addresses only (the operator can allow ranges with --allow-private-networks)"
	}
	return "URLs from tenants may reach public addresses and " + strings.Join(p.networkNames, ", ") + " only (--allow-private-networks)"
}

// Error is a connection the policy refused at connect time. It unwraps to errdefs.ErrInvalid.
type Error struct {
	Host    string     // the name dialed (equal to Addr's text when an address was dialed)
	Addr    netip.Addr // the refused address
	What    string     // what kind of address it is ("a loopback address")
	Allowed string     // what the operator allows
}

func (e *Error) Error() string {
	if e.Host == e.Addr.String() {
		return fmt.Sprintf("connection to %s refused: it is %s; %s", e.Addr, e.What, e.Allowed)
	}
	return fmt.Sprintf("connection to %s refused: it resolves to %s, %s; %s", e.Host, e.Addr, e.What, e.Allowed)
}

// Unwrap makes a refusal an invalid argument: the tenant's URL is what is wrong.
func (e *Error) Unwrap() error { return errdefs.ErrInvalid }

// Resolve returns the addresses of host (an address or a name) for dialing, after checking
// every one of them: a name with any refused address is refused as a whole.
func (p *Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	h := strings.TrimSuffix(host, ".")
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else {
		r := p.resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", h); err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: h, IsNotFound: true}
		}
	}
	for _, a := range addrs {
		if what := p.checkAddr(a); what != "" {
			return nil, &Error{Host: h, Addr: a.Unmap().WithZone(""), What: what, Allowed: p.allowedText()}
		}
	}
	return addrs, nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// resolvePath resolves the symlinks of the longest existing prefix of an absolute, clean path
// and appends the rest.
func resolvePath(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Networks returns the refused ranges the policy allows anyway, as the operator wrote them
// (Options.PrivateNetworks): what a helper process builds the same policy from.
func (p *Policy) Networks() []string { return slices.Clone(p.networkNames) }
