package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// An application the runtime cannot place (here: a runtime without any cluster) degrades the
// gitops component, naming the application and the reason; removing it makes it healthy again.
// No Kubernetes needed: that is the point.
func TestHealthNamesApplicationsWithPermanentProblems(t *testing.T) {
	srv := gitserver.New(t)
	source := srv.NewRepo("manifests")
	source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	dir := t.TempDir()
	repoURL, err := host.InitLocalRepo(filepath.Join(dir, "installation.git"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Dir: dir, InstallRepo: git.Repo{URL: repoURL}, ClusterStore: host.FileClusterStore{Dir: filepath.Join(dir, "clusters")},
		Engine: engine.Options{PollStep: 100 * time.Millisecond, EventDebounce: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	if c := h.Health(); c.Health != runtimev1.ComponentHealthy {
		t.Fatalf("health before any application: %+v", c)
	}
	caller := host.Caller{Email: "dev@example.com", Role: "member"}
	if _, err := h.CreateApplication(ctx, caller, []byte(appYAML("lost", source.URL(), "lost", false)), false, ""); err != nil {
		t.Fatal(err)
	}
	var c runtimev1.Component
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c = h.Health(); c.Health == runtimev1.ComponentDegraded {
			break
		}
	}
	if c.Health != runtimev1.ComponentDegraded || !strings.Contains(c.Message, "1 applications with problems: lost: NoClusterConfigured: no cluster configured") {
		t.Fatalf("health with an application and no cluster: %+v, want degraded naming lost and the reason", c)
	}
	if err := h.DeleteApplication(ctx, caller, "lost", false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c = h.Health(); c.Health == runtimev1.ComponentHealthy {
			break
		}
	}
	if c.Health != runtimev1.ComponentHealthy {
		t.Errorf("health once the application is gone: %+v", c)
	}
}
