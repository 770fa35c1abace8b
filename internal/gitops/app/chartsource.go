package app

import (
	"net/url"
	"strings"

	"github.com/freshet-dev/freshet/internal/repourl"
)

// IsChartRepo reports whether the source is a chart from a Helm chart repository
// (spec.source.chart with an http(s) repoURL, or an OCI registry's oci://host/path or Argo
// CD's bare host/path) rather than a git repository.
func (s *Source) IsChartRepo() bool { return s != nil && s.Chart != "" }

// validateChartSource checks a source naming a chart from a chart repository: an http(s)
// repoURL or an OCI registry's (oci://host/path, or host/path as Argo CD writes it) without
// credentials in it, a chart name, no kustomize or directory options. In spec.sources such
// an entry may read $ref/path value files of the other entries, but cannot be a ref itself:
// refs name git repositories whose files the others read (as in Argo CD).
func validateChartSource(d *decoder, p string, src *Source) {
	fail := func(fp, value, reason string) { d.fail(fp, d.line(fp), value, reason) }
	if strings.ContainsAny(src.Chart, `/\`) || src.Chart == "." || src.Chart == ".." {
		fail(p+".chart", src.Chart, "must be the name of a chart in the repository (no slashes)")
	}
	u, err := url.Parse(src.RepoURL)
	switch {
	case src.RepoURL == "":
		fail(p+".repoURL", "", "is required: the chart repository's URL (https://host/path, where index.yaml is)")
	case strings.HasPrefix(src.RepoURL, "oci://") || !strings.Contains(src.RepoURL, "://"):
		rest := strings.TrimSuffix(strings.TrimPrefix(src.RepoURL, "oci://"), "/")
		host, _, _ := strings.Cut(rest, "/")
		switch {
		case strings.Contains(rest, "@"):
			fail(p+".repoURL", "***"+rest[strings.LastIndex(rest, "@"):], "must not carry credentials; give them as repository credentials of the runtime")
		case host == "" || strings.ContainsAny(rest, " \t\\?#"):
			fail(p+".repoURL", src.RepoURL, "is not an OCI registry location; want oci://HOST[:PORT]/PATH (or HOST[:PORT]/PATH, as Argo CD writes it)")
		}
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		fail(p+".repoURL", repourl.Redact(src.RepoURL), "is not a chart repository URL; want https://host/path (where index.yaml is)")
	case u.User != nil:
		fail(p+".repoURL", repourl.Redact(src.RepoURL), "must not carry credentials; give them as repository credentials of the runtime")
	}
	if src.Kustomize != nil || src.Directory != nil {
		fail(p, "", "names a Helm chart; only helm options apply to it (not kustomize or directory)")
	}
}
