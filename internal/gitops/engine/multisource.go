package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// Multi-source applications (spec.sources with more than one entry): every source is
// resolved and rendered, and their objects make one desired state. A source with a ref and no
// path is only read: Helm value files written $ref/path in the other sources come from its
// checkout. The app's revision is the sources' commits, comma-separated in spec.sources
// order (a chart from a chart repository counts with its chart version, as a single-source
// chart app does); a rollback passes such a list back.

// isMultiSource reports whether an app renders several sources.
func isMultiSource(a *app.Application) bool { return a.Spec.Source == nil && len(a.Spec.Sources) > 1 }

// sourceRevisions splits a multi-source revision ("" or one commit per source).
func sourceRevisions(revision string, n int) ([]string, error) {
	if revision == "" {
		return make([]string, n), nil
	}
	revs := strings.Split(revision, ",")
	if len(revs) != n {
		return nil, fmt.Errorf("revision %q names %d commits; the application has %d sources (give one per source, comma-separated)", revision, len(revs), n)
	}
	return revs, nil
}

// desiredMulti is desiredFor for a multi-source app.
func (e *Engine) desiredMulti(ctx context.Context, st *appState, a *app.Application, project *app.AppProject, cl *cluster, revision string, hard bool) (*desiredSet, error) {
	srcs := a.Spec.Sources
	revs, err := sourceRevisions(revision, len(srcs))
	if err != nil {
		return nil, err
	}
	shas := make([]string, len(srcs))
	charts := make([]*helmrepo.Chart, len(srcs))
	digests := make([]string, len(srcs))
	for i, src := range srcs {
		if src.IsChartRepo() {
			// A chart from a chart repository: its revision is the chart version, as for a
			// single-source chart app; the render is keyed by the archive's digest.
			ch, err := e.resolveChart(ctx, &srcs[i], revs[i])
			if err != nil {
				return nil, fmt.Errorf("spec.sources[%d]: %w", i, err)
			}
			charts[i], shas[i], digests[i] = ch, ch.Version, ch.Digest
			continue
		}
		rev := revs[i]
		if rev == "" {
			rev = src.TargetRevision
		}
		r, err := e.cache.Resolve(ctx, e.repo(src.RepoURL), rev)
		if err != nil {
			return nil, fmt.Errorf("spec.sources[%d]: %w", i, err)
		}
		shas[i] = r.SHA
	}
	sha := strings.Join(shas, ",")
	data, _ := json.Marshal(struct {
		Name string
		Srcs []app.Source
		Dest app.Destination
	}{a.Metadata.Name, srcs, a.Spec.Destination})
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	specHash := hashAny(m) ^ e.prepareHash(a)
	st.mu.Lock()
	cur := st.desired
	st.mu.Unlock()
	if !hard && cur != nil && cur.sha == sha && cur.specHash == specHash && cur.cluster == cl.host && !cur.hasUnknownKinds() {
		return cur, nil
	}
	kubeVersion, apiVersions := cl.serverInfo()
	key := "multi\x00" + sha + "\x00" + strings.Join(digests, ",") + "\x00" + string(data) + "\x00" + kubeVersion
	entry, err := e.renders.get(ctx, key, func(ctx context.Context) (*renderEntry, error) {
		snaps := make([]*git.Snapshot, len(srcs))
		defer func() {
			for _, s := range snaps {
				if s != nil {
					s.Release()
				}
			}
		}()
		refs := map[string]string{}
		for i, src := range srcs {
			if charts[i] != nil {
				continue // unpacked in the chart cache
			}
			s, err := e.cache.Checkout(ctx, e.repo(src.RepoURL), shas[i])
			if err != nil {
				return nil, fmt.Errorf("spec.sources[%d]: %w", i, err)
			}
			snaps[i] = s
			if src.Ref != "" {
				refs[src.Ref] = s.Dir
			}
		}
		out := &renderEntry{res: &render.Result{}}
		if ch := charts[0]; ch != nil {
			out.commit = chartCommit(ch)
		} else {
			out.commit = snaps[0].Commit
		}
		for i, src := range srcs {
			if src.Ref != "" && src.Path == "" {
				continue // only read through $ref
			}
			root := ""
			if ch := charts[i]; ch != nil {
				root = ch.Dir
			} else {
				root = snaps[i].Dir
			}
			res, err := e.renderer.Render(ctx, render.Request{
				Root: root, Source: src, AppName: a.Metadata.Name, Namespace: a.Spec.Destination.Namespace,
				Revision: shas[i], KubeVersion: kubeVersion, APIVersions: apiVersions, Refs: refs, Charts: e.depFetcher(),
			})
			if err != nil {
				return nil, fmt.Errorf("spec.sources[%d]: %w", i, err)
			}
			if out.res.Type == "" {
				out.res.Type = res.Type
			}
			out.res.Objects = append(out.res.Objects, res.Objects...)
			out.res.Warnings = append(out.res.Warnings, res.Warnings...)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	ds := e.prepare(cl, a, project, entry)
	ds.sha, ds.specHash, ds.cluster = sha, specHash, cl.host
	if revision == "" {
		st.mu.Lock()
		st.desired = ds
		st.mu.Unlock()
	}
	return ds, nil
}

// appSources are the sources an app reads: spec.source, or every entry of spec.sources.
func appSources(a *app.Application) []app.Source {
	if a.Spec.Source != nil {
		return []app.Source{*a.Spec.Source}
	}
	return a.Spec.Sources
}
