package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
)

// A multi-source application as Argo CD documents it: a Helm chart from one repository with a
// value file from another ($values/...), plus a plain directory; its revision lists both
// sources' commits; a change in the values repository is seen and synced; a rollback goes back
// to both earlier commits.
func TestMultiSource(t *testing.T) {
	v := newEnv(t)
	values := v.srv.NewRepo("values")
	v.repo.Commit("main", map[string]string{
		"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":       "color: red\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ms-web}\ndata: {color: {{ .Values.color | quote }}}\n",
		"extra/cm.yaml":           configMap("ms-extra", "x"),
	}, "chart")
	first := values.Commit("main", map[string]string{"envs/prod.yaml": "color: blue\n"}, "prod values")
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ms}
spec:
  project: default
  sources:
  - repoURL: %[1]s
    path: chart
    targetRevision: main
    helm:
      valueFiles: [$values/envs/prod.yaml]
  - repoURL: %[2]s
    targetRevision: main
    ref: values
  - repoURL: %[1]s
    path: extra
    targetRevision: main
  destination: {server: https://kubernetes.default.svc, namespace: %[3]s}
`, v.repo.URL(), values.URL(), v.ns)
	a, err := app.DecodeApplication([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v.upsert(a)
	res := v.sync("ms", engine.SyncOptions{})
	v.mustSucceed(res)
	chartRev := v.repo.RevParse("main")
	if want := chartRev + "," + first + "," + chartRev; res.Revision != want {
		t.Errorf("revision %q, want %q", res.Revision, want)
	}
	color := func() string { return v.mustGet(gvrCM, "ms-web").Object["data"].(map[string]any)["color"].(string) }
	if got := color(); got != "blue" {
		t.Errorf("color %q: the $values file was not used", got)
	}
	v.mustGet(gvrCM, "ms-extra")

	// A push to the values repository: the app goes OutOfSync and a sync applies it.
	second := values.Commit("main", map[string]string{"envs/prod.yaml": "color: green\n"}, "greener")
	if n := v.e.Notify(values.URL(), "main"); n != 1 {
		t.Errorf("a push to the values repository queued %d apps", n)
	}
	s := v.refresh("ms")
	if s.Sync != engine.OutOfSync || !strings.Contains(s.Revision, second) {
		t.Fatalf("after a values push: %s at %s", s.Sync, s.Revision)
	}
	v.mustSucceed(v.sync("ms", engine.SyncOptions{Prune: true}))
	if got := color(); got != "green" {
		t.Errorf("color %q after the values push", got)
	}

	// Rollback to the first sync: both sources' commits.
	hist, _ := v.e.History("ms")
	if len(hist) != 2 {
		t.Fatalf("history %d entries", len(hist))
	}
	// Each entry records every source and its revision, as Argo CD's history does.
	for i, want := range [][]string{{chartRev, first, chartRev}, {chartRev, second, chartRev}} {
		h := hist[i]
		if !slices.Equal(h.Revisions, want) || len(h.Sources) != 3 || h.Sources[1].Ref != "values" || h.Sources[1].RepoURL != values.URL() ||
			h.Sources[2].Path != "extra" || h.Revision != strings.Join(want, ",") {
			t.Errorf("history[%d]: revisions %q sources %+v revision %q, want %q", i, h.Revisions, h.Sources, h.Revision, want)
		}
	}
	rb, err := v.e.Rollback(v.ctx(60e9), "ms", hist[0].ID, false)
	if err != nil {
		t.Fatal(err)
	}
	v.mustSucceed(rb.Result)
	if got := color(); got != "blue" || rb.Result.Revision != hist[0].Revision {
		t.Errorf("after the rollback: color %q revision %s, want blue at %s", got, rb.Result.Revision, hist[0].Revision)
	}
	hist, _ = v.e.History("ms")
	if last := hist[len(hist)-1]; last.InitiatedBy != engine.InitiatedByRollback || !slices.Equal(last.Revisions, []string{chartRev, first, chartRev}) {
		t.Errorf("the rollback's history entry: %+v", last)
	}

	// The sources changed since (the extra directory dropped): a rollback to an entry synced
	// from other sources cannot restore them, and says so.
	b, err := app.DecodeApplication([]byte(strings.Replace(doc, fmt.Sprintf("  - repoURL: %s\n    path: extra\n    targetRevision: main\n", v.repo.URL()), "", 1)))
	if err != nil || len(b.Spec.Sources) != 2 {
		t.Fatalf("two sources: %v %+v", err, b)
	}
	v.upsert(b)
	_, err = v.e.Rollback(v.ctx(60e9), "ms", hist[0].ID, false)
	if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "needs the same sources in the same order") ||
		!strings.Contains(err.Error(), fmt.Sprintf("history[id=%d]", hist[0].ID)) {
		t.Errorf("rollback onto other sources: %v", err)
	}
}

// A $ref value file that does not exist in its source is a comparison error naming it.
func TestMultiSourceMissingValues(t *testing.T) {
	v := newEnv(t)
	values := v.srv.NewRepo("values2")
	v.repo.Commit("main", map[string]string{
		"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: msm}\ndata: {a: b}\n",
	}, "chart")
	values.Commit("main", map[string]string{"README.md": "no values\n"}, "init")
	a, err := app.DecodeApplication([]byte(fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: msm}
spec:
  project: default
  sources:
  - {repoURL: %s, path: chart, targetRevision: main, helm: {valueFiles: [$values/envs/nope.yaml]}}
  - {repoURL: %s, targetRevision: main, ref: values}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, v.repo.URL(), values.URL(), v.ns)))
	if err != nil {
		t.Fatal(err)
	}
	v.upsert(a)
	s := v.refresh("msm")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, "$values/envs/nope.yaml") || !strings.Contains(c.Message, "spec.sources[0]") {
		t.Errorf("condition %+v", c)
	}
	if res := v.sync("msm", engine.SyncOptions{}); res.Phase != engine.PhaseError {
		t.Errorf("sync %s", res.Phase)
	}
	if _, ok := v.get(gvrCM, "msm"); ok {
		t.Error("applied although a value file is missing")
	}
}

// msChartApp is Argo CD's documented "Helm value files from an external Git repository"
// application: a chart from a chart repository reading $values/envs/prod.yaml from a git
// repository given as a ref source.
func (v *env) msChartApp(name, chartRepo, version, valuesRepo string) *app.Application {
	v.t.Helper()
	a, err := app.DecodeApplication([]byte(fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %[1]s}
spec:
  project: default
  sources:
  - repoURL: %[2]s
    chart: demo
    targetRevision: %[3]q
    helm:
      valueFiles: [$values/envs/prod.yaml]
      parameters: [{name: replicas, value: "2"}]
  - repoURL: %[4]s
    targetRevision: main
    ref: values
  destination: {server: https://kubernetes.default.svc, namespace: %[5]s}
`, name, chartRepo, version, valuesRepo, v.ns)))
	if err != nil {
		v.t.Fatal(err)
	}
	return a
}

// A chart from a chart repository in spec.sources with a $values file from git renders,
// syncs, records both sources' revisions (chart version, commit) in its history, follows a
// newly published version and a values push, and rolls back to both earlier revisions.
func TestMultiSourceChartRepository(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.0", "1.2.5", "2.0.0")
	v := newEnv(t, withCharts(t, nil))
	values := v.srv.NewRepo("chart-values")
	first := values.Commit("main", map[string]string{"envs/prod.yaml": "message: from-git\n"}, "prod values")
	v.upsert(v.msChartApp("msc", repo.URL, "1.2.x", values.URL()))

	res := v.sync("msc", engine.SyncOptions{})
	v.mustSucceed(res)
	if want := "1.2.5," + first; res.Revision != want {
		t.Errorf("revision %q, want %q", res.Revision, want)
	}
	data := func() map[string]any { return v.mustGet(gvrCM, "msc-cm").Object["data"].(map[string]any) }
	if d := data(); d["version"] != "1.2.5" || d["message"] != "from-git" || d["replicas"] != "2" {
		t.Errorf("configmap data %v: want chart 1.2.5 with the $values file and the parameter", d)
	}
	s := v.refresh("msc")
	if s.Sync != engine.Synced || s.Revision != "1.2.5,"+first || s.SourceType != app.SourceTypeHelm ||
		s.Commit == nil || !strings.HasPrefix(s.Commit.Message, "chart demo 1.2.5 from ") {
		t.Errorf("after sync: %s at %q (%s) commit %+v conditions %+v", s.Sync, s.Revision, s.SourceType, s.Commit, s.Conditions)
	}

	// A new chart version and a push to the values repository: a hard refresh sees both.
	repo.Add(t, "demo", "1.2.9")
	second := values.Commit("main", map[string]string{"envs/prod.yaml": "message: second\n"}, "second")
	if n := v.e.Notify(values.URL(), "main"); n != 1 {
		t.Errorf("a push to the values repository queued %d apps", n)
	}
	s, err := v.e.Refresh(v.ctx(30*time.Second), "msc", true)
	if err != nil || s.Sync != engine.OutOfSync || s.Revision != "1.2.9,"+second {
		t.Fatalf("after 1.2.9 and a values push, hard refresh: %v %s at %q %+v", err, s.Sync, s.Revision, s.Conditions)
	}
	v.mustSucceed(v.sync("msc", engine.SyncOptions{}))
	if d := data(); d["version"] != "1.2.9" || d["message"] != "second" {
		t.Errorf("after the second sync: %v", d)
	}

	hist, _ := v.e.History("msc")
	if len(hist) != 2 || hist[0].Revision != "1.2.5,"+first || hist[1].Revision != "1.2.9,"+second ||
		hist[0].Source.Chart != "demo" || hist[0].Commit == nil || !strings.Contains(hist[0].Commit.Message, "1.2.5") {
		t.Fatalf("history %+v", hist)
	}
	rb, err := v.e.Rollback(v.ctx(60*time.Second), "msc", hist[0].ID, false)
	if err != nil {
		t.Fatal(err)
	}
	v.mustSucceed(rb.Result)
	if d := data(); d["version"] != "1.2.5" || d["message"] != "from-git" || rb.Result.Revision != hist[0].Revision {
		t.Errorf("after the rollback: %v at %s, want 1.2.5 from-git at %s", d, rb.Result.Revision, hist[0].Revision)
	}
	if n := repo.Hits("/charts/demo-1.2.5.tgz"); n != 1 {
		t.Errorf("chart 1.2.5 downloaded %d times", n)
	}
}

// A chart version that does not exist in a multi-source app is the same condition as for a
// single-source app (repository, chart, the versions there are), naming the entry; nothing
// is applied.
func TestMultiSourceChartMissingVersion(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.1.0")
	v := newEnv(t, withCharts(t, nil))
	values := v.srv.NewRepo("chart-values2")
	values.Commit("main", map[string]string{"envs/prod.yaml": "message: x\n"}, "prod values")
	v.upsert(v.msChartApp("mscm", repo.URL, "1.5.0", values.URL()))
	s := v.refresh("mscm")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, "spec.sources[0]") || !strings.Contains(c.Message, repo.URL) ||
		!strings.Contains(c.Message, "demo") || !strings.Contains(c.Message, "1.5.0") || !strings.Contains(c.Message, "1.1.0, 1.0.0") {
		t.Errorf("missing version: %+v", s.Conditions)
	}
	if res := v.sync("mscm", engine.SyncOptions{}); res.Phase == engine.PhaseSucceeded {
		t.Errorf("sync %s", res.Phase)
	}
	if _, found := v.get(gvrCM, "mscm-cm"); found {
		t.Error("something was applied")
	}
}
