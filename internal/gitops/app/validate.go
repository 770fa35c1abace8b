package app

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// SyncOptions are Argo CD sync options ("CreateNamespace=true", ...).
type SyncOptions []string

// syncOptionValues lists the application-level sync options Argo CD defines and their values.
var syncOptionValues = map[string][]string{
	"Validate":                    {"true", "false"},
	"CreateNamespace":             {"true", "false"},
	"PruneLast":                   {"true", "false"},
	"ServerSideApply":             {"true", "false"},
	"Replace":                     {"true", "false"},
	"ApplyOutOfSyncOnly":          {"true", "false"},
	"PrunePropagationPolicy":      {"foreground", "background", "orphan"},
	"RespectIgnoreDifferences":    {"true", "false"},
	"FailOnSharedResource":        {"true", "false"},
	"SkipDryRunOnMissingResource": {"true", "false"},
	"Prune":                       {"true", "false", "confirm"},
	"Delete":                      {"true", "false", "confirm"},
	"Force":                       {"true", "false"},
	"ClientSideApplyMigration":    {"true", "false"},
}

// Get returns the value of option key ("" and false when not set). The last occurrence wins.
func (o SyncOptions) Get(key string) (string, bool) {
	val, found := "", false
	for _, opt := range o {
		k, v, _ := strings.Cut(opt, "=")
		if strings.TrimSpace(k) == key {
			val, found = strings.TrimSpace(v), true
		}
	}
	return val, found
}

// Enabled reports whether a boolean option is set to true ("CreateNamespace=true").
func (o SyncOptions) Enabled(key string) bool {
	v, ok := o.Get(key)
	return ok && strings.EqualFold(v, "true")
}

// Disabled reports whether a boolean option is set to false ("Validate=false").
func (o SyncOptions) Disabled(key string) bool {
	v, ok := o.Get(key)
	return ok && strings.EqualFold(v, "false")
}

func knownOptions() string {
	keys := make([]string, 0, len(syncOptionValues))
	for k := range syncOptionValues {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return strings.Join(keys, ", ")
}

// EffectiveSource is the application's main source: spec.source, or the first entry of
// spec.sources that is rendered (not only a $ref for the others' value files). A
// multi-source application renders all its sources (the engine reads spec.sources); this one
// is what a single-source view shows.
func (a *Application) EffectiveSource() *Source {
	if a.Spec.Source != nil {
		return a.Spec.Source
	}
	for i := range a.Spec.Sources {
		if s := &a.Spec.Sources[i]; s.Ref == "" || s.Path != "" {
			return s
		}
	}
	if len(a.Spec.Sources) > 0 {
		return &a.Spec.Sources[0]
	}
	return nil
}

// ParseDuration parses a retry backoff duration as Argo CD does: a Go duration ("30s", "2m")
// or a plain number of seconds.
func ParseDuration(s string) (time.Duration, error) {
	if secs, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return time.Duration(secs) * time.Second, nil
	}
	return time.ParseDuration(strings.TrimSpace(s))
}

func (a *Application) validate(d *decoder) {
	fail := func(p, value, reason string) { d.fail(p, d.line(p), value, reason) }
	if a.APIVersion != APIVersion {
		fail("apiVersion", a.APIVersion, "want "+APIVersion)
	}
	if a.Kind != KindApp {
		fail("kind", a.Kind, "want "+KindApp)
	}
	validateMeta(d, a.Metadata)
	s := &a.Spec
	if s.Project == "" {
		fail("spec.project", "", `is required; use "default" for the default project`)
	}
	switch {
	case s.Source != nil && len(s.Sources) > 0:
		fail("spec.sources", "", "cannot be used together with spec.source; give one of them")
	case s.Source == nil && len(s.Sources) == 0:
		fail("spec.source", "", "is required (repoURL, path, targetRevision)")
	}
	if s.Source != nil {
		validateSource(d, "spec.source", s.Source, nil)
	}
	refs := map[string]int{}
	for i, src := range s.Sources {
		if src.Ref == "" {
			continue
		}
		p := fmt.Sprintf("spec.sources[%d].ref", i)
		if !refName.MatchString(src.Ref) {
			fail(p, src.Ref, "is not a reference name (letters, digits, '-' and '_')")
		} else if j, dup := refs[src.Ref]; dup {
			fail(p, src.Ref, fmt.Sprintf("is also the ref of spec.sources[%d]; refs name one source each", j))
		} else {
			refs[src.Ref] = i
		}
	}
	for i := range s.Sources {
		validateSource(d, fmt.Sprintf("spec.sources[%d]", i), &s.Sources[i], refs)
	}
	dst := s.Destination
	switch {
	case dst.Server == "" && dst.Name == "":
		fail("spec.destination", "", "needs server (an API server URL, e.g. https://kubernetes.default.svc) or name (a registered cluster, e.g. in-cluster)")
	case dst.Server != "" && dst.Name != "":
		fail("spec.destination", dst.Server+" / "+dst.Name, "has both server and name; give one of them")
	case dst.Server != "" && !strings.HasPrefix(dst.Server, "https://") && !strings.HasPrefix(dst.Server, "http://"):
		fail("spec.destination.server", dst.Server, "want an https:// API server URL")
	}
	if dst.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(dst.Namespace) {
			fail("spec.destination.namespace", dst.Namespace, "is not a valid namespace name: "+msg)
		}
	}
	if p := s.SyncPolicy; p != nil {
		for i, opt := range p.SyncOptions {
			validateSyncOption(d, fmt.Sprintf("spec.syncPolicy.syncOptions[%d]", i), opt)
		}
		if r := p.Retry; r != nil && r.Backoff != nil {
			if b := r.Backoff; b.Duration != "" {
				if dur, err := ParseDuration(b.Duration); err != nil || dur <= 0 {
					fail("spec.syncPolicy.retry.backoff.duration", b.Duration, `want a positive duration such as "5s" or "2m"`)
				}
			}
			if b := r.Backoff; b.MaxDuration != "" {
				if dur, err := ParseDuration(b.MaxDuration); err != nil || dur <= 0 {
					fail("spec.syncPolicy.retry.backoff.maxDuration", b.MaxDuration, `want a positive duration such as "3m"`)
				}
			}
			if f := r.Backoff.Factor; f != nil && *f < 1 {
				fail("spec.syncPolicy.retry.backoff.factor", strconv.FormatInt(*f, 10), "must be 1 or more")
			}
		}
	}
	for i, ig := range s.IgnoreDifferences {
		fp := fmt.Sprintf("spec.ignoreDifferences[%d]", i)
		if ig.Kind == "" {
			fail(fp+".kind", "", "is required (the kind of resource, e.g. Deployment)")
		}
		for j, ptr := range ig.JSONPointers {
			if ptr != "" && !strings.HasPrefix(ptr, "/") {
				fail(fmt.Sprintf("%s.jsonPointers[%d]", fp, j), ptr, `is not a JSON pointer; want e.g. "/spec/replicas"`)
			}
		}
		for j, expr := range ig.JQPathExpressions {
			if strings.TrimSpace(expr) == "" {
				fail(fmt.Sprintf("%s.jqPathExpressions[%d]", fp, j), "", "is empty")
			}
		}
	}
	if l := s.RevisionHistoryLimit; l != nil && *l < 0 {
		fail("spec.revisionHistoryLimit", strconv.FormatInt(*l, 10), "must be 0 or more")
	}
}

var semverish = regexp.MustCompile(`^v?\d+\.\d+(\.\d+)?([-+].*)?$`)

// refName is what a source's ref may be (it is written $ref/path in value files).
var refName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validateSource checks one source; refs are the ref names of the app's spec.sources (nil for
// spec.source, where refs cannot be used).
func validateSource(d *decoder, p string, src *Source, refs map[string]int) {
	fail := func(fp, value, reason string) { d.fail(fp, d.line(fp), value, reason) }
	unsupported := func(fp, value, reason string) {
		d.add(&Error{Path: fp, Line: d.line(fp), Value: value, Reason: reason, Unsupported: true})
	}
	warn := func(fp, reason string) {
		d.warnings = append(d.warnings, fmt.Sprintf("%s (line %d) %s", fp, d.line(fp), reason))
	}
	if src.Chart != "" {
		validateChartSource(d, p, src)
	} else if src.RepoURL == "" {
		fail(p+".repoURL", "", "is required")
	} else if _, err := repourl.Normalize(src.RepoURL); err != nil {
		fail(p+".repoURL", repourl.Redact(src.RepoURL), "is not a git repository URL; want https://host/org/repo, ssh://git@host/org/repo, git@host:org/repo or file:///path")
	}
	if src.Path != "" && (path.IsAbs(src.Path) || strings.HasPrefix(path.Clean(src.Path), "..")) {
		fail(p+".path", src.Path, "must be a path inside the repository, relative to its root")
	}
	if src.Ref != "" && refs == nil {
		fail(p+".ref", src.Ref, "is only valid in an entry of spec.sources (a source other sources' $ref/ value files read)")
	} else if src.Ref != "" && src.Chart != "" {
		fail(p+".ref", src.Ref, "cannot be set on a chart from a chart repository: a ref names a git repository whose files $ref/path value files read")
	}
	set := 0
	for _, on := range []bool{src.Helm != nil, src.Kustomize != nil, src.Directory != nil} {
		if on {
			set++
		}
	}
	if set > 1 {
		fail(p, "", "sets more than one of helm, kustomize and directory; a source has one type")
	}
	if dir := src.Directory; dir != nil {
		if js := dir.Jsonnet; js != nil {
			jp := p + ".directory.jsonnet"
			for _, vars := range []struct {
				field string
				list  []JsonnetVar
			}{{"tlas", js.TLAs}, {"extVars", js.ExtVars}} {
				seen := map[string]int{}
				for i, v := range vars.list {
					vp := fmt.Sprintf("%s.%s[%d]", jp, vars.field, i)
					if v.Name == "" {
						fail(vp+".name", "", "is required")
					} else if first, dup := seen[v.Name]; dup {
						fail(vp+".name", v.Name, fmt.Sprintf("is also the name of %s.%s[%d]", jp, vars.field, first))
					} else {
						seen[v.Name] = i
					}
				}
			}
			for i, lib := range js.Libs {
				lp := fmt.Sprintf("%s.libs[%d]", jp, i)
				if c := path.Clean(strings.TrimLeft(lib, "/")); strings.TrimSpace(lib) == "" || c == ".." || strings.HasPrefix(c, "../") {
					fail(lp, lib, "must be a directory inside the repository, relative to its root (no ../)")
				}
			}
		}
		for _, g := range []struct{ field, glob string }{{"include", dir.Include}, {"exclude", dir.Exclude}} {
			if g.glob != "" {
				if _, err := compileGlob(g.glob); err != nil {
					fail(p+".directory."+g.field, g.glob, "is not a valid glob: "+err.Error())
				}
			}
		}
	}
	if h := src.Helm; h != nil {
		hp := p + ".helm"
		switch h.Version {
		case "", "v3", "3":
		default:
			unsupported(hp+".version", h.Version, "only Helm v3 is supported")
		}
		for i, vf := range h.ValueFiles {
			fp := fmt.Sprintf("%s.valueFiles[%d]", hp, i)
			switch {
			case strings.TrimSpace(vf) == "":
				fail(fp, "", "is empty")
			case strings.HasPrefix(vf, "http://") || strings.HasPrefix(vf, "https://"):
				unsupported(fp, vf, "remote values files are not fetched; commit the file to the repository")
			case strings.HasPrefix(vf, "$"):
				name, rest, _ := strings.Cut(vf[1:], "/")
				if _, ok := refs[name]; !ok {
					fail(fp, vf, fmt.Sprintf("names no source: $%s must be the ref of an entry of spec.sources (refs here: %s)", name, refList(refs)))
				} else if rest == "" || path.IsAbs(rest) || strings.HasPrefix(path.Clean(rest), "..") {
					fail(fp, vf, "must be $ref/path, a path inside the referenced source's repository")
				}
			case path.IsAbs(vf):
				fail(fp, vf, "must be relative to the chart directory")
			}
		}
		if h.Values != "" {
			validateValuesString(d, hp+".values", h.Values)
		}
		for i, prm := range h.Parameters {
			if strings.TrimSpace(prm.Name) == "" {
				fail(fmt.Sprintf("%s.parameters[%d].name", hp, i), "", "is required")
			}
		}
		for i, fprm := range h.FileParameters {
			fp := fmt.Sprintf("%s.fileParameters[%d]", hp, i)
			if strings.TrimSpace(fprm.Name) == "" {
				fail(fp+".name", "", "is required")
			}
			if fprm.Path == "" || path.IsAbs(fprm.Path) || strings.Contains(fprm.Path, "://") {
				fail(fp+".path", fprm.Path, "must be a file in the repository, relative to the chart directory")
			}
		}
		if h.ReleaseName != "" {
			for _, msg := range validation.IsDNS1123Subdomain(h.ReleaseName) {
				fail(hp+".releaseName", h.ReleaseName, "is not a valid release name: "+msg)
			}
		}
		if h.KubeVersion != "" && !semverish.MatchString(h.KubeVersion) {
			fail(hp+".kubeVersion", h.KubeVersion, `want a Kubernetes version such as "1.34.0"`)
		}
		if h.PassCredentials {
			warn(hp+".passCredentials", "has no effect: repository credentials are sent only to the chart repository's own scheme and host, never to chart URLs elsewhere")
		}
	}
	if k := src.Kustomize; k != nil {
		kp := p + ".kustomize"
		for i, img := range k.Images {
			if !validImageOverride(img) {
				fail(fmt.Sprintf("%s.images[%d]", kp, i), img, "want name[=newName][:tag][@digest], e.g. nginx=nginx:1.27 or nginx:1.27")
			}
		}
		for i, r := range k.Replicas {
			fp := fmt.Sprintf("%s.replicas[%d]", kp, i)
			if r.Name == "" {
				fail(fp+".name", "", "is required")
			}
			if n, err := strconv.Atoi(r.Count); err != nil || n < 0 {
				fail(fp+".count", r.Count, "want a non-negative integer")
			}
		}
		for i, pt := range k.Patches {
			fp := fmt.Sprintf("%s.patches[%d]", kp, i)
			if (pt.Path == "") == (pt.Patch == "") {
				fail(fp, "", "needs exactly one of path and patch")
			}
		}
		for i, c := range k.Components {
			if c == "" || path.IsAbs(c) || strings.Contains(c, "://") {
				fail(fmt.Sprintf("%s.components[%d]", kp, i), c, "must be a directory in the repository, relative to the source path")
			}
		}
		if k.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(k.Namespace) {
				fail(kp+".namespace", k.Namespace, "is not a valid namespace name: "+msg)
			}
		}
		if k.Version != "" {
			warn(kp+".version", "is ignored: Freshet renders with its built-in Kustomize")
		}
	}
}

var imageOverride = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:-]*(=[a-zA-Z0-9][a-zA-Z0-9._/:-]*)?(@sha256:[a-f0-9]{64})?$|^[a-zA-Z0-9][a-zA-Z0-9._/:-]*=?@sha256:[a-f0-9]{64}$`)

func validImageOverride(s string) bool { return imageOverride.MatchString(s) }

// validateValuesString checks that helm.values is a YAML mapping, naming the line inside it.
func validateValuesString(d *decoder, fp, values string) {
	docs, err := yamlx.SplitDocuments([]byte(values))
	base := d.line(fp)
	if err != nil {
		if ye, ok := err.(*yamlx.Error); ok && ye.Line > 0 {
			d.fail(fp, base+ye.Line, "", fmt.Sprintf("is not valid YAML (line %d of the values): %s", ye.Line, ye.Msg))
			return
		}
		d.fail(fp, base, "", "is not valid YAML: "+err.Error())
		return
	}
	if len(docs) > 1 || (len(docs) == 1 && docs[0].Node.Kind != yaml.MappingNode) {
		d.fail(fp, base, shorten(values), "want a YAML mapping of values")
		return
	}
	if len(docs) == 1 {
		if _, err := yamlx.ToValue(docs[0].Node); err != nil {
			d.fail(fp, base, "", "is not valid YAML: "+err.Error())
		}
	}
}

func validateMeta(d *decoder, m ObjectMeta) {
	if m.Name == "" {
		d.fail("metadata.name", d.line("metadata"), "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			d.fail("metadata.name", d.line("metadata.name"), m.Name, "is not a valid name: "+msg)
		}
	}
	if m.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(m.Namespace) {
			d.fail("metadata.namespace", d.line("metadata.namespace"), m.Namespace, "is not a valid namespace: "+msg)
		}
	}
}

func containsFold(list []string, v string) bool {
	for _, s := range list {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}

func refList(refs map[string]int) string {
	if len(refs) == 0 {
		return "none"
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, "$"+n)
	}
	sortStrings(names)
	return strings.Join(names, ", ")
}

// validateSyncOption checks one "Key=value" sync option against Argo CD's list.
func validateSyncOption(d *decoder, fp, opt string) {
	k, v, ok := strings.Cut(opt, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	allowed, known := syncOptionValues[k]
	switch {
	case !ok:
		d.fail(fp, d.line(fp), opt, "want Key=value, e.g. CreateNamespace=true")
	case !known:
		d.fail(fp, d.line(fp), opt, "is not a known sync option; known: "+knownOptions())
	case !containsFold(allowed, v):
		d.fail(fp, d.line(fp), opt, fmt.Sprintf("%s takes %s", k, strings.Join(allowed, " or ")))
	}
}
