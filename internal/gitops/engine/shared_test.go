package engine_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// FailOnSharedResource=true: a sync that would apply an object another application tracks
// (a Freshet app, or Argo CD's tracking-id) fails naming the object and that application,
// and nothing is applied; without the option the object is taken over as before.
func TestFailOnSharedResource(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"owner/shared.yaml": configMap("shared", "owner"),
		"taker/shared.yaml": configMap("shared", "taker"),
		"taker/own.yaml":    configMap("taker-own", "x"),
		"argo/argo.yaml":    configMap("from-argo", "taker"),
		"argo/own.yaml":     configMap("argo-own", "x"),
	}, "shared")
	v.upsert(v.application("owner", "owner", ""))
	v.mustSucceed(v.sync("owner", engine.SyncOptions{}))

	opt := "  syncPolicy:\n    syncOptions: [FailOnSharedResource=true]\n"
	v.upsert(v.application("taker", "taker", opt))
	res := v.sync("taker", engine.SyncOptions{})
	t.Logf("taker: %s", res.Message)
	want := "ConfigMap/" + v.ns + "/shared"
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, want) || !strings.Contains(res.Message, `application "owner"`) ||
		!strings.Contains(res.Message, "FailOnSharedResource") {
		t.Errorf("sync %s: %s; want Failed naming %s and application owner", res.Phase, res.Message, want)
	}
	if _, found := v.get(gvrCM, "taker-own"); found {
		t.Error("taker-own was applied although the sync failed on a shared resource")
	}
	if val := v.mustGet(gvrCM, "shared").Object["data"].(map[string]any)["value"]; val != "owner" {
		t.Errorf("the shared object was changed: %v", val)
	}

	// An object Argo CD tracks for another application (only its tracking annotation).
	if _, err := v.c.Client.CoreV1().ConfigMaps(v.ns).Create(v.ctx(30e9), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-argo",
		Annotations: map[string]string{engine.AnnotationArgoTrackingID: "argocd_legacy:/ConfigMap:" + v.ns + "/from-argo"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v.upsert(v.application("argo", "argo", opt))
	res = v.sync("argo", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, "ConfigMap/"+v.ns+"/from-argo") || !strings.Contains(res.Message, `application "legacy"`) {
		t.Errorf("sync %s: %s; want Failed naming from-argo and application legacy", res.Phase, res.Message)
	}
	if _, found := v.get(gvrCM, "argo-own"); found {
		t.Error("argo-own was applied")
	}

	// Without the option the object is taken over, as before.
	v.upsert(v.application("taker", "taker", ""))
	v.mustSucceed(v.sync("taker", engine.SyncOptions{}))
	if val := v.mustGet(gvrCM, "shared").Object["data"].(map[string]any)["value"]; val != "taker" {
		t.Errorf("without FailOnSharedResource the object was not taken over: %v", val)
	}
}
