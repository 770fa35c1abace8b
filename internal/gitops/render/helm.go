package render

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// helm templates the chart in the app directory like `helm template --include-crds`: values
// files (relative to the chart, in order), then values or valuesObject, then parameters
// (--set / --set-string) and fileParameters (--set-file); release name = helm.releaseName or
// the app name; namespace = helm.namespace or the destination's; .Capabilities from the
// destination's Kubernetes version when known. Chart dependencies are used from charts/,
// file:// references inside the repository, or fetched from their chart repository or OCI
// registry through Request.Charts. Hooks are included (the
// sync engine maps them to Argo CD hooks), test hooks unless skipTests, CRDs from crds/ unless
// skipCrds.
func (j *job) helm(ctx context.Context) (*Result, error) {
	h := j.req.Source.Helm
	if h == nil {
		h = &helmDefaults
	}
	res := &Result{}
	ch, err := j.loadChart(ctx, j.dir, 0)
	if err != nil {
		return nil, err
	}
	chartFile := path.Join(j.srcPath, "Chart.yaml")
	if ch.Metadata.Type == "library" {
		return nil, newError(ErrTool, chartFile, 0, "chart %s is a library chart, which cannot be rendered on its own", ch.Name())
	}

	vals := map[string]any{}
	for i, vf := range h.ValueFiles {
		if strings.HasPrefix(vf, "$") {
			m, err := j.refValues(i, vf, h.IgnoreMissingValueFiles, res)
			if err != nil {
				return nil, err
			}
			mergeValues(vals, m)
			continue
		}
		p := filepath.Join(j.dir, filepath.FromSlash(vf))
		file := j.rel(p)
		if !within(j.root, filepath.Clean(p)) {
			return nil, newError(ErrNotFound, vf, 0, "spec.source.helm.valueFiles[%d] points outside the repository", i)
		}
		if _, statErr := os.Stat(p); statErr != nil {
			if h.IgnoreMissingValueFiles {
				res.Warnings = append(res.Warnings, fmt.Sprintf("values file %s does not exist; ignored (ignoreMissingValueFiles)", file))
				continue
			}
			return nil, newError(ErrNotFound, file, 0, "spec.source.helm.valueFiles[%d]: values file does not exist (paths are relative to the chart directory %s/)", i, j.srcPath)
		}
		data, err := j.readFile(p)
		if err != nil {
			return nil, err
		}
		m, err := chartutil.ReadValues(data)
		if err != nil {
			line, msg := yamlErrorLine(err)
			return nil, newError(ErrInvalidManifest, file, line, "values file is not valid YAML: %s", msg)
		}
		mergeValues(vals, m)
	}
	switch {
	case h.ValuesObject != nil:
		mergeValues(vals, copyValues(h.ValuesObject))
	case strings.TrimSpace(h.Values) != "":
		m, err := chartutil.ReadValues([]byte(h.Values))
		if err != nil {
			line, msg := yamlErrorLine(err)
			return nil, newError(ErrInvalidManifest, "", 0, "spec.source.helm.values is not valid YAML (line %d of the values): %s", line, msg)
		}
		mergeValues(vals, m)
	}
	for i, p := range h.Parameters {
		value := p.Value
		if !strings.HasPrefix(value, "{") {
			value = strings.ReplaceAll(value, ",", `\,`) // as Argo CD passes --set values
		}
		set := p.Name + "=" + value
		parse := strvals.ParseInto
		if p.ForceString {
			parse = strvals.ParseIntoString
		}
		if err := parse(set, vals); err != nil {
			return nil, newError(ErrInvalidManifest, "", 0, "spec.source.helm.parameters[%d] %s: %v", i, p.Name, err)
		}
	}
	for i, fp := range h.FileParameters {
		p := filepath.Join(j.dir, filepath.FromSlash(fp.Path))
		reader := func(rs []rune) (any, error) {
			data, err := j.readFile(p)
			if err != nil {
				return nil, err
			}
			return string(data), nil
		}
		if err := strvals.ParseIntoFile(fp.Name+"="+fp.Path, vals, reader); err != nil {
			if re, ok := err.(*Error); ok {
				return nil, re
			}
			return nil, newError(ErrNotFound, j.rel(p), 0, "spec.source.helm.fileParameters[%d] %s: %v", i, fp.Name, err)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	release := h.ReleaseName
	if release == "" {
		release = j.req.AppName
	}
	namespace := h.Namespace
	if namespace == "" {
		namespace = j.req.Namespace
	}
	kv := h.KubeVersion
	if kv == "" {
		kv = j.kubeVersion()
	}
	kubeVersion, err := chartutil.ParseKubeVersion(kv)
	if err != nil {
		return nil, newError(ErrInvalidManifest, "", 0, "Kubernetes version %q: %v", kv, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion
	caps.APIVersions = append(append(append(chartutil.VersionSet{}, chartutil.DefaultVersionSet...), j.req.APIVersions...), h.APIVersions...)
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, caps.KubeVersion.String()) {
		return nil, newError(ErrTool, chartFile, 0, "chart requires kubeVersion %s, which is incompatible with Kubernetes %s", c, caps.KubeVersion.String())
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, newError(ErrTool, chartFile, 0, "chart dependencies: %s", j.scrub(err.Error()))
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	renderVals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, h.SkipSchemaValidation)
	if err != nil {
		return nil, newError(ErrTool, chartFile, 0, "values: %s", j.scrub(err.Error()))
	}
	var eng engine.Engine // no cluster: lookup returns nothing, as in `helm template`
	files, err := eng.Render(ch, renderVals)
	if err != nil {
		file, line := templateFile(j.srcPath, ch, err.Error())
		return nil, newError(ErrTool, file, line, "%s", j.scrub(err.Error()))
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		msg, file := err.Error(), ""
		if m := parseErrorFile.FindStringSubmatch(msg); m != nil {
			file = chartPath(j.srcPath, ch, m[1])
			if line, lmsg := yamlErrorLine(err); line > 0 {
				msg = fmt.Sprintf("line %d of the rendered template: %s", line, lmsg)
			}
		}
		return nil, newError(ErrInvalidManifest, file, 0, "%s", msg)
	}

	out := &output{j: j}
	if !h.SkipCrds {
		for _, crd := range ch.CRDObjects() {
			if err := j.addRendered(out, chartPath(j.srcPath, ch, crd.Filename), string(crd.File.Data)); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range manifests {
		if err := j.addRendered(out, chartPath(j.srcPath, ch, m.Name), m.Content); err != nil {
			return nil, err
		}
	}
	for _, hook := range hooks {
		if h.SkipTests && isTestHook(hook) {
			continue
		}
		if err := j.addRendered(out, chartPath(j.srcPath, ch, hook.Path), hook.Manifest); err != nil {
			return nil, err
		}
	}
	res.Objects = out.objs
	return res, nil
}

var helmDefaults = app.HelmSource{}

func isTestHook(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}

// addRendered parses one rendered template. Lines in errors are lines of the rendered output.
func (j *job) addRendered(out *output, file, content string) error {
	docs, err := parseManifests(file, []byte(content))
	if err != nil {
		if re, ok := err.(*Error); ok && re.At.Line > 0 {
			re.Msg = fmt.Sprintf("line %d of the rendered template: %s", re.At.Line, re.Msg)
			re.At.Line = 0
		}
		return err
	}
	if err := toObjects(file, docs, out, false); err != nil {
		if re, ok := err.(*Error); ok {
			re.At.Line = 0
		}
		return err
	}
	return nil
}

// chartPath maps a chart-internal name ("mychart/templates/x.yaml",
// "mychart/charts/sub/templates/y.yaml") to a repository-relative path.
func chartPath(srcPath string, ch *chart.Chart, name string) string {
	name = filepath.ToSlash(name)
	rest, ok := strings.CutPrefix(name, ch.Name()+"/")
	if !ok {
		rest = name
	}
	return path.Join(srcPath, rest)
}

var (
	templateInError = regexp.MustCompile(`(?:template: |parse error at \()([^:\s()]+\.(?:yaml|yml|tpl|txt|json))(?::(\d+))?`)
	parseErrorFile  = regexp.MustCompile(`YAML parse error on ([^:\s]+):`)
)

// templateFile picks the template (and its line) a Helm error names, for the error's
// location. Template lines are lines of the source file.
func templateFile(srcPath string, ch *chart.Chart, msg string) (string, int) {
	if m := templateInError.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[2])
		return chartPath(srcPath, ch, m[1]), line
	}
	return path.Join(srcPath, "Chart.yaml"), 0
}

var lineInError = regexp.MustCompile(`line (\d+): (.*)`)

// yamlErrorLine extracts "line N: msg" from a YAML error.
func yamlErrorLine(err error) (int, string) {
	m := lineInError.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, err.Error()
	}
	n, _ := strconv.Atoi(m[1])
	return n, m[2]
}

// loadChart loads the chart at dir, charging its files to the budget, and resolves
// dependencies that are not vendored: file:// references inside the repository are loaded,
// others are fetched through Request.Charts (ErrRemoteDependency without it).
func (j *job) loadChart(ctx context.Context, dir string, depth int) (*chart.Chart, error) {
	if depth > 16 {
		return nil, newError(ErrTool, j.rel(dir), 0, "chart dependencies nest deeper than 16 levels")
	}
	if err := j.chargeTree(dir, map[string]bool{}); err != nil {
		return nil, err
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, newError(ErrInvalidManifest, path.Join(j.rel(dir), "Chart.yaml"), 0, "loading chart: %s", j.scrub(err.Error()))
	}
	if err := j.addDependencies(ctx, ch, path.Join(j.rel(dir), "Chart.yaml"), dir, false, depth); err != nil {
		return nil, err
	}
	return ch, nil
}

// addDependencies adds to ch the dependencies Chart.yaml names that charts/ does not hold:
// file:// ones from the repository (not for a fetched chart, which has no repository), the
// others fetched. chartFile names ch's Chart.yaml in errors.
func (j *job) addDependencies(ctx context.Context, ch *chart.Chart, chartFile, dir string, fetched bool, depth int) error {
	present := map[string]bool{}
	for _, d := range ch.Dependencies() {
		present[d.Name()] = true
	}
	for _, dep := range ch.Metadata.Dependencies {
		if present[dep.Name] {
			continue
		}
		local, isFile := strings.CutPrefix(dep.Repository, "file://")
		if !isFile || fetched {
			sub, err := j.fetchDependency(ctx, chartFile, dep, depth)
			if err != nil {
				return err
			}
			ch.AddDependency(sub)
			present[dep.Name] = true
			continue
		}
		depDir := filepath.Join(dir, filepath.FromSlash(local))
		real, err := filepath.EvalSymlinks(depDir)
		if err != nil || !within(j.root, real) {
			return newError(ErrNotFound, chartFile, 0, "dependency %s: %s is not a chart directory in the repository", dep.Name, dep.Repository)
		}
		sub, err := j.loadChart(ctx, real, depth+1)
		if err != nil {
			return err
		}
		if sub.Name() != dep.Name {
			return newError(ErrTool, chartFile, 0, "dependency %s: %s holds chart %q", dep.Name, dep.Repository, sub.Name())
		}
		ch.AddDependency(sub)
		present[dep.Name] = true
	}
	return nil
}

// fetchDependency fetches a dependency from its chart repository or OCI registry, with the
// dependencies it does not carry itself.
func (j *job) fetchDependency(ctx context.Context, chartFile string, dep *chart.Dependency, depth int) (*chart.Chart, error) {
	if j.req.Charts == nil || dep.Repository == "" {
		return nil, newError(ErrRemoteDependency, chartFile, 0,
			"dependency %s %s from %s is not in charts/; run `helm dependency build` and commit charts/, or use a file:// dependency",
			dep.Name, dep.Version, orNone(dep.Repository))
	}
	if depth > 16 {
		return nil, newError(ErrTool, chartFile, 0, "chart dependencies nest deeper than 16 levels")
	}
	dir, err := j.req.Charts.FetchDependency(ctx, dep.Repository, dep.Name, dep.Version)
	if err != nil {
		return nil, newError(ErrRemoteDependency, chartFile, 0, "dependency %s %s from %s: %s", dep.Name, dep.Version, dep.Repository, j.scrub(err.Error()))
	}
	where := fmt.Sprintf("%s (dependency %s from %s)", chartFile, dep.Name, dep.Repository)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				rel, _ := filepath.Rel(dir, p)
				return j.budget.take(where+": "+filepath.ToSlash(rel), fi.Size())
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sub, err := loader.Load(dir)
	if err != nil {
		return nil, newError(ErrInvalidManifest, where, 0, "loading chart: %s", j.scrub(err.Error()))
	}
	if sub.Name() != dep.Name {
		return nil, newError(ErrTool, chartFile, 0, "dependency %s: %s holds chart %q", dep.Name, dep.Repository, sub.Name())
	}
	if err := j.addDependencies(ctx, sub, where, dir, true, depth+1); err != nil {
		return nil, err
	}
	return sub, nil
}

func orNone(s string) string {
	if s == "" {
		return "(no repository)"
	}
	return s
}

// chargeTree charges every file under dir to the budget (following symlinks, as Helm's loader
// does) and fails on a symlink leading outside the repository.
func (j *job) chargeTree(dir string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil
			}
			if !within(j.root, real) {
				return newError(ErrNotFound, j.rel(p), 0, "symlink leads outside the repository")
			}
			if fi, err := os.Stat(real); err == nil && fi.IsDir() {
				return j.chargeTree(real, seen)
			}
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil
		}
		return j.budget.take(j.rel(p), info.Size())
	})
}

// mergeValues merges src into dst as Helm merges values files: maps merge key by key, any
// other value replaces.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func copyValues(m map[string]any) map[string]any {
	b, err := sigsyaml.Marshal(m)
	if err != nil {
		return m
	}
	out, err := chartutil.ReadValues(b)
	if err != nil {
		return m
	}
	return out
}

// refValues reads a value file of another source of the application ($ref/path, Argo CD's
// multi-source form) from that source's checkout.
func (j *job) refValues(i int, vf string, ignoreMissing bool, res *Result) (map[string]any, error) {
	name, rest, _ := strings.Cut(vf[1:], "/")
	root, ok := j.req.Refs[name]
	if !ok {
		return nil, newError(ErrNotFound, vf, 0, "spec.source.helm.valueFiles[%d]: $%s is the ref of no source of the application", i, name)
	}
	p := filepath.Join(root, filepath.FromSlash(rest))
	if rest == "" || !within(root, filepath.Clean(p)) {
		return nil, newError(ErrNotFound, vf, 0, "spec.source.helm.valueFiles[%d] points outside the repository of $%s", i, name)
	}
	if _, err := os.Stat(p); err != nil {
		if ignoreMissing {
			res.Warnings = append(res.Warnings, fmt.Sprintf("values file %s does not exist; ignored (ignoreMissingValueFiles)", vf))
			return nil, nil
		}
		return nil, newError(ErrNotFound, vf, 0, "spec.source.helm.valueFiles[%d]: values file does not exist in the source $%s", i, name)
	}
	data, err := j.readFileIn(root, p, vf)
	if err != nil {
		return nil, err
	}
	m, err := chartutil.ReadValues(data)
	if err != nil {
		line, msg := yamlErrorLine(err)
		return nil, newError(ErrInvalidManifest, vf, line, "values file is not valid YAML: %s", msg)
	}
	return m, nil
}
