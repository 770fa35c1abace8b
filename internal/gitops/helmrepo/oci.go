package helmrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Charts in OCI registries, as Helm 3.8+ pushes them (`helm push chart.tgz oci://host/path`):
// the chart name is the last path element of the repository (host/path/NAME), each version a
// tag (with "+" written "_"), the archive the manifest's layer of ChartLayerMediaType. The tag
// list is read once per IndexTTL, a tag's manifest digest likewise, and each manifest digest is
// pulled and unpacked once.

// Media types of a Helm chart in an OCI registry.
const (
	ChartLayerMediaType       = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	legacyChartLayerMediaType = "application/tar+gzip"
	// maxManifestBytes bounds a chart's manifest.
	maxManifestBytes = 4 << 20
)

// IsOCI reports whether repoURL names an OCI registry: oci://host/path, or Argo CD's bare
// form host/path (no scheme).
func IsOCI(repoURL string) bool {
	return strings.HasPrefix(repoURL, "oci://") || (repoURL != "" && !strings.Contains(repoURL, "://"))
}

// ociRepo is the OCI repository holding chart in the registry at repoURL.
type ociRepo struct {
	base string             // oci://host/path, normalised
	ref  registry.Reference // host/path/chart
}

// parseOCI parses an OCI repoURL and checks it against the policy.
func (c *Cache) parseOCI(repoURL, chart string, cred Credentials) (*ociRepo, error) {
	bad := func(why string) error {
		shown := repoURL
		if i := strings.LastIndex(shown, "@"); i >= 0 {
			shown = "***" + shown[i:] // whatever precedes an @ may be credentials
		}
		return fmt.Errorf("%w: spec.source.repoURL %q: %s", ErrInvalid, shown, why)
	}
	rest := strings.TrimPrefix(repoURL, "oci://")
	rest = strings.TrimSuffix(rest, "/")
	if strings.Contains(rest, "@") {
		return nil, bad("must not carry credentials or a digest; give credentials as repository credentials")
	}
	if chart == "" || strings.ContainsAny(chart, `/\:@`) || chart == "." || chart == ".." {
		return nil, fmt.Errorf("%w: spec.source.chart %q: must be the name of a chart in the registry", ErrInvalid, chart)
	}
	ref, err := registry.ParseReference(rest + "/" + chart)
	if err != nil || ref.Reference != "" {
		return nil, bad("is not an OCI registry location; want oci://HOST[:PORT]/PATH (lowercase path, no tag)")
	}
	if c.opts.Policy != nil {
		scheme := "https://"
		if cred.PlainHTTP {
			scheme = "http://"
		}
		if err := c.opts.Policy.CheckServerURL("spec.source.repoURL", scheme+rest); err != nil {
			return nil, err
		}
	}
	return &ociRepo{base: "oci://" + rest, ref: ref}, nil
}

func (c *Cache) remote(o *ociRepo, cred Credentials) (*remote.Repository, error) {
	hc, err := c.client(cred)
	if err != nil {
		return nil, err
	}
	r, err := remote.NewRepository(o.ref.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, o.base, err)
	}
	r.PlainHTTP = cred.PlainHTTP
	r.MaxMetadataBytes = maxManifestBytes
	ac := &auth.Client{Client: hc, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {"freshet"}}}
	if cred.Username != "" || cred.Password != "" {
		ac.Credential = auth.StaticCredential(o.ref.Registry, auth.Credential{Username: cred.Username, Password: cred.Password})
	}
	r.Client = ac
	return r, nil
}

// ociError maps a registry client's error onto this package's errors; what names the request.
func ociError(err error, base, what string, cred Credentials) error {
	if netpolicy.IsRefused(err) {
		return fmt.Errorf("OCI registry %s: %w", base, err)
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%w: %s asks for credentials for %s (no credentials were sent)", ErrAuth, base, what)
	}
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		switch {
		case er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden:
			hint := "no credentials were sent"
			if cred.Username != "" || cred.Password != "" {
				hint = "check the repository credentials the runtime has for it"
			}
			return fmt.Errorf("%w: %s answered %d to the request for %s (%s)", ErrAuth, base, er.StatusCode, what, hint)
		case er.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%w: %s has no %s", ErrVersionNotFound, base, what)
		case er.StatusCode >= 500 || er.StatusCode == http.StatusTooManyRequests:
			return fmt.Errorf("%w: %s answered %d to the request for %s", ErrUnavailable, base, er.StatusCode, what)
		default:
			return fmt.Errorf("%w: %s answered %d to the request for %s", ErrInvalid, base, er.StatusCode, what)
		}
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("%w: %s has no %s", ErrVersionNotFound, base, what)
	}
	if errors.Is(err, errdef.ErrSizeExceedsLimit) || errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) {
		return fmt.Errorf("%w: %s: %s: %v", ErrInvalid, base, what, err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %s: reading %s: %s", ErrUnavailable, base, what, describe(err))
}

func describe(err error) string {
	if d := netpolicy.Describe(err); d != "" {
		return d
	}
	return err.Error()
}

// resolveOCI is Resolve for an OCI registry.
func (c *Cache) resolveOCI(ctx context.Context, repoURL, chart, constraint string, cred Credentials) (*Chart, error) {
	o, err := c.parseOCI(repoURL, chart, cred)
	if err != nil {
		return nil, err
	}
	idx, err := c.ociTags(ctx, o, chart, cred, false)
	if err != nil {
		return nil, err
	}
	cv, err := pick(idx, o.base, chart, constraint)
	if errors.Is(err, ErrVersionNotFound) {
		if idx2, ierr := c.ociTags(ctx, o, chart, cred, true); ierr == nil {
			cv, err = pick(idx2, o.base, chart, constraint)
		}
	}
	if err != nil {
		return nil, err
	}
	desc, err := c.ociManifest(ctx, o, cv.Version, cred)
	if err != nil {
		return nil, err
	}
	return c.pullOCI(ctx, o, repoURL, chart, cv.Version, desc, cred)
}

// ociTags lists the chart's versions (its semver tags), at most once per IndexTTL.
func (c *Cache) ociTags(ctx context.Context, o *ociRepo, chart string, cred Credentials, fresh bool) (*Index, error) {
	key := o.base + "\x00" + chart + "\x00" + fingerprint(cred)
	v, err := c.cached(key, "tags", fresh, func() (any, error) {
		r, err := c.remote(o, cred)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
		defer cancel()
		c.indexFetches.Add(1)
		var vs []*ChartVersion
		err = r.Tags(ctx, "", func(tags []string) error {
			for _, t := range tags {
				if len(vs) >= maxTags {
					return fmt.Errorf("%w: %s: more than %d tags", ErrInvalid, o.ref, maxTags)
				}
				ver := strings.ReplaceAll(t, "_", "+") // Helm writes + as _ in tags
				sv, err := semver.StrictNewVersion(ver)
				if err != nil {
					continue // not a chart version (Helm ignores these too)
				}
				vs = append(vs, &ChartVersion{Name: chart, Version: ver, semver: sv})
			}
			return nil
		})
		if err != nil {
			if errors.Is(err, ErrInvalid) {
				return nil, err
			}
			err = ociError(err, o.base, "chart "+chart+" (listing its tags)", cred)
			if errors.Is(err, ErrVersionNotFound) {
				return &Index{APIVersion: "v1", Entries: map[string][]*ChartVersion{}}, nil
			}
			return nil, err
		}
		sortVersions(vs)
		return &Index{APIVersion: "v1", Entries: map[string][]*ChartVersion{chart: vs}}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Index), nil
}

// maxTags bounds the tags read from one repository.
const maxTags = 100000

// ociManifest resolves version's tag to its manifest descriptor, at most once per IndexTTL.
func (c *Cache) ociManifest(ctx context.Context, o *ociRepo, version string, cred Credentials) (ocispec.Descriptor, error) {
	tag := strings.ReplaceAll(version, "+", "_")
	key := o.ref.String() + ":" + tag + "\x00" + fingerprint(cred)
	v, err := c.cached(key, "manifest", false, func() (any, error) {
		r, err := c.remote(o, cred)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
		defer cancel()
		desc, err := r.Resolve(ctx, tag)
		if err != nil {
			return nil, ociError(err, o.base, fmt.Sprintf("chart %s version %s", o.ref.Repository, version), cred)
		}
		return desc, nil
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return v.(ocispec.Descriptor), nil
}

// pullOCI returns the chart of manifest desc unpacked, pulling it unless the cache has it.
func (c *Cache) pullOCI(ctx context.Context, o *ociRepo, repoURL, chart, version string, desc ocispec.Descriptor, cred Credentials) (*Chart, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: manifest digest %q: %v", ErrInvalid, o.base, desc.Digest, err)
	}
	digest := desc.Digest.Encoded()
	key := "oci-" + desc.Digest.Algorithm().String() + "-" + digest
	out := &Chart{Repo: repoURL, Name: chart, Version: version, Digest: digest, Dir: filepath.Join(c.opts.Dir, key)}
	if exists(filepath.Join(out.Dir, chart, chartutil.ChartfileName)) {
		return out, nil
	}
	what := fmt.Sprintf("chart %s %s", chart, version)
	_, err, _ := c.sf.Do("chart\x00"+key, func() (any, error) {
		if exists(filepath.Join(out.Dir, chart, chartutil.ChartfileName)) {
			return nil, nil
		}
		r, err := c.remote(o, cred)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
		defer cancel()
		c.downloads.Add(1)
		if desc.Size > maxManifestBytes {
			return nil, fmt.Errorf("%w: %s: the manifest of %s is larger than %d bytes", ErrInvalid, o.base, what, maxManifestBytes)
		}
		mdata, err := content.FetchAll(ctx, r, desc)
		if err != nil {
			return nil, ociError(err, o.base, what+" (its manifest)", cred)
		}
		layer, err := ChartLayer(mdata, c.opts.MaxChartBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrInvalid, o.base, what, err)
		}
		rc, err := r.Fetch(ctx, *layer)
		if err != nil {
			return nil, ociError(err, o.base, what, cred)
		}
		data, err := content.ReadAll(io.LimitReader(rc, layer.Size+1), *layer) // checks size and digest
		rc.Close()
		if err != nil {
			if errors.Is(err, content.ErrMismatchedDigest) {
				return nil, fmt.Errorf("%w: %s: %s: %v", ErrDigest, o.base, what, err)
			}
			return nil, ociError(err, o.base, what, cred)
		}
		return nil, c.unpack(data, out, repoURL, chart, version, what)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ChartLayer finds the chart archive in an OCI manifest a registry sent: the first layer of
// ChartLayerMediaType (or the legacy application/tar+gzip), with a valid digest and a size
// from 0 to maxBytes.
func ChartLayer(manifest []byte, maxBytes int64) (*ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("the manifest is not an OCI image manifest: %v", err)
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		if l.MediaType != ChartLayerMediaType && l.MediaType != legacyChartLayerMediaType {
			continue
		}
		if l.Size < 0 || l.Size > maxBytes {
			return nil, fmt.Errorf("the chart layer is %d bytes; the limit is %d", l.Size, maxBytes)
		}
		if err := l.Digest.Validate(); err != nil {
			return nil, fmt.Errorf("the chart layer's digest %q: %v", l.Digest, err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("not a Helm chart: the manifest has no layer of media type %s", ChartLayerMediaType)
}

// unpack loads a chart archive, checks it holds chart and unpacks it into out.Dir.
func (c *Cache) unpack(data []byte, out *Chart, repoURL, chart, version, what string) error {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %s: %s is not a valid chart archive: %v", ErrInvalid, repoURL, what, err)
	}
	if ch.Name() != chart {
		return fmt.Errorf("%w: %s: the archive of %s holds chart %q", ErrInvalid, repoURL, what, ch.Name())
	}
	tmp, err := os.MkdirTemp(c.opts.Dir, ".unpack-")
	if err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := chartutil.SaveDir(ch, tmp); err != nil {
		return fmt.Errorf("chart cache: unpacking %s: %w", what, err)
	}
	if err := os.Rename(tmp, out.Dir); err != nil && !exists(filepath.Join(out.Dir, chart, chartutil.ChartfileName)) {
		return fmt.Errorf("chart cache: %w", err)
	}
	c.log.Info("chart downloaded", "repo", repoURL, "chart", chart, "version", version, "digest", out.Digest, "bytes", len(data))
	return nil
}
