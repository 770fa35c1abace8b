package host_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// A project of the installation repository with a deny window that is always open (a start
// every minute, an hour long): its automated app is not synced, the applications API shows the
// condition naming the window, and a manual sync through the API is refused with 409.
func TestSyncWindowThroughTheAPI(t *testing.T) {
	w := newWorld(t)
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	project := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: frozen}
spec:
  sourceRepos: ['%s']
  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]
  syncWindows:
    - {kind: deny, schedule: '* * * * *', duration: 1h, applications: ['*'], description: freeze}
`, w.source.URL())
	commitInstall(t, w, map[string]string{"projects/frozen.yaml": project})
	var e struct {
		Error struct{ Code, Message string }
	}
	doc := strings.Replace(appYAML("frozen-web", w.source.URL(), w.ns, true), "project: default", "project: frozen", 1)
	if code := w.call("member", "POST", "applications", doc, &e); code != http.StatusCreated {
		t.Fatalf("create: %d %+v", code, e)
	}
	a := w.waitApp("frozen-web", func(s engine.AppStatus) bool {
		_, ok := s.Condition(engine.ConditionSyncWindow)
		return ok
	})
	c, _ := a.Status.Condition(engine.ConditionSyncWindow)
	if a.Status.Sync != engine.OutOfSync || !strings.Contains(c.Message, `automated syncs are blocked by project "frozen"'s deny window spec.syncWindows[0]`) {
		t.Fatalf("status %s, condition %q", a.Status.Sync, c.Message)
	}
	if code := w.call("member", "POST", "applications/frozen-web/sync", "{}", &e); code != http.StatusConflict ||
		!strings.Contains(e.Error.Message, "manual syncs are blocked") || !strings.Contains(e.Error.Message, "spec.syncWindows[0]") {
		t.Fatalf("manual sync in a deny window: %d %+v", code, e)
	}
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(context.Background(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap was applied during a deny window: %v", err)
	}
}
