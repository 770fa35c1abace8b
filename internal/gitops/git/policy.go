package git

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"golang.org/x/net/proxy"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// How a Cache's policy (Options.Policy) reaches go-git, whose transports are process-wide:
//
//   - http and https: go-git's client is replaced, once, by one on netpolicy.ContextTransport;
//     the cache passes its policy in the context of every network operation, so redirects are
//     checked too.
//   - ssh: go-git dials through a proxy dialer when ProxyOptions name one; the cache names a
//     dialer type registered here that dials through its policy (and ALL_PROXY, as go-git
//     would, after checking the target).
//   - git://: go-git dials the host itself, so the cache resolves and checks the host and hands
//     go-git the address it checked.
//   - file://: the cache hands go-git the path with symlinks resolved, as the policy checked it.

var installTransports, installLocal sync.Once

// installLocalTransport serves file:// with go-git's in-process server when there is no git
// binary (the freshet image is scratch: a hosted runtime placed on Kubernetes reads its local
// installation repository there), since go-git's file transport runs git's upload-pack and
// receive-pack. With git installed, nothing changes.
func installLocalTransport() {
	installLocal.Do(func() {
		if _, err := exec.LookPath("git"); err != nil {
			client.InstallProtocol("file", server.DefaultServer)
		}
	})
}

func installPolicyTransports() {
	installTransports.Do(func() {
		c := githttp.NewClient(&http.Client{Transport: netpolicy.ContextTransport()})
		client.InstallProtocol("http", c)
		client.InstallProtocol("https", c)
		proxy.RegisterDialerType(sshPolicyScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
			p, ok := sshPolicies.Load(u.Host)
			if !ok {
				return nil, fmt.Errorf("no network policy %q", u.Host)
			}
			return policyDialer{p.(*netpolicy.Policy)}, nil
		})
	})
}

// sshPolicyScheme is the proxy URL scheme that makes go-git's ssh transport dial through a
// cache's policy; the URL's host names the policy in sshPolicies.
const sshPolicyScheme = "freshet-netpolicy"

// sshPolicies holds the policies of caches by id (one entry per cache with a policy).
var sshPolicies sync.Map

func registerSSHPolicy(p *netpolicy.Policy) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	sshPolicies.Store(id, p)
	return id
}

// policyDialer dials ssh through a policy, and through the environment's ALL_PROXY (as
// go-git does without a policy) after checking the target.
type policyDialer struct{ p *netpolicy.Policy }

func (d policyDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d policyDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	via := proxy.FromEnvironmentUsing(direct(d))
	if _, ok := via.(direct); !ok {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := d.p.Resolve(ctx, host); err != nil {
			return nil, err
		}
	}
	if cd, ok := via.(proxy.ContextDialer); ok {
		return cd.DialContext(ctx, network, addr)
	}
	return via.Dial(network, addr)
}

// direct connects through the policy's own dialer.
type direct struct{ p *netpolicy.Policy }

func (d direct) Dial(network, addr string) (net.Conn, error) {
	return d.p.DialContext(context.Background(), network, addr)
}

func (d direct) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.p.DialContext(ctx, network, addr)
}

// checkURL applies the cache's policy to a repository URL before anything is read or fetched.
func (c *Cache) checkURL(raw string) error {
	if c.opts.Policy == nil {
		return nil
	}
	return c.opts.Policy.CheckRepoURL("repoURL", raw)
}

// policyContext carries the cache's policy to the http transport.
func (c *Cache) policyContext(ctx context.Context) context.Context {
	return netpolicy.NewContext(ctx, c.opts.Policy)
}

// pin applies the policy to the URL handed to go-git: a local path with its symlinks resolved
// (what was checked is what git reads), a git:// host replaced by the address checked, and
// ssh dialed through the policy.
func (c *Cache) pin(ctx context.Context, tr *transportOpts, u *url.URL) error {
	p := c.opts.Policy
	if p == nil {
		return nil
	}
	switch u.Scheme {
	case "file":
		real, err := p.LocalRepo("repoURL", tr.url)
		if err != nil {
			return err
		}
		tr.url = "file://" + real
	case "git":
		addrs, err := p.Resolve(ctx, u.Hostname())
		if err != nil {
			return err
		}
		pinned := *u
		host := addrs[0].Unmap().String()
		if addrs[0].Unmap().Is6() {
			host = "[" + host + "]"
		}
		if port := u.Port(); port != "" {
			host += ":" + port
		}
		pinned.Host = host
		tr.url = strings.TrimRight(pinned.String(), "/")
	case "ssh":
		tr.proxy = transport.ProxyOptions{URL: sshPolicyScheme + "://" + c.sshPolicy}
	}
	return nil
}
