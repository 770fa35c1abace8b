package host_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// Application resources of another namespace run only when their project lists the namespace
// in spec.sourceNamespaces (and the runtime watches it).
func TestClusterApplicationsInSourceNamespaces(t *testing.T) {
	other := kube.Shared(t).Namespace(t)
	w := newWorldWith(t, func(ns string, o *host.Options) {
		o.ClusterApps, o.ClusterAppsNamespace, o.ClusterAppsSourceNamespaces = true, ns, []string{other}
	})
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	waitCRD(t, dyn)
	project := func(sourceNamespaces string) string {
		return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team, namespace: %s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]
  sourceNamespaces: %s
`, w.ns, sourceNamespaces)
	}
	kubectlApplyAs(t, dyn, host.AppProjectsResource, w.ns, project(fmt.Sprintf("['%s*', '!kube-*']", other[:len(other)-1])))

	// In the default project (no sourceNamespaces): refused, saying why.
	kubectlApply(t, dyn, other, clusterApp("xapp", other, w.source.URL(), "web", false))
	waitCR(t, dyn, other, "xapp", "refused by the default project", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidSpecError", fmt.Sprintf(`namespace %q is not among the source namespaces of project "default"`, other))
	})
	if code := w.call("viewer", "GET", "applications/xapp", "", nil); code != http.StatusNotFound {
		t.Errorf("GET applications/xapp = %d, want 404 (not run)", code)
	}

	// In a project that lists the namespace: it runs, deploying to the destination.
	app := strings.Replace(clusterApp("yapp", other, w.source.URL(), "web", false), "project: default", "project: team", 1)
	app = strings.Replace(app, "namespace: "+other+"}", "namespace: "+w.ns+"}", 1)
	kubectlApply(t, dyn, other, app)
	waitCR(t, dyn, other, "yapp", "Synced", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced" && str(u, "status", "health", "status") == "Healthy"
	})
	var a host.Application
	if code := w.call("viewer", "GET", "applications/yapp", "", &a); code != http.StatusOK || a.File != "Application resource "+other+"/yapp" {
		t.Errorf("GET applications/yapp: %d file %q", code, a.File)
	}

	// The project stops listing it: the app stops (its resources stay), with the condition.
	kubectlApplyAs(t, dyn, host.AppProjectsResource, w.ns, project("['elsewhere']"))
	waitCR(t, dyn, other, "yapp", "refused once the project drops the namespace", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidSpecError", "spec.sourceNamespaces: elsewhere")
	})
	waitGone(t, "application yapp", func() bool { return w.call("viewer", "GET", "applications/yapp", "", nil) == http.StatusNotFound })
}
