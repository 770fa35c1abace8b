// Package helmrepo fetches Helm charts from HTTP(S) chart repositories for the GitOps engine,
// as Argo CD's repo-server does for an Application whose source names a chart: it reads the
// repository's index.yaml, picks the version targetRevision names (an exact version or a
// semver range such as 1.2.* or ">=1.0 <2"), downloads the chart archive, checks it against
// the digest the index gives, and unpacks it once into a cache directory keyed by that digest.
//
// A version is downloaded once per runtime, not once per application: applications that need
// the same chart at once share one download, and later ones find it on disk. Indexes are kept
// for Options.IndexTTL. Every connection goes through the operator's network policy
// (internal/netpolicy), redirects included; basic-auth credentials are only sent to the
// repository's own host. Archives and indexes are bounded in size.
package helmrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Masterminds/semver/v3"
	"golang.org/x/sync/singleflight"
	"helm.sh/helm/v3/pkg/chartutil"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Defaults for Options.
const (
	// DefaultIndexTTL is how long a repository's index is used before it is read again (so a
	// range picks up a new version within it).
	DefaultIndexTTL      = 3 * time.Minute
	DefaultMaxIndexBytes = 64 << 20
	DefaultMaxChartBytes = 64 << 20
	DefaultTimeout       = 2 * time.Minute
)

// Options configure a Cache.
type Options struct {
	// Dir holds the unpacked charts (required).
	Dir string
	// Policy checks repository URLs and every connection (nil: none).
	Policy        *netpolicy.Policy
	IndexTTL      time.Duration
	MaxIndexBytes int64
	MaxChartBytes int64
	// Timeout bounds one index read or one download.
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Credentials authenticate to one repository. Secrets are never logged or put in errors.
type Credentials struct {
	Username string
	Password string
	// CABundle is extra PEM CA certificates trusted besides the system pool.
	CABundle              []byte
	InsecureSkipTLSVerify bool
	// TLSClientCert and TLSClientKey are a PEM client certificate and its key, presented to
	// the repository (Argo CD's tlsClientCertData and tlsClientCertKey).
	TLSClientCert []byte
	TLSClientKey  []byte
	// PlainHTTP reaches an OCI registry over plain HTTP (Argo CD's insecureOCIForceHttp).
	PlainHTTP bool
}

// String never prints secrets.
func (c Credentials) String() string {
	if c.Password != "" {
		return "credentials(basic)"
	}
	return "credentials(anonymous)"
}

// GoString is String.
func (c Credentials) GoString() string { return c.String() }

// Chart is a chart version in the cache.
type Chart struct {
	Repo    string // the repository URL, as given
	Name    string
	Version string
	Digest  string // sha256 of the archive, hex; from the index when it gives one
	// Dir holds the unpacked chart in the subdirectory Name. It is shared: only read it.
	Dir string
}

// Stats count network work, for tests and benchmarks.
type Stats struct {
	IndexFetches int64
	Downloads    int64
}

// Errors, found with errors.Is.
var (
	// ErrVersionNotFound: the repository has no version of the chart that targetRevision
	// names (or no such chart).
	ErrVersionNotFound = fmt.Errorf("chart version not found: %w", errdefs.ErrNotFound)
	// ErrAuth: the repository refused the credentials (HTTP 401 or 403).
	ErrAuth = fmt.Errorf("chart repository refused the credentials: %w", errdefs.ErrForbidden)
	// ErrDigest: the archive downloaded is not the one the index names.
	ErrDigest = fmt.Errorf("chart digest mismatch: %w", errdefs.ErrInvalid)
	// ErrInvalid: the repository URL, its index or a chart archive is not valid.
	ErrInvalid = fmt.Errorf("invalid chart repository: %w", errdefs.ErrInvalid)
	// ErrUnavailable: the repository could not be reached or answered with a server error;
	// worth retrying.
	ErrUnavailable = fmt.Errorf("chart repository unavailable: %w", errdefs.ErrUnavailable)
)

// Cache resolves and caches charts. It is safe for concurrent use.
type Cache struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	sf   singleflight.Group

	mu      sync.Mutex
	indexes map[string]*indexEntry // indexes, tag lists and tags' digests, by kind, URL and credentials

	indexFetches atomic.Int64
	downloads    atomic.Int64
}

type indexEntry struct {
	v  any
	at time.Time
}

// New returns a Cache keeping charts in opts.Dir.
func New(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errdefs.Invalid("dir", "", "is required")
	}
	if opts.IndexTTL < 0 || opts.MaxIndexBytes < 0 || opts.MaxChartBytes < 0 || opts.Timeout < 0 {
		return nil, errdefs.Invalid("options", "", "limits must not be negative (zero means the default)")
	}
	if opts.IndexTTL == 0 {
		opts.IndexTTL = DefaultIndexTTL
	}
	if opts.MaxIndexBytes == 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.MaxChartBytes == 0 {
		opts.MaxChartBytes = DefaultMaxChartBytes
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	return &Cache{opts: opts, log: opts.Logger, now: now, indexes: map[string]*indexEntry{}}, nil
}

// Stats returns the index reads and chart downloads so far.
func (c *Cache) Stats() Stats {
	return Stats{IndexFetches: c.indexFetches.Load(), Downloads: c.downloads.Load()}
}

// Invalidate forgets the index (or an OCI registry's tags and their digests) of the
// repository at repoURL (all credentials), so the next Resolve reads it again: a hard refresh.
// Unpacked charts stay (a digest's content does not change under it).
func (c *Cache) Invalidate(repoURL string) {
	var prefixes []string
	if IsOCI(repoURL) {
		base := "oci://" + strings.TrimSuffix(strings.TrimPrefix(repoURL, "oci://"), "/")
		prefixes = []string{"tags\x00" + base + "\x00", "manifest\x00" + strings.TrimPrefix(base, "oci://") + "/"}
	} else {
		u, err := url.Parse(repoURL)
		if err != nil {
			return
		}
		prefixes = []string{"index\x00" + u.String() + "\x00"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.indexes {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				delete(c.indexes, k)
			}
		}
	}
}

// Resolve returns the version of chart in the repository at repoURL that constraint names
// (an exact version, a semver range, or "" / "*" for the newest stable version), downloading
// and unpacking it unless the cache has it.
func (c *Cache) Resolve(ctx context.Context, repoURL, chart, constraint string, cred Credentials) (*Chart, error) {
	if IsOCI(repoURL) {
		return c.resolveOCI(ctx, repoURL, chart, constraint, cred)
	}
	base, err := c.checkURL(repoURL)
	if err != nil {
		return nil, err
	}
	if chart == "" || strings.ContainsAny(chart, "/\\") || chart == "." || chart == ".." {
		return nil, fmt.Errorf("%w: spec.source.chart %q: must be the name of a chart in the repository", ErrInvalid, chart)
	}
	idx, err := c.index(ctx, base, cred, false)
	if err != nil {
		return nil, err
	}
	cv, err := pick(idx, repoURL, chart, constraint)
	if errors.Is(err, ErrVersionNotFound) {
		// The index may be older than a version just published: read it again once.
		if idx2, ierr := c.index(ctx, base, cred, true); ierr == nil {
			cv, err = pick(idx2, repoURL, chart, constraint)
		}
	}
	if err != nil {
		return nil, err
	}
	return c.fetch(ctx, base, repoURL, chart, cv, cred)
}

// checkURL parses an http(s) repository URL and checks it against the policy.
func (c *Cache) checkURL(repoURL string) (*url.URL, error) {
	u, err := url.Parse(repoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: spec.source.repoURL %q: a chart repository URL is http:// or https:// with a host", ErrInvalid, redact(repoURL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: spec.source.repoURL %q: must not carry credentials; give them as repository credentials", ErrInvalid, redact(repoURL))
	}
	if c.opts.Policy != nil {
		if err := c.opts.Policy.CheckServerURL("spec.source.repoURL", repoURL); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User("***")
	return u.String()
}

func (c *Cache) client(cred Credentials) (*http.Client, error) {
	var hc *http.Client
	if c.opts.Policy != nil {
		hc = c.opts.Policy.HTTPClient(c.opts.Timeout)
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableKeepAlives = true
		hc = &http.Client{Timeout: c.opts.Timeout, Transport: t}
	}
	if len(cred.CABundle) > 0 || cred.InsecureSkipTLSVerify || len(cred.TLSClientCert) > 0 {
		t, ok := hc.Transport.(*http.Transport)
		if !ok {
			return nil, errors.New("chart repository client: unexpected transport")
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cred.InsecureSkipTLSVerify} //nolint:gosec // the operator's choice, per repository
		if len(cred.CABundle) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(cred.CABundle) {
				return nil, fmt.Errorf("%w: the repository credentials' CA bundle holds no PEM certificate", ErrInvalid)
			}
			cfg.RootCAs = pool
		}
		if len(cred.TLSClientCert) > 0 {
			cert, err := tls.X509KeyPair(cred.TLSClientCert, cred.TLSClientKey)
			if err != nil {
				return nil, fmt.Errorf("%w: the repository credentials' TLS client certificate and key (tlsClientCertData, tlsClientCertKey) do not load: they must be a PEM certificate and its PEM private key", ErrInvalid)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		t.TLSClientConfig = cfg
	}
	return hc, nil
}

// get reads u into memory, at most limit bytes, sending cred's basic auth when u is on the
// repository's host.
func (c *Cache) get(ctx context.Context, base *url.URL, u, what, repoURL string, cred Credentials, limit int64) ([]byte, error) {
	hc, err := c.client(cred)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s of %s: %v", ErrInvalid, what, repoURL, err)
	}
	if cred.Username != "" || cred.Password != "" {
		if req.URL.Scheme == base.Scheme && strings.EqualFold(req.URL.Host, base.Host) {
			req.SetBasicAuth(cred.Username, cred.Password)
		}
	}
	req.Header.Set("User-Agent", "freshet")
	resp, err := hc.Do(req)
	if err != nil {
		if netpolicy.IsRefused(err) {
			return nil, fmt.Errorf("chart repository %s: %w", repoURL, err)
		}
		return nil, fmt.Errorf("%w: %s: reading %s: %s", ErrUnavailable, repoURL, what, netpolicy.Describe(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "no credentials were sent"
		if cred.Password != "" || cred.Username != "" {
			hint = "check the repository credentials the runtime has for it"
		}
		return nil, fmt.Errorf("%w: %s answered %d to the request for %s (%s)", ErrAuth, repoURL, resp.StatusCode, what, hint)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s has no %s (HTTP 404): is it a chart repository?", ErrInvalid, repoURL, what)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w: %s answered %d to the request for %s", ErrUnavailable, repoURL, resp.StatusCode, what)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: %s answered %d to the request for %s", ErrInvalid, repoURL, resp.StatusCode, what)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading %s: %s", ErrUnavailable, repoURL, what, netpolicy.Describe(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s: %s is larger than %d bytes", ErrInvalid, repoURL, what, limit)
	}
	return data, nil
}

// index returns the repository's index, read at most once per IndexTTL (fresh: now).
func (c *Cache) index(ctx context.Context, base *url.URL, cred Credentials, fresh bool) (*Index, error) {
	v, err := c.cached(base.String()+"\x00"+fingerprint(cred), "index", fresh, func() (any, error) {
		u := strings.TrimSuffix(base.String(), "/") + "/index.yaml"
		// Detached from one caller's cancellation: others may be waiting on it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
		defer cancel()
		c.indexFetches.Add(1)
		data, err := c.get(ctx, base, u, "index.yaml", base.String(), cred, c.opts.MaxIndexBytes)
		if err != nil {
			return nil, err
		}
		idx, err := ParseIndex(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: index.yaml: %v", ErrInvalid, base.String(), err)
		}
		return idx, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Index), nil
}

// cached returns what read returned for kind and key within the last IndexTTL (fresh: reads
// it now), calling read once for all callers that ask at the same time.
func (c *Cache) cached(key, kind string, fresh bool, read func() (any, error)) (any, error) {
	key = kind + "\x00" + key
	c.mu.Lock()
	e := c.indexes[key]
	c.mu.Unlock()
	if e != nil && !fresh && c.now().Sub(e.at) < c.opts.IndexTTL {
		return e.v, nil
	}
	sfKey := key
	if fresh {
		sfKey = "fresh-" + sfKey
	}
	v, err, _ := c.sf.Do(sfKey, func() (any, error) {
		c.mu.Lock()
		e := c.indexes[key]
		c.mu.Unlock()
		if e != nil && !fresh && c.now().Sub(e.at) < c.opts.IndexTTL {
			return e.v, nil // read just now by another caller
		}
		v, err := read()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.indexes[key] = &indexEntry{v: v, at: c.now()}
		c.mu.Unlock()
		return v, nil
	})
	return v, err
}

// Index is a chart repository's index.yaml: the fields Freshet reads.
type Index struct {
	APIVersion string                     `json:"apiVersion"`
	Entries    map[string][]*ChartVersion `json:"entries"`
}

// ChartVersion is one version of a chart in an Index.
type ChartVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`

	semver *semver.Version // nil when Version is not semver
}

// ParseIndex decodes a chart repository's index.yaml (YAML or JSON), dropping empty entries,
// newest version first (versions that are not semver last, in index order).
func ParseIndex(data []byte) (*Index, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the index is empty")
	}
	idx := &Index{}
	if err := sigsyaml.Unmarshal(data, idx); err != nil {
		return nil, fmt.Errorf("not a valid index: %v", err)
	}
	if idx.APIVersion == "" {
		return nil, errors.New("no apiVersion: not a chart repository index")
	}
	for name, cvs := range idx.Entries {
		kept := cvs[:0]
		for _, cv := range cvs {
			if cv == nil || cv.Version == "" {
				continue
			}
			cv.semver, _ = semver.NewVersion(cv.Version)
			kept = append(kept, cv)
		}
		sortVersions(kept)
		idx.Entries[name] = kept
	}
	return idx, nil
}

// sortVersions orders versions newest first, those that are not semver last.
func sortVersions(vs []*ChartVersion) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i].semver, vs[j].semver
		switch {
		case a == nil:
			return false
		case b == nil:
			return true
		}
		return a.GreaterThan(b)
	})
}

// get returns the version of name that version names, as Helm's IndexFile.Get does: an
// exact match first, then the newest version the semver constraint accepts ("" is "*", which
// accepts no prerelease).
func (idx *Index) get(name, version string) (*ChartVersion, error) {
	vs := idx.Entries[name]
	if version != "" {
		for _, v := range vs {
			if v.Version == version {
				return v, nil
			}
		}
	}
	cons := version
	if cons == "" {
		cons = "*"
	}
	c, err := semver.NewConstraint(cons)
	if err != nil {
		return nil, errBadConstraint
	}
	for _, v := range vs {
		if v.semver != nil && c.Check(v.semver) {
			return v, nil
		}
	}
	return nil, ErrVersionNotFound
}

var errBadConstraint = errors.New("not a semver constraint")

// maxVersionsShown bounds the versions an error lists.
const maxVersionsShown = 20

// pick selects the version of chart that constraint names.
func pick(idx *Index, repoURL, chart, constraint string) (*ChartVersion, error) {
	vs, ok := idx.Entries[chart]
	if !ok || len(vs) == 0 {
		names := make([]string, 0, len(idx.Entries))
		for n := range idx.Entries {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > maxVersionsShown {
			names = append(names[:maxVersionsShown], "…")
		}
		return nil, fmt.Errorf("%w: chart repository %s has no chart %q (it has: %s)", ErrVersionNotFound, repoURL, chart, listOr(names))
	}
	c := strings.TrimSpace(constraint)
	if c == "*" {
		c = ""
	}
	cv, err := idx.get(chart, c)
	if err == nil {
		return cv, nil
	}
	shown := make([]string, 0, maxVersionsShown+1)
	for i, v := range vs {
		if i == maxVersionsShown {
			shown = append(shown, fmt.Sprintf("… %d more", len(vs)-i))
			break
		}
		shown = append(shown, v.Version)
	}
	what := fmt.Sprintf("targetRevision %q", constraint)
	if errors.Is(err, errBadConstraint) {
		return nil, fmt.Errorf("%w: spec.source.targetRevision %q is neither a version nor a semver range of chart %s (versions in %s: %s)", ErrInvalid, constraint, chart, repoURL, strings.Join(shown, ", "))
	}
	return nil, fmt.Errorf("%w: chart repository %s has no version of chart %s matching %s; it has %s", ErrVersionNotFound, repoURL, chart, what, strings.Join(shown, ", "))
}

func listOr(s []string) string {
	if len(s) == 0 {
		return "no charts"
	}
	return strings.Join(s, ", ")
}

func fingerprint(cred Credentials) string {
	if cred.Username == "" && cred.Password == "" && len(cred.CABundle) == 0 && !cred.InsecureSkipTLSVerify &&
		len(cred.TLSClientCert) == 0 && !cred.PlainHTTP {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00%q\x00%q\x00%v\x00%q\x00%q\x00%v", cred.Username, cred.Password, cred.CABundle, cred.InsecureSkipTLSVerify,
		cred.TLSClientCert, cred.TLSClientKey, cred.PlainHTTP)
	return hex.EncodeToString(h.Sum(nil))
}

// fetch returns cv unpacked, downloading it unless the cache has it.
func (c *Cache) fetch(ctx context.Context, base *url.URL, repoURL, chart string, cv *ChartVersion, cred Credentials) (*Chart, error) {
	digest := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(cv.Digest), "sha256:"))
	key := digest
	if !isHexDigest(digest) {
		// No digest in the index (allowed, if rare): the cache is keyed by what names the
		// version, and the archive is not checked.
		digest = ""
		s := sha256.Sum256([]byte(base.String() + "\x00" + chart + "\x00" + cv.Version))
		key = "v-" + hex.EncodeToString(s[:])
	}
	out := &Chart{Repo: repoURL, Name: chart, Version: cv.Version, Digest: digest, Dir: filepath.Join(c.opts.Dir, key)}
	if fi, err := os.Stat(filepath.Join(out.Dir, chart, chartutil.ChartfileName)); err == nil && fi.Mode().IsRegular() {
		return out, nil
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: %s: index.yaml gives no URL for %s %s", ErrInvalid, repoURL, chart, cv.Version)
	}
	_, err, _ := c.sf.Do("chart\x00"+key, func() (any, error) {
		if _, err := os.Stat(filepath.Join(out.Dir, chart, chartutil.ChartfileName)); err == nil {
			return nil, nil
		}
		ref, err := resolveURL(base, cv.URLs[0])
		if err != nil {
			return nil, fmt.Errorf("%w: %s: chart URL %q: %v", ErrInvalid, repoURL, cv.URLs[0], err)
		}
		if c.opts.Policy != nil {
			if err := c.opts.Policy.CheckServerURL("chart URL in "+repoURL+"/index.yaml", ref); err != nil {
				return nil, err
			}
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
		defer cancel()
		c.downloads.Add(1)
		what := fmt.Sprintf("chart %s %s", chart, cv.Version)
		data, err := c.get(ctx, base, ref, what, repoURL, cred, c.opts.MaxChartBytes)
		if err != nil {
			return nil, err
		}
		if digest != "" {
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != digest {
				return nil, fmt.Errorf("%w: %s: %s downloaded from %s has sha256 %s; index.yaml says %s", ErrDigest, repoURL, what, ref, got, digest)
			}
		}
		return nil, c.unpack(data, out, repoURL, chart, cv.Version, what)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// resolveURL resolves a chart URL of the index against the repository URL, as Helm does: a
// relative URL is relative to the repository's directory (its URL with a trailing slash).
func resolveURL(base *url.URL, ref string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	if r.IsAbs() {
		if r.Scheme != "http" && r.Scheme != "https" {
			return "", fmt.Errorf("scheme %q is not http or https", r.Scheme)
		}
		return r.String(), nil
	}
	b := *base
	b.Path = strings.TrimSuffix(b.Path, "/") + "/"
	b.RawPath = ""
	return b.ResolveReference(r).String(), nil
}
