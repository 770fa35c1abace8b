package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// Charts from chart repositories (spec.source.chart): the version targetRevision names is
// resolved and fetched through Options.Charts (one download per version for the runtime), then
// rendered like a Helm directory. The app's revision is the chart version, as in Argo CD.

// errNoChartCache: the engine was built without Options.Charts.
var errNoChartCache = fmt.Errorf("spec.source.chart: this runtime has no chart cache configured: %w", errdefs.ErrInvalid)

// chartCredentials maps the runtime's repository credentials to a chart repository's: basic
// auth (a token is the password), the CA bundle, the TLS choices and client certificate, and
// for OCI registries plain HTTP.
func chartCredentials(c git.Credentials) helmrepo.Credentials {
	pw := c.Password
	if c.Token != "" {
		pw = c.Token
	}
	return helmrepo.Credentials{Username: c.Username, Password: pw, CABundle: c.CABundle, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify,
		TLSClientCert: c.TLSClientCert, TLSClientKey: c.TLSClientKey, PlainHTTP: c.OCIPlainHTTP}
}

// resolveChart fetches the chart version revision names ("" for the source's targetRevision).
func (e *Engine) resolveChart(ctx context.Context, src *app.Source, revision string) (*helmrepo.Chart, error) {
	if revision == "" {
		revision = src.TargetRevision
	}
	return e.fetchChart(ctx, src.RepoURL, src.Chart, revision)
}

// fetchChart fetches the version of chart in the repository at repoURL that constraint names,
// with the runtime's credentials for the repository. A repository whose credentials mark it
// an OCI registry (Argo CD's enableOCI) is one even when written https://.
func (e *Engine) fetchChart(ctx context.Context, repoURL, chart, constraint string) (*helmrepo.Chart, error) {
	if e.opts.Charts == nil {
		return nil, errNoChartCache
	}
	if constraint == "HEAD" {
		constraint = "" // Argo CD's default targetRevision: the newest stable version
	}
	creds := e.repo(repoURL).Credentials
	url := repoURL
	if creds.OCI && !helmrepo.IsOCI(url) {
		rest, plain := strings.CutPrefix(url, "http://")
		rest = strings.TrimPrefix(rest, "https://")
		creds.OCIPlainHTTP = creds.OCIPlainHTTP || plain
		url = "oci://" + rest
	}
	return e.opts.Charts.Resolve(ctx, url, chart, constraint, chartCredentials(creds))
}

// desiredChart is desiredFor for a chart from a chart repository.
func (e *Engine) desiredChart(ctx context.Context, st *appState, a *app.Application, project *app.AppProject, cl *cluster, src *app.Source, revision string, hard bool) (*desiredSet, error) {
	ch, err := e.resolveChart(ctx, src, revision)
	if err != nil {
		return nil, err
	}
	specHash := sourceHash(a, src) ^ e.prepareHash(a)
	st.mu.Lock()
	cur := st.desired
	st.mu.Unlock()
	if !hard && cur != nil && cur.sha == ch.Version && cur.specHash == specHash && cur.cluster == cl.host && !cur.hasUnknownKinds() {
		return cur, nil
	}
	destNS := a.Spec.Destination.Namespace
	kubeVersion, apiVersions := cl.serverInfo()
	srcCopy := *src
	srcCopy.TargetRevision = ""
	optsJSON, _ := json.Marshal(srcCopy)
	key := "chart\x00" + ch.Digest + "\x00" + ch.Version + "\x00" + string(optsJSON) + "\x00" + a.Metadata.Name + "\x00" + destNS + "\x00" + kubeVersion
	entry, err := e.renders.get(ctx, key, func(ctx context.Context) (*renderEntry, error) {
		res, err := e.renderer.Render(ctx, render.Request{
			Root: ch.Dir, Source: *src, AppName: a.Metadata.Name, Namespace: destNS,
			Revision: ch.Version, KubeVersion: kubeVersion, APIVersions: apiVersions, Charts: e.depFetcher(),
		})
		if err != nil {
			return nil, err
		}
		return &renderEntry{res: res, commit: chartCommit(ch)}, nil
	})
	if err != nil {
		return nil, err
	}
	ds := e.prepare(cl, a, project, entry)
	ds.sha, ds.specHash, ds.cluster = ch.Version, specHash, cl.host
	if revision == "" {
		st.mu.Lock()
		st.desired = ds
		st.mu.Unlock()
	}
	return ds, nil
}

// chartCommit is what a chart version shows where a git source shows its commit.
func chartCommit(ch *helmrepo.Chart) git.CommitInfo {
	return git.CommitInfo{SHA: ch.Version, Message: fmt.Sprintf("chart %s %s from %s", ch.Name, ch.Version, ch.Repo)}
}

// depFetcher fetches Helm charts' remote dependencies through the chart cache (nil without
// one: they are then ErrRemoteDependency).
func (e *Engine) depFetcher() render.ChartFetcher {
	if e.opts.Charts == nil {
		return nil
	}
	return dependencyFetcher{e}
}

type dependencyFetcher struct{ e *Engine }

// FetchDependency implements render.ChartFetcher: a repository written "@name" or
// "alias:name" is the repository credentials of that name, as in Argo CD.
func (f dependencyFetcher) FetchDependency(ctx context.Context, repository, name, version string) (string, error) {
	url := repository
	alias, isAlias := strings.CutPrefix(repository, "@")
	if !isAlias {
		alias, isAlias = strings.CutPrefix(repository, "alias:")
	}
	if isAlias {
		var ok bool
		if f.e.opts.RepoByName != nil {
			url, ok = f.e.opts.RepoByName(alias)
		}
		if !ok {
			return "", fmt.Errorf("no repository credentials are named %q (the name key of a repository Secret)", alias)
		}
	}
	if strings.HasPrefix(url, "file://") {
		return "", fmt.Errorf("a file:// dependency of a chart fetched from a repository has no repository to be read from")
	}
	ch, err := f.e.fetchChart(ctx, url, name, version)
	if err != nil {
		return "", err
	}
	return filepath.Join(ch.Dir, name), nil
}

// chartTemporary reports whether a chart fetch failed for a reason worth retrying.
func chartTemporary(err error) bool { return errors.Is(err, helmrepo.ErrUnavailable) }

// hardRefreshCharts makes a hard refresh of a chart app read its repository's index again and
// render again.
func (e *Engine) hardRefreshCharts(a *app.Application) {
	if e.opts.Charts == nil {
		return
	}
	for _, src := range appSources(a) {
		if !src.IsChartRepo() {
			continue
		}
		e.opts.Charts.Invalidate(src.RepoURL)
		if rest, ok := strings.CutPrefix(src.RepoURL, "https://"); ok { // an OCI registry by its repository credentials
			e.opts.Charts.Invalidate("oci://" + rest)
		}
		e.renders.drop("chart\x00")
	}
}
