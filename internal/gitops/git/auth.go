package git

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// DefaultTokenUsername is the user name sent with a token when none is configured. GitHub,
// GitLab and Gitea accept any non-empty name with a token; Bitbucket wants "x-token-auth".
const DefaultTokenUsername = "x-access-token"

// Credentials are how the runtime authenticates to one repository. The zero value is anonymous
// access. Secrets are never logged or put in errors.
type Credentials struct {
	// HTTPS: Token (sent as basic auth with Username, or DefaultTokenUsername), or a
	// Username and Password.
	Username string
	Password string
	Token    string

	// SSH: a PEM private key (RSA, ECDSA, Ed25519; OpenSSH format too), its passphrase if
	// encrypted, and known_hosts content to verify the server. Without SSHKnownHosts the host
	// key is checked against the user's known_hosts files unless InsecureIgnoreHostKey is set.
	SSHPrivateKey         []byte
	SSHPassphrase         string
	SSHKnownHosts         []byte
	InsecureIgnoreHostKey bool

	// TLS: extra PEM CA certificates trusted in addition to the system pool (self-signed or
	// private CAs), or no verification at all.
	CABundle              []byte
	InsecureSkipTLSVerify bool
	// TLSClientCert and TLSClientKey: a PEM client certificate and its key for mutual TLS
	// (Argo CD's tlsClientCertData and tlsClientCertKey), for git over HTTPS and chart
	// repositories alike.
	TLSClientCert []byte
	TLSClientKey  []byte

	// Chart repositories only. OCI marks the repository an OCI registry (Argo CD's
	// enableOCI), OCIPlainHTTP reaches it over plain HTTP (insecureOCIForceHttp).
	OCI          bool
	OCIPlainHTTP bool
}

// String never prints secrets.
func (c Credentials) String() string {
	kind := "anonymous"
	switch {
	case len(c.SSHPrivateKey) > 0:
		kind = "ssh-key"
	case c.Token != "":
		kind = "token"
	case c.Password != "":
		kind = "basic"
	}
	return fmt.Sprintf("credentials(%s)", kind)
}

// GoString is String, so %#v does not print secrets either.
func (c Credentials) GoString() string { return c.String() }

// Repo names a repository and how to reach it.
type Repo struct {
	URL         string
	Credentials Credentials
}

// authMethod builds the go-git auth for repo's transport.
func (c *Cache) authMethod(repo Repo, scheme, urlUser string) (transport.AuthMethod, error) {
	cr := repo.Credentials
	switch scheme {
	case "http", "https":
		switch {
		case cr.Token != "":
			user := cr.Username
			if user == "" {
				user = DefaultTokenUsername
			}
			return &githttp.BasicAuth{Username: user, Password: cr.Token}, nil
		case cr.Username != "" || cr.Password != "":
			return &githttp.BasicAuth{Username: cr.Username, Password: cr.Password}, nil
		}
		return nil, nil
	case "ssh":
		if len(cr.SSHPrivateKey) == 0 {
			return nil, errdefs.Invalid("credentials.sshPrivateKey", "", "is required for an ssh:// repository")
		}
		user := urlUser
		if user == "" {
			user = cr.Username
		}
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, cr.SSHPrivateKey, cr.SSHPassphrase)
		if err != nil {
			return nil, errdefs.Invalid("credentials.sshPrivateKey", "", "cannot be parsed (want a PEM or OpenSSH private key, with its passphrase if encrypted): "+err.Error())
		}
		switch {
		case len(cr.SSHKnownHosts) > 0:
			file, err := c.knownHostsFile(cr.SSHKnownHosts)
			if err != nil {
				return nil, err
			}
			cb, err := knownhosts.New(file)
			if err != nil {
				return nil, errdefs.Invalid("credentials.sshKnownHosts", "", "cannot be parsed: "+err.Error())
			}
			keys.HostKeyCallback = cb
		case cr.InsecureIgnoreHostKey:
			keys.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // asked for explicitly
		}
		return keys, nil
	}
	return nil, nil
}

// knownHostsFile writes known_hosts content to a file in the cache (knownhosts reads files) and
// returns its path; equal contents share one file.
func (c *Cache) knownHostsFile(content []byte) (string, error) {
	sum := sha256.Sum256(content)
	p := filepath.Join(c.dir, "ssh", "known_hosts-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".known_hosts-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}
