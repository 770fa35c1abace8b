package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// A runtime on a host reads Argo CD repository Secrets from files in its data directory: the
// good ones apply, a bad one is named in the component's health without its values.
func TestRepositoryCredentialsFromFiles(t *testing.T) {
	dir := t.TempDir()
	repos := filepath.Join(dir, "repositories")
	if err := os.MkdirAll(repos, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repos, "repos.yaml"), []byte(`apiVersion: v1
kind: Secret
metadata:
  name: charts
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData:
  url: https://charts.example.com
  type: helm
  username: robot
  password: s3cret
---
apiVersion: v1
kind: Secret
metadata:
  name: broken
  labels: {argocd.argoproj.io/secret-type: repository}
stringData:
  url: https://git.example.com/x
  insecure: "sometimes"
  password: hunter2
`), 0o600)
	h, err := host.New(host.Options{Dir: dir, RepoCreds: repocreds.Files{Dir: repos}})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := h.RepoCreds().Lookup("https://charts.example.com/stable")
	if !ok || c.Username != "robot" || c.Password != "s3cret" {
		t.Errorf("lookup: %v %v", c, ok)
	}
	hc := h.Health()
	if hc.Health != runtimev1.ComponentDegraded || !strings.Contains(hc.Message, "secret broken: insecure") || strings.Contains(hc.Message, "hunter2") {
		t.Errorf("health %+v", hc)
	}
}

// argocd-cm next to the repository Secrets gives the engine its Lua health checks and tracking
// method; a key that does not parse is named in the component's health.
func TestArgoCDConfigMapFromFiles(t *testing.T) {
	dir := t.TempDir()
	repos := filepath.Join(dir, "repositories")
	if err := os.MkdirAll(repos, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repos, "argocd-cm.yaml"), []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
data:
  application.resourceTrackingMethod: annotation
  resource.customizations.health.example.com_Widget: |
    return {status = "Suspended", message = "from lua"}
  resource.customizations.health.example.com_Broken: |
    hs = {
`), 0o600)
	h, err := host.New(host.Options{Dir: dir, RepoCreds: repocreds.Files{Dir: repos}})
	if err != nil {
		t.Fatal(err)
	}
	s := h.Engine().Settings()
	if s.TrackingMethod != engine.TrackingAnnotation || s.Health.Len() != 1 || s.Health.Lookup("example.com", "Widget") == nil {
		t.Fatalf("settings %+v (keys %v)", s, s.Health.Keys())
	}
	hc := h.Health()
	if hc.Health != runtimev1.ComponentDegraded || !strings.Contains(hc.Message, "argocd-cm resource.customizations.health.example.com_Broken") {
		t.Errorf("health %+v", hc)
	}
}

// In a cluster, argocd-cm is read from the runtime's namespace, like the repository Secrets.
func TestArgoCDConfigMapFromNamespace(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	src := repocreds.Secrets{Client: kc, Namespace: ns}
	if data, err := src.LoadSettings(context.Background()); err != nil || data != nil {
		t.Fatalf("no argocd-cm: %v %v", data, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm"},
		Data: map[string]string{"resource.customizations.health.ConfigMap": `return {status = "Degraded", message = "lua"}`}}
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Dir: t.TempDir(), RepoCreds: src})
	if err != nil {
		t.Fatal(err)
	}
	if s := h.Engine().Settings(); s.Health.Lookup("", "ConfigMap") == nil {
		t.Fatalf("settings %+v", s)
	}
}

// On a host, argocd-notifications-cm and its Secret are read from the data directory's files;
// a key that does not parse is named in the component's health, and the rest is in use.
func TestArgoCDNotificationsConfigFromFiles(t *testing.T) {
	dir := t.TempDir()
	repos := filepath.Join(dir, "repositories")
	if err := os.MkdirAll(repos, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repos, "notifications.yaml"), []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-notifications-cm
data:
  service.slack: |
    token: $slack-token
  template.broken: |
    message: "{{ .app.metadata.name"
  trigger.on-mine: |
    - when: app.status.health.status == 'Degraded'
      send: [app-health-degraded]
---
apiVersion: v1
kind: Secret
metadata:
  name: argocd-notifications-secret
data:
  slack-token: eG94Yi1zZWNyZXQ=
`), 0o600)
	h, err := host.New(host.Options{Dir: dir, RepoCreds: repocreds.Files{Dir: repos}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Notifications().Config()
	if cfg == nil || cfg.Services["slack"] == nil || cfg.Services["slack"].Slack.Token != "xoxb-secret" || cfg.Triggers["on-mine"] == nil || cfg.Templates["app-sync-succeeded"] == nil {
		t.Fatalf("config %+v", cfg)
	}
	hc := h.Health()
	if hc.Health != runtimev1.ComponentDegraded || !strings.Contains(hc.Message, "argocd-notifications-cm template.broken") || strings.Contains(hc.Message, "xoxb-secret") {
		t.Errorf("health %+v", hc)
	}
}
