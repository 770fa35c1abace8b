package engine_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// A Kustomize overlay with the app's own overrides (name prefix, image) syncs and becomes
// Healthy.
func TestKustomizeApp(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"kust/base/kustomization.yaml": "resources:\n- deploy.yaml\n- cm.yaml\n",
		"kust/base/deploy.yaml":        deployment("api", 1, ""),
		"kust/base/cm.yaml":            configMap("api-config", "base"),
		"kust/overlay/kustomization.yaml": `resources:
- ../base
labels:
- pairs: {tier: backend}
patches:
- target: {kind: ConfigMap, name: api-config}
  patch: |-
    - op: replace
      path: /data/value
      value: overlay
`,
	}, "kustomize app")
	a := v.application("kust", "kust/overlay", "")
	a.Spec.Source.Kustomize = &app.KustomizeSource{NamePrefix: "dev-", Images: []string{"nginx=nginx:1.28"}}
	v.upsert(a)

	res := v.sync("kust", engine.SyncOptions{})
	v.mustSucceed(res)
	v.waitStatus("kust", 30*time.Second, "Synced and Healthy", healthy)
	dep := v.mustGet(gvrDeploy, "dev-api")
	img, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if img[0].(map[string]any)["image"] != "nginx:1.28" || dep.GetLabels()["tier"] != "backend" {
		t.Errorf("deployment: image %v labels %v", img[0].(map[string]any)["image"], dep.GetLabels())
	}
	cm := v.mustGet(gvrCM, "dev-api-config")
	if val, _, _ := unstructured.NestedString(cm.Object, "data", "value"); val != "overlay" {
		t.Errorf("configmap value %q", val)
	}
	s, _ := v.e.Status("kust")
	if s.SourceType != app.SourceTypeKustomize {
		t.Errorf("source type %q", s.SourceType)
	}
}

const chartYAML = `apiVersion: v2
name: shop
version: 0.1.0
`

const chartValues = `replicas: 1
greeting: hello
`

const chartDeploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    release: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}-web}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

const chartCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
  namespace: {{ .Release.Namespace | quote }}
`

// Helm hooks are mapped as Argo CD maps them: pre-install → PreSync; hook-succeeded → deleted.
const chartHook = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: busybox
`

// A Helm chart with a values file from the app's valueFiles and values, and a Helm hook run
// as a PreSync hook.
func TestHelmApp(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"charts/shop/Chart.yaml":                chartYAML,
		"charts/shop/values.yaml":               chartValues,
		"charts/shop/values-prod.yaml":          "replicas: 2\n",
		"charts/shop/templates/deployment.yaml": chartDeploy,
		"charts/shop/templates/cm.yaml":         chartCM,
		"charts/shop/templates/migrate.yaml":    chartHook,
	}, "chart")
	a := v.application("shop", "charts/shop", "")
	a.Spec.Source.Helm = &app.HelmSource{ValueFiles: []string{"values-prod.yaml"}, Values: "greeting: bonjour\n"}
	v.upsert(a)

	res := v.sync("shop", engine.SyncOptions{})
	v.mustSucceed(res)
	if len(res.Hooks) != 1 || res.Hooks[0].Type != engine.HookPreSync || res.Hooks[0].Phase != engine.PhaseSucceeded || !res.Hooks[0].Deleted {
		t.Errorf("hooks: %+v", res.Hooks)
	}
	v.waitStatus("shop", 30*time.Second, "Synced and Healthy", healthy)
	dep := v.mustGet(gvrDeploy, "shop-web")
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d, want 2 from values-prod.yaml", r)
	}
	cm := v.mustGet(gvrCM, "shop-greeting")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if data["greeting"] != "bonjour" || data["namespace"] != v.ns {
		t.Errorf("configmap data %v", data)
	}
	v.eventually(20*time.Second, "the hook Job is deleted (hook-succeeded)", func() (bool, string) {
		_, ok := v.get(gvrJob, "shop-migrate")
		return !ok, "still there"
	})
	s, _ := v.e.Status("shop")
	for _, r := range s.Resources {
		if r.Kind == "Job" {
			t.Errorf("the hook is listed as a resource: %+v", r)
		}
	}
}
