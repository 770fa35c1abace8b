package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
)

// defaultHelmTimeout is Helm's own default for --timeout.
const defaultHelmTimeout = 5 * time.Minute

// maxValuesFileBytes bounds a values file.
const maxValuesFileBytes = 4 << 20

// restGetter gives Helm's kube client one cluster's configuration (genericclioptions'
// RESTClientGetter) without files.
type restGetter struct {
	cfg *rest.Config
	cc  clientcmd.ClientConfig
}

func (g restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }
func (g restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	d, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(d), nil
}
func (g restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	d, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(d), nil
}
func (g restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g.cc }

// helmRepoFor returns the repository a helm step reads its chart from and the credentials to
// use: the step's helm_repository_context, else a context whose URL is chart_repo_url, else
// chart_repo_url without credentials, else the pipeline's only helm-repository context.
// ok is false when the chart is not from a repository.
func (e *engine) helmRepoFor(h *spec.Helm) (url string, cred helmrepo.Credentials, ok bool, err error) {
	same := func(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }
	url = e.interp(h.ChartRepoURL)
	var repo *runnerv1.HelmRepo
	switch {
	case h.RepoContext != "":
		i := slices.IndexFunc(e.job.HelmRepos, func(r runnerv1.HelmRepo) bool { return r.Name == h.RepoContext })
		if i < 0 {
			return "", cred, false, fmt.Errorf("helm_repository_context %q did not come with the build: list it in the pipeline's contexts", h.RepoContext)
		}
		repo = &e.job.HelmRepos[i]
		if url == "" {
			url = repo.URL
		}
	case url != "":
		if i := slices.IndexFunc(e.job.HelmRepos, func(r runnerv1.HelmRepo) bool { return same(r.URL, url) }); i >= 0 {
			repo = &e.job.HelmRepos[i]
		}
	case len(e.job.HelmRepos) == 1:
		repo = &e.job.HelmRepos[0]
		url = repo.URL
	}
	if url == "" {
		return "", cred, false, nil
	}
	if repo != nil && same(repo.URL, url) {
		cred = helmrepo.Credentials{Username: repo.Username, Password: repo.Password, CABundle: []byte(repo.CA)}
	}
	return url, cred, true, nil
}

// loadChart loads the chart a helm step names: a directory or archive in the workspace, or a
// chart of a repository (downloaded and checked against the index's digest). It returns the
// chart, where it is on disk (for lint) and a description for the log. A downloaded chart is
// unpacked under dir.
func (e *engine) loadChart(ctx context.Context, h *spec.Helm, dir string) (*chart.Chart, string, string, error) {
	name := e.interp(h.ChartName)
	if path, err := e.workspaceFile(h.WorkingDir, name); err == nil {
		if _, serr := os.Stat(path); serr == nil {
			ch, err := loader.Load(path)
			if err != nil {
				return nil, "", "", fmt.Errorf("chart_name %s: %w", name, err)
			}
			return ch, path, fmt.Sprintf("%s %s from the workspace (%s)", ch.Name(), ch.Metadata.Version, name), nil
		}
	}
	url, cred, ok, err := e.helmRepoFor(h)
	if err != nil {
		return nil, "", "", err
	}
	if !ok {
		return nil, "", "", fmt.Errorf("chart_name %s is not a chart in the workspace, and no chart repository is given: set chart_repo_url or helm_repository_context", name)
	}
	cache, err := helmrepo.New(helmrepo.Options{Dir: dir})
	if err != nil {
		return nil, "", "", err
	}
	version := e.interp(h.ChartVersion)
	got, err := cache.Resolve(ctx, url, name, version, cred)
	if errors.Is(err, helmrepo.ErrVersionNotFound) {
		return nil, "", "", fmt.Errorf("chart %s version %s is not in repository %s: %w", name, orLatest(version), url, err)
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("chart %s %s from %s: %w", name, orLatest(version), url, err)
	}
	path := filepath.Join(got.Dir, got.Name)
	ch, err := loader.Load(path)
	if err != nil {
		return nil, "", "", fmt.Errorf("chart %s %s from %s: %w", name, got.Version, url, err)
	}
	return ch, path, fmt.Sprintf("%s %s from %s", got.Name, got.Version, url), nil
}

func orLatest(v string) string {
	if v == "" {
		return "(latest)"
	}
	return v
}

// helmValues merges the step's values files, then its custom_values, as helm -f and --set do.
func (e *engine) helmValues(h *spec.Helm) (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range h.ValueFiles {
		path, err := e.workspaceFile(h.WorkingDir, f)
		if err != nil {
			return nil, fmt.Errorf("custom_value_files %s: %w", f, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("custom_value_files %s: %w", f, err)
		}
		if fi.Size() > maxValuesFileBytes {
			return nil, fmt.Errorf("custom_value_files %s is larger than %d MiB", f, maxValuesFileBytes>>20)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("custom_value_files %s: %w", f, err)
		}
		vals = chartutil.MergeTables(m, vals)
	}
	for _, kv := range h.Values {
		if err := strvals.ParseInto(e.interp(kv), vals); err != nil {
			k, _, _ := strings.Cut(kv, "=")
			return nil, fmt.Errorf("custom_values %s: %w", k, err)
		}
	}
	return vals, nil
}

// helm runs a helm step: lint, or install/upgrade (helm upgrade --install) of a release.
func (e *engine) helm(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	h := st.Helm
	fail := func(format string, args ...any) (spec.Result, int, int, string) {
		return e.imageStepFailed(ctx, st, fmt.Sprintf(format, args...))
	}
	if h == nil {
		return fail("the step has no helm settings")
	}
	dir, err := os.MkdirTemp("", "freshet-helm-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dir)
	if h.Action == spec.HelmPush {
		return e.helmPush(ctx, st, dir)
	}
	ch, path, what, err := e.loadChart(ctx, h, dir)
	if err != nil {
		return fail("%v", err)
	}
	vals, err := e.helmValues(h)
	if err != nil {
		return fail("%v", err)
	}
	if h.Action == spec.HelmLint {
		e.logf("step %s: helm lint %s", st.Name, what)
		res := action.NewLint().Run([]string{path}, vals)
		for _, m := range res.Messages {
			e.logf("step %s: %s", st.Name, m)
		}
		if len(res.Errors) > 0 {
			return fail("helm lint %s: %v", ch.Name(), errors.Join(res.Errors...))
		}
		return spec.ResultSuccess, 0, 1, ""
	}
	ns := e.interp(h.Namespace)
	if ns == "" {
		ns = "default"
	}
	cfg, cc, err := e.clusterConfig(h.KubeContext, ns)
	if err != nil {
		return fail("%v", err)
	}
	release := e.interp(h.ReleaseName)
	ac := new(action.Configuration)
	debug := func(string, ...any) {} // Helm's debug lines may carry values: not logged
	if err := ac.Init(restGetter{cfg: cfg, cc: cc}, ns, "secret", debug); err != nil {
		return fail("helm: cluster context %q: %v", h.KubeContext, err)
	}
	timeout := h.Timeout.Duration
	if timeout <= 0 {
		timeout = defaultHelmTimeout
	}
	hist := action.NewHistory(ac)
	hist.Max = 1
	_, herr := hist.Run(release)
	if errors.Is(herr, driver.ErrReleaseNotFound) {
		e.logf("step %s: helm install %s %s into namespace %s of cluster context %s", st.Name, release, what, ns, h.KubeContext)
		in := action.NewInstall(ac)
		in.ReleaseName, in.Namespace, in.Timeout = release, ns, timeout
		in.Wait, in.Atomic, in.CreateNamespace, in.DryRun = h.Wait, h.Atomic, h.CreateNS, h.DryRun
		in.SkipCRDs, in.DisableHooks, in.Description = h.SkipCRDs, h.DisableHooks, h.Description
		r, err := in.RunWithContext(ctx, ch, vals)
		if err != nil {
			return fail("helm install %s (%s): %v", release, what, err)
		}
		e.logf("step %s: release %s revision %d %s%s", st.Name, r.Name, r.Version, r.Info.Status, manifestSummary(r.Manifest))
		return spec.ResultSuccess, 0, 1, ""
	}
	if herr != nil {
		return fail("helm: read release %s in namespace %s: %v", release, ns, herr)
	}
	e.logf("step %s: helm upgrade %s %s in namespace %s of cluster context %s", st.Name, release, what, ns, h.KubeContext)
	up := action.NewUpgrade(ac)
	up.Namespace, up.Timeout = ns, timeout
	up.Wait, up.Atomic, up.DryRun = h.Wait, h.Atomic, h.DryRun
	up.ResetValues, up.ReuseValues, up.SkipCRDs, up.DisableHooks = h.ResetValues, h.ReuseValues, h.SkipCRDs, h.DisableHooks
	up.Description, up.MaxHistory = h.Description, spec.DefaultHelmHistoryMax
	if h.HistoryMax != nil {
		up.MaxHistory = *h.HistoryMax
	}
	r, err := up.RunWithContext(ctx, release, ch, vals)
	if err != nil {
		return fail("helm upgrade %s (%s): %v", release, what, err)
	}
	e.logf("step %s: release %s revision %d %s%s", st.Name, r.Name, r.Version, r.Info.Status, manifestSummary(r.Manifest))
	return spec.ResultSuccess, 0, 1, ""
}

// manifestSummary lists the objects of a release's manifest ("; applied Deployment web, …").
func manifestSummary(manifest string) string {
	var objs []string
	for _, doc := range strings.Split(manifest, "\n---") {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m.Kind == "" {
			continue
		}
		objs = append(objs, m.Kind+" "+m.Metadata.Name)
	}
	if len(objs) == 0 {
		return ""
	}
	return "; applied " + strings.Join(objs, ", ")
}

// Bounds on a push.
const (
	pushTimeout      = 2 * time.Minute
	maxPushReplyBody = 4 << 10
)

// helmPush packages a chart of the workspace (chart_version and app_version overriding its
// own) and uploads it to the repository as ChartMuseum's API takes charts: POST
// <scheme>://<host>/api<repository path>/charts, the archive as the body.
func (e *engine) helmPush(ctx context.Context, st *spec.Step, dir string) (spec.Result, int, int, string) {
	h := st.Helm
	fail := func(format string, args ...any) (spec.Result, int, int, string) {
		return e.imageStepFailed(ctx, st, fmt.Sprintf(format, args...))
	}
	name := e.interp(h.ChartName)
	path, err := e.workspaceFile(h.WorkingDir, name)
	if err != nil {
		return fail("chart_name %s: %v", name, err)
	}
	if _, err := os.Stat(path); err != nil {
		return fail("chart_name %s is not a chart directory or archive in the workspace: push packages a chart of the workspace", name)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return fail("chart_name %s: %v", name, err)
	}
	if v := e.interp(h.ChartVersion); v != "" {
		ch.Metadata.Version = v
	}
	if v := e.interp(h.AppVersion); v != "" {
		ch.Metadata.AppVersion = v
	}
	if err := ch.Validate(); err != nil {
		return fail("chart %s: %v", ch.Name(), err)
	}
	archive, err := chartutil.Save(ch, dir)
	if err != nil {
		return fail("package chart %s: %v", ch.Name(), err)
	}
	repoURL, cred, ok, err := e.helmRepoFor(h)
	if err != nil {
		return fail("%v", err)
	}
	if !ok {
		return fail("push needs a chart repository: set helm_repository_context or chart_repo_url, or list one helm-repository context in the pipeline")
	}
	u, err := url.Parse(repoURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fail("chart repository %s is not an http(s) URL: push uploads to ChartMuseum-style repositories (pushing to an OCI registry is not supported)", repoURL)
	}
	api := *u
	api.Path = "/api" + strings.TrimRight(u.Path, "/") + "/charts"
	api.RawQuery, api.Fragment = "", ""
	data, err := os.ReadFile(archive)
	if err != nil {
		return fail("%v", err)
	}
	client, err := pushClient(cred.CABundle)
	if err != nil {
		return fail("chart repository %s: %v", repoURL, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.String(), bytes.NewReader(data))
	if err != nil {
		return fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/gzip")
	if cred.Username != "" {
		req.SetBasicAuth(cred.Username, cred.Password)
	}
	e.logf("step %s: helm push %s %s (%d bytes) to %s", st.Name, ch.Name(), ch.Metadata.Version, len(data), repoURL)
	resp, err := client.Do(req)
	if err != nil {
		return fail("push chart %s %s to %s: %v", ch.Name(), ch.Metadata.Version, repoURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxPushReplyBody))
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		e.logf("step %s: chart %s %s pushed to %s", st.Name, ch.Name(), ch.Metadata.Version, repoURL)
		return spec.ResultSuccess, 0, 1, ""
	case resp.StatusCode == http.StatusConflict:
		return fail("chart %s version %s is already in repository %s: give a new chart_version", ch.Name(), ch.Metadata.Version, repoURL)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fail("chart repository %s refused the credentials (HTTP %d): check the helm-repository context", repoURL, resp.StatusCode)
	default:
		return fail("push chart %s %s to %s: HTTP %d: %s", ch.Name(), ch.Metadata.Version, repoURL, resp.StatusCode, strings.TrimSpace(string(body)))
	}
}

// pushClient is an HTTP client trusting the system's CAs and ca, following no redirects (the
// credentials go to the repository's own URL only).
func pushClient(ca []byte) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("its CA holds no PEM certificate")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t, Timeout: pushTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}
