package netpolicy

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/net/http/httpproxy"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Flag names, also FRESHET_ALLOW_FILE_REPOS, FRESHET_ALLOW_PRIVATE_NETWORKS and
// FRESHET_GIT_PROVIDER_HOSTS, and keys of the config file.
const (
	FlagFileRepos       = "allow-file-repos"
	FlagPrivateNetworks = "allow-private-networks"
	FlagProviderHosts   = "git-provider-hosts"
)

// Options are the operator's settings a Policy is built from.
type Options struct {
	// FileRepoDirs are the directories whose repositories file:// URLs (and absolute paths)
	// may name; "/" allows any directory. Empty: no file:// repositories. The data directory
	// is never allowed, whatever this says.
	FileRepoDirs []string
	// PrivateNetworks are the refused ranges tenants' URLs may reach anyway: CIDRs, addresses,
	// or the keywords loopback, private, link-local and all.
	PrivateNetworks []string
	// ProviderHosts are git provider API hosts (host or host:port) tenants may list
	// repositories from besides SaaSProviderHosts; "*" allows any.
	ProviderHosts []string
	// Resolver resolves names for the dialer (nil: the system's). Not a flag: tests use it
	// to make a name resolve where they want.
	Resolver *net.Resolver
}

// Defaults are a command's default Options.
type Defaults struct {
	FileRepoDirs, PrivateNetworks, ProviderHosts []string
}

// ServerDefaults are `freshet server`'s: no file:// repositories, public addresses only, the
// SaaS git providers only.
var ServerDefaults = Defaults{}

// LocalDefaults are `freshet up`'s, a single user's quick start on their own machine: file://
// repositories anywhere but the data directory, loopback and private networks (a Gitea on
// localhost, a GitLab on the LAN), any git provider. Link-local addresses (cloud instance
// metadata) stay refused.
var LocalDefaults = Defaults{FileRepoDirs: []string{"/"}, PrivateNetworks: []string{"loopback", "private"}, ProviderHosts: []string{"*"}}

// BindFlags registers the options on fs with the defaults d.
func (o *Options) BindFlags(fs *pflag.FlagSet, d Defaults) {
	fs.StringSliceVar(&o.FileRepoDirs, FlagFileRepos, d.FileRepoDirs,
		"directories whose git repositories tenants may name with file:// URLs (\"/\": any); never the data dir, never file://localhost")
	fs.StringSliceVar(&o.PrivateNetworks, FlagPrivateNetworks, d.PrivateNetworks,
		"address ranges otherwise refused that URLs from tenants may reach: CIDRs, addresses, or loopback, private, link-local, all; empty: public addresses only")
	fs.StringSliceVar(&o.ProviderHosts, FlagProviderHosts, d.ProviderHosts,
		"git provider API hosts (host or host:port) tenants may list repositories from besides "+strings.Join(SaaSProviderHosts, ", ")+` ("*": any)`)
}

// Validate names the first bad option.
func (o Options) Validate() error {
	for _, d := range o.FileRepoDirs {
		if !filepath.IsAbs(d) {
			return errdefs.Invalid(FlagFileRepos, d, "is not an absolute directory path")
		}
	}
	for _, n := range o.PrivateNetworks {
		if _, err := parseNetwork(n); err != nil {
			return err
		}
	}
	for _, h := range o.ProviderHosts {
		if h == "*" {
			continue
		}
		if u, err := url.Parse("https://" + h); err != nil || u.Host != h || u.Path != "" || u.User != nil || h == "" {
			return errdefs.Invalid(FlagProviderHosts, h, "is not a host or host:port (like gitlab.example.com or git.corp:8443)")
		}
	}
	return nil
}

func parseNetwork(n string) ([]netip.Prefix, error) {
	n = strings.ToLower(strings.TrimSpace(n))
	if ps, ok := networkKeywords[n]; ok {
		return ps, nil
	}
	if p, err := netip.ParsePrefix(n); err == nil {
		return []netip.Prefix{p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(n); err == nil {
		a = a.Unmap()
		return []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}, nil
	}
	return nil, errdefs.Invalid(FlagPrivateNetworks, n, "is not a CIDR (10.20.0.0/16), an address, or one of loopback, private, link-local, all")
}

// Policy builds the policy. deny are directories no file:// URL may name: the data directory
// of the process.
func (o Options) Policy(deny ...string) (*Policy, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{resolver: o.Resolver, proxies: envProxies()}
	for _, d := range o.FileRepoDirs {
		p.fileDirs = append(p.fileDirs, resolvePath(filepath.Clean(d)))
	}
	for _, d := range deny {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = filepath.Clean(d) // no working directory: a relative dir is denied as written
		}
		p.denyDirs = append(p.denyDirs, abs, resolvePath(abs))
	}
	for _, n := range o.PrivateNetworks {
		ps, _ := parseNetwork(n)
		p.networks = append(p.networks, ps...)
		p.networkNames = append(p.networkNames, strings.ToLower(strings.TrimSpace(n)))
	}
	for _, h := range o.ProviderHosts {
		if h == "*" {
			p.anyProvider = true
			continue
		}
		p.providerHosts = append(p.providerHosts, strings.ToLower(h))
	}
	slices.Sort(p.providerHosts)
	return p, nil
}

// envProxies are the proxies the environment configures (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY):
// the operator's, so the dialer may reach them wherever they are. A proxied request's target
// is checked by name before it is handed to the proxy.
func envProxies() map[string]bool {
	out := map[string]bool{}
	cfg := httpproxy.FromEnvironment()
	all := os.Getenv("ALL_PROXY")
	if all == "" {
		all = os.Getenv("all_proxy")
	}
	for _, raw := range []string{cfg.HTTPProxy, cfg.HTTPSProxy, all} {
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			if u, err = url.Parse("http://" + raw); err != nil || u.Host == "" {
				continue
			}
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "socks5": "1080"}[u.Scheme]
			if port == "" {
				port = "80"
			}
		}
		out[net.JoinHostPort(u.Hostname(), port)] = true
	}
	return out
}
