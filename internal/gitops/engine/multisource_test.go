package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
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
	rb, err := v.e.Rollback(v.ctx(60e9), "ms", hist[0].ID, false)
	if err != nil {
		t.Fatal(err)
	}
	v.mustSucceed(rb.Result)
	if got := color(); got != "blue" || rb.Result.Revision != hist[0].Revision {
		t.Errorf("after the rollback: color %q revision %s, want blue at %s", got, rb.Result.Revision, hist[0].Revision)
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
