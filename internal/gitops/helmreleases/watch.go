package helmreleases

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/api/runtimev1"
)

// DefaultInterval is how often a cluster's release Secrets are listed.
const DefaultInterval = 30 * time.Second

// listPage is how many Secrets one list call asks for.
const listPage = 100

// Reporter reads one cluster's Helm releases and reports what changed. It only lists Secrets
// (label selector owner=helm, every namespace): the runtime's service account needs list on
// secrets there, nothing more.
type Reporter struct {
	Cluster  string               // the cluster's name as the runtime knows it (in-cluster for its own)
	Client   kubernetes.Interface // the cluster
	Send     func(runtimev1.AppEvent)
	Interval time.Duration // DefaultInterval when 0
	Logger   *slog.Logger

	sent  map[string]runtimev1.HelmReleaseRecord // by namespace/name: what the control plane was last told
	syncs int
}

// listEvery: every this many Syncs (and the first), every release is sent again with the
// whole list of releases (runtimev1.HelmReleasesListed).
const listEvery = 10

// Run reports the cluster's releases every Interval until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	iv := r.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.log().Warn("listing Helm releases failed; trying again later", "cluster", r.Cluster, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(iv):
		}
	}
}

func (r *Reporter) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// Sync lists the release Secrets once and sends HelmReleaseChanged for each release that is new
// or changed since the last Sync, HelmReleaseDeleted for each that is gone. A Secret that does
// not decode is skipped, its reason logged.
func (r *Reporter) Sync(ctx context.Context) error {
	now, err := r.Releases(ctx)
	if err != nil {
		return err
	}
	full := r.syncs%listEvery == 0
	if r.sent == nil || full {
		// A full read: every release is sent again (reports lost while the control plane was
		// away are made good), and HelmReleasesListed below forgets the ones gone.
		r.sent = map[string]runtimev1.HelmReleaseRecord{}
	}
	keys := make([]string, 0, len(now))
	for k := range now {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	at := time.Now().UTC()
	for _, k := range keys {
		rel := now[k]
		if prev, ok := r.sent[k]; ok && reflect.DeepEqual(prev, rel) {
			continue
		}
		r.sent[k] = rel
		r.Send(runtimev1.AppEvent{Type: runtimev1.HelmReleaseChanged, At: at, HelmRelease: &rel})
	}
	gone := []string{}
	for k := range r.sent {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		prev := r.sent[k]
		delete(r.sent, k)
		r.Send(runtimev1.AppEvent{Type: runtimev1.HelmReleaseDeleted, At: at,
			HelmRelease: &runtimev1.HelmReleaseRecord{Cluster: r.Cluster, Namespace: prev.Namespace, Name: prev.Name}})
	}
	if full && len(keys) <= runtimev1.MaxHelmReleasesListed {
		r.Send(runtimev1.AppEvent{Type: runtimev1.HelmReleasesListed, At: at, HelmRelease: &runtimev1.HelmReleaseRecord{Cluster: r.Cluster},
			HelmReleases: keys})
	}
	r.syncs++
	return nil
}

// Releases lists the cluster's release Secrets and groups their revisions by release
// (namespace/name), newest revision first, at most runtimev1.MaxHelmRevisions each.
func (r *Reporter) Releases(ctx context.Context) (map[string]runtimev1.HelmReleaseRecord, error) {
	byKey := map[string][]Revision{}
	cont := ""
	for {
		list, err := r.Client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: LabelSelector, Limit: listPage, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: list secrets (%s): %w", r.Cluster, LabelSelector, err)
		}
		for i := range list.Items {
			s := &list.Items[i]
			rv, err := r.decodeSecret(s)
			if err != nil {
				r.log().Warn("skipping a Helm release Secret", "cluster", r.Cluster, "secret", s.Namespace+"/"+s.Name, "reason", err.Error())
				continue
			}
			k := rv.Namespace + "/" + rv.Name
			byKey[k] = append(byKey[k], rv)
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	out := make(map[string]runtimev1.HelmReleaseRecord, len(byKey))
	for k, rvs := range byKey {
		sort.Slice(rvs, func(i, j int) bool { return rvs[i].Revision > rvs[j].Revision })
		if len(rvs) > runtimev1.MaxHelmRevisions {
			rvs = rvs[:runtimev1.MaxHelmRevisions]
		}
		top := rvs[0]
		rec := runtimev1.HelmReleaseRecord{Cluster: r.Cluster, Namespace: top.Namespace, Name: top.Name, Chart: top.Chart,
			ChartVersion: top.ChartVersion, AppVersion: top.AppVersion, Status: top.Status, Revision: top.Revision, Updated: top.Updated,
			Description: top.Description}
		for _, rv := range rvs {
			rec.History = append(rec.History, rv.HelmRevision)
		}
		out[k] = rec
	}
	return out, nil
}

// decodeSecret decodes one release Secret; the release must be in the Secret's namespace
// (Helm stores it there), so a Secret cannot speak for another namespace.
func (r *Reporter) decodeSecret(s *corev1.Secret) (Revision, error) {
	if s.Type != SecretType {
		return Revision{}, fmt.Errorf("type %q is not %s", s.Type, SecretType)
	}
	data, ok := s.Data["release"]
	if !ok {
		return Revision{}, fmt.Errorf("no data key \"release\"")
	}
	rv, err := Decode(data)
	if err != nil {
		return rv, err
	}
	if rv.Namespace != s.Namespace {
		return Revision{}, fmt.Errorf("release %s says namespace %q, but its Secret is in %q", rv.Name, rv.Namespace, s.Namespace)
	}
	return rv, nil
}
