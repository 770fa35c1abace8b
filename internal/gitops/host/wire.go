package host

import (
	"encoding/json"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
)

// The functions below map the engine's values to the app-proxy's wire types (api/appproxyv1),
// which the REST and GraphQL APIs answer. Types of the same shape are converted (the compiler
// then refuses a field added to one side only); the others are copied field by field, and
// TestWireJSON proves that the JSON is the engine's, byte for byte.

func wireApplication(a Application) appproxyv1.Application {
	return appproxyv1.Application{Name: a.Name, File: a.File, GitSource: a.Source, Owner: a.Owner, OwnerKind: a.OwnerKind, Spec: wireManifest(a.Spec), Status: wireStatus(a.Status)}
}

func wireApplications(as []Application) []appproxyv1.Application {
	out := make([]appproxyv1.Application, len(as))
	for i, a := range as {
		out[i] = wireApplication(a)
	}
	return out
}

// wireManifest is the Argo CD Application with the options the contract keeps as raw JSON
// (helm, kustomize, directory, retry, managedNamespaceMetadata) encoded.
func wireManifest(a *app.Application) *appproxyv1.ApplicationManifest {
	if a == nil {
		return nil
	}
	s := a.Spec
	spec := appproxyv1.AppSpec{
		Destination:          appproxyv1.AppDestination(s.Destination),
		Project:              s.Project,
		RevisionHistoryLimit: s.RevisionHistoryLimit,
	}
	if s.Source != nil {
		src := wireSource(*s.Source)
		spec.Source = &src
	}
	for _, src := range s.Sources {
		spec.Sources = append(spec.Sources, wireSource(src))
	}
	if p := s.SyncPolicy; p != nil {
		spec.SyncPolicy = &appproxyv1.AppSyncPolicy{
			Automated:                (*appproxyv1.AppSyncPolicyAutomated)(p.Automated),
			SyncOptions:              p.SyncOptions,
			Retry:                    rawJSON(p.Retry),
			ManagedNamespaceMetadata: rawJSON(p.ManagedNamespaceMetadata),
		}
	}
	for _, d := range s.IgnoreDifferences {
		spec.IgnoreDifferences = append(spec.IgnoreDifferences, appproxyv1.AppIgnoreDifferences(d))
	}
	for _, i := range s.Info {
		spec.Info = append(spec.Info, appproxyv1.AppInfo(i))
	}
	return &appproxyv1.ApplicationManifest{APIVersion: a.APIVersion, Kind: a.Kind, Metadata: appproxyv1.AppMetadata(a.Metadata), Spec: spec}
}

func wireSource(s app.Source) appproxyv1.AppSource {
	return appproxyv1.AppSource{
		RepoURL: s.RepoURL, Path: s.Path, TargetRevision: s.TargetRevision, Chart: s.Chart, Ref: s.Ref, Name: s.Name,
		Helm: rawJSON(s.Helm), Kustomize: rawJSON(s.Kustomize), Directory: rawJSON(s.Directory),
	}
}

// rawJSON encodes an option the contract does not model; nil stays absent. The options were
// decoded from an Application, so they encode.
func rawJSON[T any](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func wireStatus(st engine.AppStatus) appproxyv1.AppStatus {
	out := appproxyv1.AppStatus{
		Name: st.Name, Owner: st.Owner, OwnerKind: st.OwnerKind, Project: st.Project, Sync: string(st.Sync), Revision: st.Revision, TargetRevision: st.TargetRevision,
		Commit: wireCommit(st.Commit), SourceType: string(st.SourceType), Health: wireHealth(st.Health),
		Operation: wireSync(st.Operation), AutoSyncDisabled: st.AutoSyncDisabled, ReconciledAt: st.ReconciledAt,
	}
	for _, r := range st.Resources {
		res := appproxyv1.AppResource{
			ResourceKey: appproxyv1.ResourceKey(r.ResourceKey), Version: r.Version, Status: string(r.Status), RequiresPruning: r.RequiresPruning,
			Hook: r.Hook, SyncWave: r.SyncWave, Source: appproxyv1.SourceLocation(r.Source), Message: r.Message,
		}
		if r.Health != nil {
			h := wireHealth(*r.Health)
			res.Health = &h
		}
		out.Resources = append(out.Resources, res)
	}
	for _, c := range st.Conditions {
		out.Conditions = append(out.Conditions, appproxyv1.AppCondition{Type: c.Type, Message: c.Message, Source: appproxyv1.SourceLocation(c.Source), Since: c.Since})
	}
	return out
}

func wireHealth(h health.Result) appproxyv1.Health {
	return appproxyv1.Health{Status: string(h.Status), Message: h.Message}
}

func wireCommit(c *git.CommitInfo) *appproxyv1.CommitInfo { return (*appproxyv1.CommitInfo)(c) }

func wireSync(r *engine.SyncResult) *appproxyv1.SyncResult {
	if r == nil {
		return nil
	}
	out := &appproxyv1.SyncResult{
		Revision: r.Revision, Phase: string(r.Phase), Message: r.Message, Resources: wireResults(r.Resources), DryRun: r.DryRun, Prune: r.Prune,
		InitiatedBy: string(r.InitiatedBy), User: r.User, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Temporary: r.Temporary,
	}
	for _, h := range r.Hooks {
		out.Hooks = append(out.Hooks, appproxyv1.HookResult{
			ResourceKey: appproxyv1.ResourceKey(h.ResourceKey), Version: h.Version, Type: string(h.Type), Wave: h.Wave,
			Phase: string(h.Phase), Message: h.Message, Deleted: h.Deleted,
		})
	}
	return out
}

func wireResults(rs []engine.ResourceResult) []appproxyv1.ResourceResult {
	var out []appproxyv1.ResourceResult
	for _, r := range rs {
		out = append(out, appproxyv1.ResourceResult{ResourceKey: appproxyv1.ResourceKey(r.ResourceKey), Version: r.Version, Result: string(r.Result), Wave: r.Wave, Message: r.Message})
	}
	return out
}

func wireHistory(hs []engine.HistoryEntry) []appproxyv1.HistoryEntry {
	out := make([]appproxyv1.HistoryEntry, len(hs))
	for i, h := range hs {
		out[i] = wireHistoryEntry(h)
	}
	return out
}

func wireHistoryEntry(h engine.HistoryEntry) appproxyv1.HistoryEntry {
	out := appproxyv1.HistoryEntry{
		ID: h.ID, Revision: h.Revision, Source: wireSource(h.Source), Commit: wireCommit(h.Commit), Phase: string(h.Phase), Message: h.Message,
		Changed: wireResults(h.Changed), InitiatedBy: string(h.InitiatedBy), User: h.User, StartedAt: h.StartedAt, FinishedAt: h.FinishedAt,
		Duration: h.Duration, Revisions: h.Revisions,
	}
	if h.Range != nil {
		r := appproxyv1.CommitRange{Kind: h.Range.Kind, From: h.Range.From, To: h.Range.To, Truncated: h.Range.Truncated}
		for _, c := range h.Range.Commits {
			r.Commits = append(r.Commits, appproxyv1.CommitInfo(c))
		}
		out.Range = &r
	}
	for _, src := range h.Sources {
		out.Sources = append(out.Sources, wireSource(src))
	}
	return out
}

func wireRollback(r *engine.RollbackResult) *appproxyv1.RollbackResult {
	if r == nil {
		return nil
	}
	return &appproxyv1.RollbackResult{Result: wireSync(r.Result), Entry: wireHistoryEntry(r.Entry), AutoSyncDisabled: r.AutoSyncDisabled}
}

func wireTree(ns []*engine.TreeNode) []*appproxyv1.TreeNode {
	out := make([]*appproxyv1.TreeNode, 0, len(ns))
	for _, n := range ns {
		w := &appproxyv1.TreeNode{
			ResourceKey: appproxyv1.ResourceKey(n.ResourceKey), Version: n.Version, UID: n.UID, Health: wireHealth(n.Health),
			Sync: string(n.Sync), CreatedAt: n.CreatedAt, Images: n.Images, Hook: n.Hook,
		}
		if n.Network != nil {
			w.Network = &appproxyv1.TreeNetwork{Labels: n.Network.Labels, Selector: n.Network.Selector, Backends: n.Network.Backends}
		}
		if len(n.Children) > 0 {
			w.Children = wireTree(n.Children)
		}
		out = append(out, w)
	}
	return out
}

func wireResource(d *engine.ResourceDetail) appproxyv1.ResourceDetail {
	return appproxyv1.ResourceDetail{
		ResourceKey: appproxyv1.ResourceKey(d.ResourceKey), Version: d.Version, UID: d.UID, Managed: d.Managed, Status: string(d.Status),
		Live: d.Live, Desired: d.Desired, Diff: d.Diff, Message: d.Message,
	}
}

func wireEvents(es []engine.ResourceEvent) []appproxyv1.ResourceEvent {
	out := make([]appproxyv1.ResourceEvent, len(es))
	for i, e := range es {
		out[i] = appproxyv1.ResourceEvent(e)
	}
	return out
}

func wireDiffs(ds []engine.ResourceDiff) []appproxyv1.ResourceDiff {
	out := make([]appproxyv1.ResourceDiff, len(ds))
	for i, d := range ds {
		out[i] = appproxyv1.ResourceDiff{
			ResourceKey: appproxyv1.ResourceKey(d.ResourceKey), Version: d.Version, Status: string(d.Status),
			Source: appproxyv1.SourceLocation(d.Source), Diff: d.Diff, Message: d.Message,
		}
	}
	return out
}

func wireGitSource(g *GitSource) appproxyv1.GitSource {
	s := g.Spec
	return appproxyv1.GitSource{
		APIVersion: g.APIVersion, Kind: g.Kind, Metadata: appproxyv1.GitSourceMetadata(g.Metadata),
		Spec: appproxyv1.GitSourceSpec{RepoURL: s.RepoURL, Path: s.Path, TargetRevision: s.TargetRevision, Include: s.Include, Exclude: s.Exclude,
			Destination: appproxyv1.AppDestination(s.Destination)},
	}
}

func wireGitSources(gs []*GitSource) []appproxyv1.GitSource {
	out := make([]appproxyv1.GitSource, len(gs))
	for i, g := range gs {
		out[i] = wireGitSource(g)
	}
	return out
}

func wireRepos(rs []providers.Repo) []appproxyv1.ProviderRepo {
	out := make([]appproxyv1.ProviderRepo, len(rs))
	for i, r := range rs {
		out[i] = appproxyv1.ProviderRepo(r)
	}
	return out
}

func wireClusters(cs []engine.ClusterRef) []appproxyv1.Cluster {
	out := make([]appproxyv1.Cluster, len(cs))
	for i, c := range cs {
		out[i] = appproxyv1.Cluster(c)
	}
	return out
}
