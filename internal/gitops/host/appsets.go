package host

import (
	"context"
	"fmt"
	"maps"

	"github.com/freshet-dev/freshet/internal/gitops/appset"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
)

// ApplicationSets live where applications live: in the installation repository's apps/ and in
// Git Sources (plain, Helm or Kustomize). The host hands them to the ApplicationSet
// controller, which generates their applications in the engine.

type loadedSet struct {
	set    *appset.ApplicationSet
	file   string // where it is defined, for people
	source string // its Git Source; "" for the installation repository
}

func addSet(sets map[string]loadedSet, ls loadedSet, errs *[]string) {
	name := ls.set.Metadata.Name
	if prev, dup := sets[name]; dup {
		*errs = append(*errs, fmt.Sprintf("%s: ApplicationSet %q is also defined in %s; the first one is used", ls.file, name, prev.file))
		return
	}
	sets[name] = ls
}

// applySets gives the controller the ApplicationSets just loaded; those keep accepts (their
// file does not decode now, or their Git Source does not answer) stay as they were.
func (h *Host) applySets(ctx context.Context, sets map[string]loadedSet, keep func(loadedSet) bool) []string {
	h.mu.Lock()
	prev := h.loadedSets
	h.mu.Unlock()
	next := maps.Clone(sets)
	for name, ls := range prev {
		if _, ok := next[name]; !ok && keep(ls) {
			next[name] = ls
		}
	}
	entries := make(map[string]appset.Entry, len(next))
	for name, ls := range next {
		entries[name] = appset.Entry{Set: ls.set, File: ls.file}
	}
	var problems []string
	for _, err := range h.sets.SetAll(ctx, entries) {
		problems = append(problems, err.Error())
	}
	h.mu.Lock()
	h.loadedSets = next
	h.mu.Unlock()
	return problems
}

// checkout is the git generators' access to repositories: the shared cache, with the
// runtime's credentials and network policy.
func (h *Host) checkout(ctx context.Context, repoURL, revision string) (*git.Snapshot, error) {
	return h.cache.Checkout(ctx, git.Repo{URL: repoURL, Credentials: h.credentials(repoURL)}, revision)
}

// appSetClusters are the runtime's clusters for the clusters generator.
func (h *Host) appSetClusters() []appset.Cluster {
	refs := h.clusters.List()
	out := make([]appset.Cluster, 0, len(refs))
	for _, r := range refs {
		out = append(out, appset.Cluster{Name: r.Name, Server: r.Server, Labels: r.Labels, InCluster: r.Name == engine.InClusterName})
	}
	return out
}

// ApplicationSets returns every ApplicationSet's status.
func (h *Host) ApplicationSets() []appset.Status { return h.sets.List() }

// ApplicationSetController is the hosted ApplicationSet controller.
func (h *Host) ApplicationSetController() *appset.Controller { return h.sets }
