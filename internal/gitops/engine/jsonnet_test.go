package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// A Jsonnet guestbook: two applications render the same directory with a top-level argument
// naming the app ($ARGOCD_APP_NAME), so each gets its own objects (the render is per app, not
// shared); a Jsonnet error is a comparison error naming file and line, and nothing is applied.
func TestJsonnetApps(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"jsonnet/lib/cm.libsonnet": "{ cm(name, data):: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name }, data: data } }\n",
		"jsonnet/gb/main.jsonnet": "local lib = import 'cm.libsonnet';\nfunction(name, n)\n" +
			"  [lib.cm(name + '-' + i, { color: std.extVar('color'), n: std.toString(n) }) for i in ['ui', 'db']]\n",
		"jsonnet/broken/main.jsonnet": "local lib = import '../lib/cm.libsonnet';\n\nlib.configMap('broken', { a: 'b' })\n",
	}, "jsonnet")
	doc := func(name, path string) *app.Application {
		a, err := app.DecodeApplication(fmt.Appendf(nil, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  source:
    repoURL: %s
    path: %s
    targetRevision: main
    directory:
      jsonnet:
        tlas: [{name: name, value: $ARGOCD_APP_NAME}, {name: n, value: "2 * 21", code: true}]
        extVars: [{name: color, value: blue}]
        libs: [jsonnet/lib]
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, name, v.repo.URL(), path, v.ns))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, name := range []string{"gb-a", "gb-b"} {
		v.upsert(doc(name, "jsonnet/gb"))
		v.mustSucceed(v.sync(name, engine.SyncOptions{}))
	}
	for _, name := range []string{"gb-a-ui", "gb-a-db", "gb-b-ui", "gb-b-db"} {
		data := v.mustGet(gvrCM, name).Object["data"].(map[string]any)
		if data["color"] != "blue" || data["n"] != "42" {
			t.Errorf("%s data %v", name, data)
		}
	}

	v.upsert(doc("gb-broken", "jsonnet/broken"))
	s := v.refresh("gb-broken")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, "jsonnet/broken/main.jsonnet:3") {
		t.Errorf("condition %+v, want a comparison error at jsonnet/broken/main.jsonnet:3", c)
	}
	if res := v.sync("gb-broken", engine.SyncOptions{}); res.Phase != engine.PhaseError {
		t.Errorf("sync %s", res.Phase)
	}
	if _, ok := v.get(gvrCM, "broken"); ok {
		t.Error("applied although the Jsonnet does not evaluate")
	}
}
