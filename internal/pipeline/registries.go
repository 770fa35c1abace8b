package pipeline

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/repourl"
	"github.com/freshet-dev/freshet/internal/store"
)

// A registry context is stored like the others, as a JSON object of strings: these keys, the
// password encrypted under the same AAD as a secret context's value (account, context name,
// key). Its default flag is the store's registry_defaults row.
const (
	registryURL      = "url"
	registryUsername = "username"
	registryPassword = "password"
	registryCA       = "ca"
)

// Limits on what a registry context holds.
const (
	maxRegistryURL      = 255
	maxRegistryUsername = 255
)

// pathComponentRE is a repository path component as the distribution spec defines it.
var pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)

// hostLabelRE is one label of a DNS name.
var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

var portRE = regexp.MustCompile(`^[1-9][0-9]{0,4}$`)

// checkRegistryURL checks field's value v, a registry's address as image references write it:
// host[:port] and a path, which is optional unless needPath.
func checkRegistryURL(field, v string, needPath bool) error {
	valid := "give host[:port] and an optional path, as image references write it, e.g. ghcr.io/acme or 127.0.0.1:5000"
	if needPath {
		valid = "give host[:port]/path, as image references write it, e.g. ghcr.io/acme/app"
	}
	switch {
	case v == "":
		return errdefs.Invalid(field, v, "is required: "+valid)
	case len(v) > maxRegistryURL:
		return errdefs.Invalid(field, v, fmt.Sprintf("is longer than %d characters", maxRegistryURL))
	case strings.Contains(v, "://"):
		return errdefs.Invalid(field, v, "has a scheme: "+valid+" (registries are reached over HTTPS)")
	}
	hostPort, path, hasPath := strings.Cut(v, "/")
	if needPath && !hasPath {
		return errdefs.Invalid(field, v, "has no path: "+valid)
	}
	port, hasPort := "", false
	if strings.HasPrefix(hostPort, "[") { // [IPv6]:port
		end := strings.IndexByte(hostPort, ']')
		if end < 0 || net.ParseIP(hostPort[1:end]) == nil || !strings.Contains(hostPort[1:end], ":") {
			return errdefs.Invalid(field, v, "has a bad IPv6 address: write it as [address] or [address]:port")
		}
		if rest := hostPort[end+1:]; rest != "" {
			if rest[0] != ':' {
				return errdefs.Invalid(field, v, "has text after its IPv6 address: "+valid)
			}
			port, hasPort = rest[1:], true
		}
	} else {
		host := hostPort
		if i := strings.LastIndexByte(hostPort, ':'); i >= 0 {
			host, port, hasPort = hostPort[:i], hostPort[i+1:], true
		}
		if ip := net.ParseIP(host); ip == nil || ip.To4() == nil {
			for _, l := range strings.Split(host, ".") {
				if !hostLabelRE.MatchString(l) {
					return errdefs.Invalid(field, v, fmt.Sprintf("has host %q, which is not a DNS name or IP address (IPv6 in brackets): %s", host, valid))
				}
			}
		}
		// Image references read a first component without '.', ':' or capitals, other than
		// localhost, as a Docker Hub path: registry/app is docker.io/registry/app.
		if !hasPort && !strings.Contains(host, ".") && host != "localhost" && strings.ToLower(host) == host {
			return errdefs.Invalid(field, v, fmt.Sprintf("has host %q, which image references read as a Docker Hub namespace: give a host with a '.' or a port (registry.internal, registry:5000), or localhost", host))
		}
	}
	if n, err := strconv.Atoi(port); hasPort && (!portRE.MatchString(port) || err != nil || n > 65535) {
		return errdefs.Invalid(field, v, fmt.Sprintf("has port %q: give a number from 1 to 65535", port))
	}
	if hasPath {
		for _, c := range strings.Split(path, "/") {
			if !pathComponentRE.MatchString(c) {
				return errdefs.Invalid(field, v, fmt.Sprintf("has path component %q: use lower-case letters and digits, separated by '.', '_', '__' or '-', with no empty component or trailing '/'", c))
			}
		}
	}
	return nil
}

// checkCA checks that field holds PEM certificates and nothing else.
func checkCA(field, v string) error {
	if len(v) > maxContextValueBytes {
		return errdefs.Invalid(field, "", fmt.Sprintf("is larger than %d KiB", maxContextValueBytes>>10))
	}
	rest := []byte(v)
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return errdefs.Invalid(field, "", fmt.Sprintf("holds a %s block (block %d): give only CERTIFICATE blocks", block.Type, n))
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return errdefs.Invalid(field, "", fmt.Sprintf("holds a certificate that cannot be parsed (block %d): %v", n, err))
		}
	}
	if n == 0 {
		return errdefs.Invalid(field, "", "holds no PEM certificate: give one or more -----BEGIN CERTIFICATE----- blocks")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return errdefs.Invalid(field, "", fmt.Sprintf("has text after its last certificate (block %d) that is not PEM", n))
	}
	return nil
}

// sealRegistry checks a registry context's registry and returns it as stored, the password
// encrypted. old is the context it replaces (nil when created): a password of MaskedValue keeps
// old's password, but only for the same URL and CA — a credential never follows a changed URL,
// or a CA that would let another host pass for the registry, unless it is given again, so
// whoever may edit contexts but not read secrets cannot send the stored password to a server
// of their choosing.
func (s *Service) sealRegistry(accountID, name string, r Registry, old *store.ConfigContext) (string, error) {
	if err := checkRegistryURL("registry.url", r.URL, false); err != nil {
		return "", err
	}
	if len(r.Username) > maxRegistryUsername {
		return "", errdefs.Invalid("registry.username", r.Username, fmt.Sprintf("is longer than %d characters", maxRegistryUsername))
	}
	if strings.ContainsFunc(r.Username, func(c rune) bool { return c == ':' || unicode.IsControl(c) }) {
		return "", errdefs.Invalid("registry.username", r.Username, "holds ':' or a control character, which registries' basic authentication cannot carry")
	}
	if len(r.Password) > maxContextValueBytes {
		return "", errdefs.Invalid("registry.password", "", fmt.Sprintf("is larger than %d KiB", maxContextValueBytes>>10))
	}
	if r.CA != "" {
		if err := checkCA("registry.ca", r.CA); err != nil {
			return "", err
		}
	}
	stored := map[string]string{registryURL: r.URL}
	if r.Username != "" {
		stored[registryUsername] = r.Username
	}
	if r.CA != "" {
		stored[registryCA] = r.CA
	}
	switch r.Password {
	case "":
		if r.Username != "" {
			return "", errdefs.Invalid("registry.password", "", "is required with registry.username: give the password or token")
		}
	case MaskedValue:
		was, err := storedValues(old)
		if err != nil {
			return "", err
		}
		if stored[registryPassword], err = keepMasked("registry.password", was[registryPassword],
			boundTo{"registry.url", was[registryURL], r.URL}, boundTo{"registry.ca", was[registryCA], r.CA}); err != nil {
			return "", err
		}
	default:
		ct, err := s.keys.Encrypt([]byte(r.Password), contextAAD(accountID, name, registryPassword))
		if err != nil {
			return "", err
		}
		stored[registryPassword] = ct
	}
	return encodeJSON(stored), nil
}

// jobRegistry returns registry context c, decrypted, as a job carries it.
func (s *Service) jobRegistry(c store.ConfigContext) (runnerv1.Registry, error) {
	vals, err := s.contextValues(c)
	if err != nil {
		return runnerv1.Registry{}, err
	}
	return runnerv1.Registry{Name: c.Name, URL: vals[registryURL], Username: vals[registryUsername], Password: vals[registryPassword],
		CA: vals[registryCA], Default: c.Default}, nil
}

// defaultRegistry returns the account's default registry context; ok is false when it has none.
func (s *Service) defaultRegistry(ctx context.Context, accountID string) (c store.ConfigContext, ok bool, err error) {
	c, err = s.db.DefaultContext(ctx, accountID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return c, false, nil
	}
	return c, err == nil, err
}

// Limits on what a runner reports about pushed images.
const (
	maxImagesPerStep = 100
	maxTagsPerImage  = 100
)

var (
	tagRE    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE = regexp.MustCompile(`^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$`)
)

// checkImages checks the images a runner reports with a step, naming the field of the first
// that is wrong.
func checkImages(imgs []runnerv1.Image) error {
	if len(imgs) > maxImagesPerStep {
		return errdefs.Invalid("images", strconv.Itoa(len(imgs)), fmt.Sprintf("are more than %d images for one step", maxImagesPerStep))
	}
	for i, im := range imgs {
		f := fmt.Sprintf("images[%d].", i)
		if !nameRE.MatchString(im.Registry) {
			return errdefs.Invalid(f+"registry", im.Registry, "is not a registry context's name")
		}
		if err := checkRegistryURL(f+"repository", im.Repository, true); err != nil {
			return err
		}
		if len(im.Tags) > maxTagsPerImage {
			return errdefs.Invalid(f+"tags", strconv.Itoa(len(im.Tags)), fmt.Sprintf("are more than %d tags", maxTagsPerImage))
		}
		for j, t := range im.Tags {
			if !tagRE.MatchString(t) {
				return errdefs.Invalid(fmt.Sprintf("%stags[%d]", f, j), t, "is not an image tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'")
			}
		}
		if !digestRE.MatchString(im.Digest) {
			return errdefs.Invalid(f+"digest", im.Digest, "is not a manifest digest: give sha256: and 64 lower-case hex digits (or sha512: and 128)")
		}
		if im.Size < 0 {
			return errdefs.Invalid(f+"size", strconv.FormatInt(im.Size, 10), "is negative")
		}
	}
	return nil
}

// recordImages records the images step of build b pushed, in one transaction that holds
// runner r's lease l on b: a report under a lease that is gone (the build was requeued to
// another runner, or ended) stores nothing. A retried report stores nothing twice.
func (s *Service) recordImages(ctx context.Context, r Runner, l runnerv1.Lease, b store.Build, step string, imgs []runnerv1.Image) error {
	now := s.now()
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		held, err := tx.HoldLease(ctx, r.AccountID, b.ID, r.ID, l.LeaseID)
		if err != nil {
			return err
		}
		if !held {
			return fmt.Errorf("lease %s on build %s is not held: %w", l.LeaseID, b.ID, errLeaseLost)
		}
		for _, im := range imgs {
			_, err := tx.PutBuildImage(ctx, store.BuildImage{ID: store.NewID(store.PrefixImage), AccountID: b.AccountID, BuildID: b.ID, Step: step,
				Registry: im.Registry, Repository: im.Repository, Tags: im.Tags, Digest: im.Digest, Size: im.Size, SHA: b.SHA, Branch: b.Branch,
				CreatedAt: now})
			if err != nil {
				return err
			}
			// The same image in the account's reported images, linked to the build's commit and
			// the issues its message and branch name (docs/analytics.md, "Images").
			keys := images.Resolve(append(images.ParseKeys(b.CommitMessage), images.BranchKeys(b.Branch)...), b.Repo)
			if len(keys) > images.MaxKeys {
				keys = keys[:images.MaxKeys]
			}
			_, _, err = tx.PutImageReport(ctx, store.ImageReport{ID: store.NewID(store.PrefixImageReport), AccountID: b.AccountID,
				Registry: im.Registry, Repository: im.Repository, Digest: im.Digest, Tags: im.Tags, SHA: b.SHA, Branch: b.Branch,
				RepoURL: repourl.Redact(b.Repo), CommitMessage: images.Truncate(b.CommitMessage), CommitAuthor: b.CommitAuthor, Issues: keys,
				ReportedBy: "build " + b.ID, BuildID: b.ID, CreatedAt: now, UpdatedAt: now})
			if err != nil {
				return err
			}
		}
		return nil
	})
}
