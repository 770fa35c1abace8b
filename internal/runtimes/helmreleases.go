package runtimes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// HelmRelease is a Helm release of one of a runtime's clusters, as the runtime last reported
// it (docs/runtimes.md, "Helm releases").
type HelmRelease struct {
	ID           string    `json:"id"`
	RuntimeID    string    `json:"runtimeId"`
	Runtime      string    `json:"runtime"`
	Cluster      string    `json:"cluster"`
	Namespace    string    `json:"namespace"`
	Name         string    `json:"name"`
	Chart        string    `json:"chart"`
	ChartVersion string    `json:"chartVersion"`
	AppVersion   string    `json:"appVersion"`
	Status       string    `json:"status"`
	Revision     int       `json:"revision"`
	Updated      time.Time `json:"updated,omitzero"`
	Description  string    `json:"description,omitempty"`
	ReportedAt   time.Time `json:"reportedAt"`
	// History is every revision Helm keeps, newest first (GetHelmRelease only).
	History []runtimev1.HelmRevision `json:"history,omitempty"`
}

// HelmReleaseFilter narrows ListHelmReleases: a runtime (name or ID), cluster, namespace;
// empty matches anything.
type HelmReleaseFilter struct {
	Runtime, Cluster, Namespace string
}

// MaxHelmReleasesListed bounds a list of Helm releases.
const MaxHelmReleasesListed = 5000

// Bounds of a reported Helm release's strings.
const (
	maxHelmText        = 1024 // description
	maxHelmShort       = 256  // chart, versions, status
	maxHelmClusterName = 253
)

// checkHelmKey validates the cluster, namespace and name of a reported release.
func checkHelmKey(field string, r *runtimev1.HelmReleaseRecord, typ string) error {
	switch {
	case r == nil:
		return errdefs.Invalid(field, "", "is required for "+typ+": the Helm release")
	case r.Cluster == "" || len(r.Cluster) > maxHelmClusterName || hasSpaceOrControl(r.Cluster):
		return errdefs.Invalid(field+".cluster", r.Cluster, fmt.Sprintf("is not a cluster name: 1 to %d characters without spaces", maxHelmClusterName))
	case typ == runtimev1.HelmReleasesListed:
		return nil
	case len(validation.IsDNS1123Label(r.Namespace)) > 0:
		return errdefs.Invalid(field+".namespace", r.Namespace, "is not a namespace name (a DNS-1123 label)")
	case r.Name == "" || len(r.Name) > 253 || hasSpaceOrControl(r.Name):
		return errdefs.Invalid(field+".name", r.Name, "is not a Helm release name: 1 to 253 characters without spaces")
	}
	return nil
}

func badHelmShort(s string) bool { return len(s) > maxHelmShort || hasControl(s) }

// helmRow validates a reported release (HelmReleaseChanged) and makes its row (without
// account, runtime and report time).
func helmRow(field string, r *runtimev1.HelmReleaseRecord) (store.HelmRelease, error) {
	if err := checkHelmKey(field, r, runtimev1.HelmReleaseChanged); err != nil {
		return store.HelmRelease{}, err
	}
	if len(r.History) > runtimev1.MaxHelmRevisions {
		return store.HelmRelease{}, errdefs.Invalid(field+".history", fmt.Sprintf("%d revisions", len(r.History)), fmt.Sprintf("are too many: at most %d", runtimev1.MaxHelmRevisions))
	}
	check := func(f string, rev int, chart, chartVersion, appVersion, status, desc string) error {
		switch {
		case rev < 1:
			return errdefs.Invalid(f+".revision", fmt.Sprint(rev), "is not a revision: 1 or more")
		case badHelmShort(chart) || badHelmShort(chartVersion) || badHelmShort(appVersion) || badHelmShort(status):
			return errdefs.Invalid(f+".chart", chart+" "+chartVersion+" "+appVersion+" "+status,
				fmt.Sprintf("chart, chartVersion, appVersion and status are at most %d bytes without control characters", maxHelmShort))
		case len(desc) > maxHelmText:
			return errdefs.Invalid(f+".description", fmt.Sprintf("%d bytes", len(desc)), fmt.Sprintf("is too long: at most %d bytes", maxHelmText))
		}
		return nil
	}
	if err := check(field, r.Revision, r.Chart, r.ChartVersion, r.AppVersion, r.Status, r.Description); err != nil {
		return store.HelmRelease{}, err
	}
	for i, h := range r.History {
		if err := check(fmt.Sprintf("%s.history[%d]", field, i), h.Revision, h.Chart, h.ChartVersion, h.AppVersion, h.Status, h.Description); err != nil {
			return store.HelmRelease{}, err
		}
	}
	detail, err := json.Marshal(r)
	if err != nil {
		return store.HelmRelease{}, errdefs.Invalid(field, r.Name, "cannot be encoded: "+err.Error())
	}
	return store.HelmRelease{Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Name, Chart: r.Chart, ChartVersion: r.ChartVersion,
		AppVersion: r.AppVersion, Status: r.Status, Revision: r.Revision, UpdatedAt: r.Updated, Detail: noNUL(string(detail))}, nil
}

// prepareHelmEvent validates one of the Helm release events of a report.
func prepareHelmEvent(field string, ev *runtimev1.AppEvent) (preparedEvent, error) {
	pe := preparedEvent{typ: ev.Type, at: ev.At}
	if ev.App != "" {
		return pe, errdefs.Invalid(field+".app", ev.App, "must be empty for "+ev.Type+": Helm releases are the runtime's")
	}
	switch ev.Type {
	case runtimev1.HelmReleaseChanged:
		row, err := helmRow(field+".helmRelease", ev.HelmRelease)
		if err != nil {
			return pe, err
		}
		pe.helm = &row
	case runtimev1.HelmReleaseDeleted:
		if err := checkHelmKey(field+".helmRelease", ev.HelmRelease, ev.Type); err != nil {
			return pe, err
		}
		r := ev.HelmRelease
		pe.helm = &store.HelmRelease{Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Name}
	case runtimev1.HelmReleasesListed:
		if err := checkHelmKey(field+".helmRelease", ev.HelmRelease, ev.Type); err != nil {
			return pe, err
		}
		if n := len(ev.HelmReleases); n > runtimev1.MaxHelmReleasesListed {
			return pe, errdefs.Invalid(field+".helmReleases", fmt.Sprintf("%d releases", n), fmt.Sprintf("are too many: at most %d", runtimev1.MaxHelmReleasesListed))
		}
		pe.helm = &store.HelmRelease{Cluster: ev.HelmRelease.Cluster}
		pe.helmKeep = make(map[string]bool, len(ev.HelmReleases))
		for i, k := range ev.HelmReleases {
			if ns, name, ok := strings.Cut(k, "/"); !ok || ns == "" || name == "" {
				return pe, errdefs.Invalid(fmt.Sprintf("%s.helmReleases[%d]", field, i), k, "is not NAMESPACE/NAME")
			}
			pe.helmKeep[k] = true
		}
	}
	return pe, nil
}

// applyHelmEvent applies a prepared Helm release event in the report's transaction.
func applyHelmEvent(ctx context.Context, tx *store.Tx, rt Runtime, ev preparedEvent, now time.Time) error {
	h := ev.helm
	switch ev.typ {
	case runtimev1.HelmReleaseChanged:
		row := *h
		row.AccountID, row.RuntimeID, row.ReportedAt = rt.AccountID, rt.ID, now
		return tx.PutHelmRelease(ctx, row)
	case runtimev1.HelmReleaseDeleted:
		_, err := tx.DeleteHelmRelease(ctx, rt.AccountID, rt.ID, h.Cluster, h.Namespace, h.Name)
		return err
	case runtimev1.HelmReleasesListed:
		_, err := tx.KeepHelmReleases(ctx, rt.AccountID, rt.ID, h.Cluster, ev.helmKeep)
		return err
	}
	return nil
}

func helmFromRow(r store.HelmRelease, runtime string, withHistory bool) (HelmRelease, error) {
	out := HelmRelease{ID: r.ID, RuntimeID: r.RuntimeID, Runtime: runtime, Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Name,
		Chart: r.Chart, ChartVersion: r.ChartVersion, AppVersion: r.AppVersion, Status: r.Status, Revision: r.Revision, Updated: r.UpdatedAt,
		ReportedAt: r.ReportedAt}
	var rec runtimev1.HelmReleaseRecord
	if err := json.Unmarshal([]byte(r.Detail), &rec); err != nil {
		return out, fmt.Errorf("helm release %s: %w", r.ID, err)
	}
	out.Description = rec.Description
	if withHistory {
		out.History = rec.History
	}
	return out, nil
}

// ListHelmReleases returns the Helm releases p's account's runtimes reported, by cluster,
// namespace and name, without their history; those of runtimes p may not read are left out.
func (s *Service) ListHelmReleases(ctx context.Context, p rbac.Principal, f HelmReleaseFilter) ([]HelmRelease, error) {
	return s.helmReleases(ctx, p, f, "", false)
}

// GetHelmRelease returns one Helm release with its history: the release name in namespace,
// narrowed by f's runtime and cluster when more than one runtime or cluster has it.
func (s *Service) GetHelmRelease(ctx context.Context, p rbac.Principal, namespace, name string, f HelmReleaseFilter) (HelmRelease, error) {
	if namespace == "" {
		return HelmRelease{}, errdefs.Invalid("namespace", "", "is required: the release's namespace")
	}
	f.Namespace = namespace
	out, err := s.helmReleases(ctx, p, f, name, true)
	if err != nil {
		return HelmRelease{}, err
	}
	switch len(out) {
	case 0:
		return HelmRelease{}, fmt.Errorf("helm release %s in namespace %s: %w", name, namespace, errdefs.ErrNotFound)
	case 1:
		return out[0], nil
	}
	where := make([]string, len(out))
	for i, r := range out {
		where[i] = r.Runtime + "/" + r.Cluster
	}
	return HelmRelease{}, errdefs.Invalid("runtime", f.Runtime+" "+f.Cluster,
		fmt.Sprintf("must be given with cluster: release %s of namespace %s is in %s", name, namespace, strings.Join(where, ", ")))
}

func (s *Service) helmReleases(ctx context.Context, p rbac.Principal, f HelmReleaseFilter, name string, withHistory bool) ([]HelmRelease, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	names, owners := map[string]string{}, map[string]string{}
	rts, err := s.db.ListRuntimes(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	for _, rt := range rts {
		names[rt.ID], owners[rt.ID] = rt.Name, rt.OwnerTeamID
	}
	sf := store.HelmReleaseFilter{Cluster: f.Cluster, Namespace: f.Namespace, Name: name}
	if f.Runtime != "" {
		rt, err := s.db.GetRuntime(ctx, p.AccountID, f.Runtime)
		if err != nil {
			return nil, err
		}
		sf.RuntimeID = rt.ID
	}
	rows, err := s.db.ListHelmReleases(ctx, p.AccountID, sf, MaxHelmReleasesListed)
	if err != nil {
		return nil, err
	}
	out := []HelmRelease{}
	for _, r := range rows {
		if !rbac.Visible(p, runtimeResource(names[r.RuntimeID], owners[r.RuntimeID])) {
			continue
		}
		h, err := helmFromRow(r, names[r.RuntimeID], withHistory)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}
