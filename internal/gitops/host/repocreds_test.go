package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
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
