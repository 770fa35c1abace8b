package app

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gobwas/glob"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// NewDefaultProject returns the project every installation has, as Argo CD's "default": any
// source, any destination, any resource.
func NewDefaultProject() *AppProject {
	return &AppProject{
		APIVersion: APIVersion, Kind: KindAppProject,
		Metadata: ObjectMeta{Name: DefaultProject},
		Spec: AppProjectSpec{
			SourceRepos:              []string{"*"},
			Destinations:             []Destination{{Server: "*", Name: "*", Namespace: "*"}},
			ClusterResourceWhitelist: []GroupKind{{Group: "*", Kind: "*"}},
		},
	}
}

func compileGlob(pattern string) (glob.Glob, error) { return glob.Compile(pattern) }

// globMatch matches s against an Argo CD-style glob ("*" also matches "/"). An invalid
// pattern matches only itself.
func globMatch(pattern, s string) bool {
	if pattern == s || pattern == "*" {
		return true
	}
	g, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	return g.Match(s)
}

func (p *AppProject) validate(d *decoder) {
	fail := func(fp, value, reason string) { d.fail(fp, d.line(fp), value, reason) }
	if p.APIVersion != APIVersion {
		fail("apiVersion", p.APIVersion, "want "+APIVersion)
	}
	if p.Kind != KindAppProject {
		fail("kind", p.Kind, "want "+KindAppProject)
	}
	validateMeta(d, p.Metadata)
	for i, repo := range p.Spec.SourceRepos {
		if _, err := compileGlob(strings.TrimPrefix(repo, "!")); err != nil || repo == "" {
			fail(fmt.Sprintf("spec.sourceRepos[%d]", i), repo, "is not a valid glob of repository URLs (\"*\" for any)")
		}
	}
	for i, dst := range p.Spec.Destinations {
		fp := fmt.Sprintf("spec.destinations[%d]", i)
		if dst.Server == "" && dst.Name == "" {
			fail(fp, "", "needs server or name (globs; \"*\" for any)")
		}
		for field, g := range map[string]string{"server": dst.Server, "name": dst.Name, "namespace": dst.Namespace} {
			if g != "" {
				if _, err := compileGlob(strings.TrimPrefix(g, "!")); err != nil {
					fail(fp+"."+field, g, "is not a valid glob")
				}
			}
		}
	}
	lists := map[string][]GroupKind{
		"clusterResourceWhitelist": p.Spec.ClusterResourceWhitelist, "clusterResourceBlacklist": p.Spec.ClusterResourceBlacklist,
		"namespaceResourceWhitelist": p.Spec.NamespaceResourceWhitelist, "namespaceResourceBlacklist": p.Spec.NamespaceResourceBlacklist,
	}
	names := make([]string, 0, len(lists))
	for name := range lists {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for i, gk := range lists[name] {
			if gk.Kind == "" {
				fail(fmt.Sprintf("spec.%s[%d].kind", name, i), "", "is required (\"*\" for any)")
			}
		}
	}
	for i := range p.Spec.SyncWindows {
		p.Spec.SyncWindows[i].validate(d, fmt.Sprintf("spec.syncWindows[%d]", i))
	}
	if p.Spec.PermitOnlyProjectScopedClusters {
		d.add(&Error{Path: "spec.permitOnlyProjectScopedClusters", Line: d.line("spec.permitOnlyProjectScopedClusters"),
			Value: "true", Reason: "project-scoped clusters are not supported yet", Unsupported: true})
	}
	p.validateRoles(d)
	for i, ns := range p.Spec.SourceNamespaces {
		if _, err := compileGlob(strings.TrimPrefix(ns, "!")); err != nil || ns == "" {
			fail(fmt.Sprintf("spec.sourceNamespaces[%d]", i), ns, "is not a valid glob of namespaces (\"*\" for any)")
		}
	}
}

// PermitsSourceNamespace reports whether the project accepts Application resources of
// namespace ns besides the runtime's own (spec.sourceNamespaces: globs, "!" negates, an
// exclusion wins); the error names the namespace and what the project lists.
func (p *AppProject) PermitsSourceNamespace(ns string) error {
	allowed := false
	for _, g := range p.Spec.SourceNamespaces {
		if neg, ok := strings.CutPrefix(g, "!"); ok {
			if globMatch(neg, ns) {
				allowed = false
				break
			}
			continue
		}
		if globMatch(g, ns) {
			allowed = true
		}
	}
	if allowed {
		return nil
	}
	list := "none"
	if len(p.Spec.SourceNamespaces) > 0 {
		list = strings.Join(p.Spec.SourceNamespaces, ", ")
	}
	return forbidden("namespace %q is not among the source namespaces of project %q (spec.sourceNamespaces: %s): add it there to run Application resources of that namespace", ns, p.Metadata.Name, list)
}

// forbidden builds the error a denied check returns.
func forbidden(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errdefs.ErrForbidden)
}

// Permits checks that app may be deployed under this project: the project is the app's, its
// source repository matches spec.sourceRepos and its destination matches spec.destinations.
// The error (errdefs.ErrForbidden) says what is not allowed and what the project allows.
// Resource kinds are checked per object at sync time with PermitsResource.
func (p *AppProject) Permits(a *Application) error {
	if a.Spec.Project != p.Metadata.Name {
		return forbidden("application %q belongs to project %q, not %q", a.Metadata.Name, a.Spec.Project, p.Metadata.Name)
	}
	srcs := a.Spec.Sources
	if a.Spec.Source != nil {
		srcs = []Source{*a.Spec.Source}
	}
	for _, src := range srcs {
		if err := p.PermitsSource(src.RepoURL); err != nil {
			return fmt.Errorf("application %q: %w", a.Metadata.Name, err)
		}
	}
	d := a.Spec.Destination
	if err := p.PermitsDestination(d.Server, d.Name, d.Namespace); err != nil {
		return fmt.Errorf("application %q: %w", a.Metadata.Name, err)
	}
	return nil
}

// PermitsSource checks a repository URL against spec.sourceRepos. Both sides are normalized
// (case, ".git", credentials) before matching; a pattern starting with "!" denies.
func (p *AppProject) PermitsSource(repoURL string) error {
	norm, err := repourl.Normalize(repoURL)
	if err != nil {
		norm = strings.ToLower(repoURL)
	}
	allowed := false
	for _, pattern := range p.Spec.SourceRepos {
		deny := strings.HasPrefix(pattern, "!")
		pat := strings.TrimPrefix(pattern, "!")
		if np, err := repourl.Normalize(pat); err == nil && !strings.ContainsAny(pat, "*?[{") {
			pat = np
		} else {
			pat = strings.TrimSuffix(strings.TrimRight(pat, "/"), ".git")
		}
		if globMatch(pat, norm) || globMatch(pat, repoURL) {
			if deny {
				return forbidden("source repository %s is denied in project %q by spec.sourceRepos %q", repourl.Redact(repoURL), p.Metadata.Name, pattern)
			}
			allowed = true
		}
	}
	if !allowed {
		return forbidden("source repository %s is not permitted in project %q; spec.sourceRepos allows %s",
			repourl.Redact(repoURL), p.Metadata.Name, quoteList(p.Spec.SourceRepos))
	}
	return nil
}

// PermitsDestination checks a destination (server URL and/or cluster name, namespace) against
// spec.destinations. An entry allows a destination when its server glob matches the server or
// its name glob matches the name, and its namespace glob matches the namespace. A pattern
// starting with "!" is negated ("!kube-system": any namespace but kube-system), and a
// destination an entry explicitly excludes is denied whatever other entries allow, as in Argo
// CD.
func (p *AppProject) PermitsDestination(server, name, namespace string) error {
	allowed := false
	for _, d := range p.Spec.Destinations {
		allow, deny := d.evaluate(server, name, namespace)
		if deny {
			return forbidden("destination %s is denied in project %q by spec.destinations entry %s",
				destString(server, name, namespace), p.Metadata.Name, destString(d.Server, d.Name, d.Namespace))
		}
		allowed = allowed || allow
	}
	if !allowed {
		allows := make([]string, len(p.Spec.Destinations))
		for i, d := range p.Spec.Destinations {
			allows[i] = destString(d.Server, d.Name, d.Namespace)
		}
		return forbidden("destination %s is not permitted in project %q; spec.destinations allows %s",
			destString(server, name, namespace), p.Metadata.Name, quoteList(allows))
	}
	return nil
}

// evaluate says whether the entry allows the destination, and whether it explicitly excludes
// it (a negated pattern hits while the entry's other patterns match).
func (d Destination) evaluate(server, name, namespace string) (allow, deny bool) {
	part := func(pattern, v string) (ok, negatedHit bool) {
		if inner, neg := strings.CutPrefix(pattern, "!"); neg {
			hit := globMatch(inner, v)
			return !hit, hit
		}
		return globMatch(pattern, v), false
	}
	var sOK, sNeg, nOK, nNeg bool
	if d.Server != "" && server != "" {
		sOK, sNeg = part(d.Server, server)
	}
	if d.Name != "" && name != "" {
		nOK, nNeg = part(d.Name, name)
	}
	nsPattern := d.Namespace
	if nsPattern == "" {
		nsPattern = "*"
	}
	nsOK, nsNeg := part(nsPattern, namespace)
	target, targetNeg := sOK || nOK, sNeg || nNeg
	deny = targetNeg && (nsOK || nsNeg) || nsNeg && target
	return target && nsOK, deny
}

func destString(server, name, namespace string) string {
	target := server
	if target == "" {
		target = "name=" + name
	} else if name != "" && name != server {
		target += " (name=" + name + ")"
	}
	return fmt.Sprintf("%s namespace=%q", target, namespace)
}

func quoteList(list []string) string {
	if len(list) == 0 {
		return "nothing"
	}
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// PermitsResource checks whether the project allows a kind of resource, as Argo CD does:
// cluster-scoped kinds must be in clusterResourceWhitelist (an empty list allows none) and
// not in clusterResourceBlacklist; namespaced kinds must be in namespaceResourceWhitelist when
// one is given (absent allows all; an explicit empty list allows none) and not in
// namespaceResourceBlacklist. The core group is "".
func (p *AppProject) PermitsResource(group, kind string, namespaced bool) error {
	in := func(list []GroupKind) bool {
		for _, gk := range list {
			if globMatch(gk.Group, group) && globMatch(gk.Kind, kind) {
				return true
			}
		}
		return false
	}
	gk := kind
	if group != "" {
		gk = kind + "." + group
	}
	if namespaced {
		wl := p.Spec.NamespaceResourceWhitelist
		if wl != nil && !in(wl) {
			return forbidden("namespaced resource %s is not in project %q's namespaceResourceWhitelist", gk, p.Metadata.Name)
		}
		if in(p.Spec.NamespaceResourceBlacklist) {
			return forbidden("namespaced resource %s is in project %q's namespaceResourceBlacklist", gk, p.Metadata.Name)
		}
		return nil
	}
	if !in(p.Spec.ClusterResourceWhitelist) {
		return forbidden("cluster-scoped resource %s is not in project %q's clusterResourceWhitelist", gk, p.Metadata.Name)
	}
	if in(p.Spec.ClusterResourceBlacklist) {
		return forbidden("cluster-scoped resource %s is in project %q's clusterResourceBlacklist", gk, p.Metadata.Name)
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }

// EncodeApplication renders an Application as YAML (JSON field names, empty fields omitted),
// for writing to the installation repository.
func EncodeApplication(a *Application) ([]byte, error) { return sigsyaml.Marshal(a) }

// EncodeAppProject renders an AppProject as YAML.
func EncodeAppProject(p *AppProject) ([]byte, error) { return sigsyaml.Marshal(p) }
