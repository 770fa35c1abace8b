package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// A runtime's reported Helm release reaches `freshet helm-release list` and `get`.
func TestHelmReleaseCommands(t *testing.T) {
	s := servertest.StartWith(t, store.SQLite, servertest.Config{})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := s.Runtimes().Authenticate(ctx, reg.Token)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	rel := &runtimev1.HelmReleaseRecord{Cluster: "in-cluster", Namespace: "shop", Name: "web", Chart: "nginx", ChartVersion: "1.1.0", AppVersion: "1.27",
		Status: "deployed", Revision: 2, Updated: at, History: []runtimev1.HelmRevision{
			{Revision: 2, Status: "deployed", Chart: "nginx", ChartVersion: "1.1.0", Updated: at, Description: "Upgrade complete"},
			{Revision: 1, Status: "superseded", Chart: "nginx", ChartVersion: "1.0.0", Updated: at.Add(-time.Hour), Description: "Install complete"}}}
	if _, err := s.Runtimes().Report(ctx, rt, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.HelmReleaseChanged, At: at, HelmRelease: rel}}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runIn(t, s.URL, key.Token, "", "helm-release", "list", "--namespace", "shop", "-o", "json")
	if code != 0 {
		t.Fatalf("list: %d %s", code, errOut)
	}
	var l []client.HelmRelease
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l) != 1 || l[0].Name != "web" || l[0].Runtime != "edge" || l[0].Revision != 2 {
		t.Fatalf("list: %v %s", err, out)
	}
	code, out, errOut = runIn(t, s.URL, key.Token, "", "helm-release", "get", "web", "--namespace", "shop")
	if code != 0 || !strings.Contains(out, "Install complete") || !strings.Contains(out, "nginx-1.0.0") {
		t.Fatalf("get: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = runIn(t, s.URL, key.Token, "", "helm-release", "get", "web"); code == 0 || !strings.Contains(errOut, "--namespace") {
		t.Fatalf("get without --namespace: %d %s", code, errOut)
	}
	if code, _, errOut = runIn(t, s.URL, key.Token, "", "helm-release", "get", "nope", "-n", "shop"); code == 0 {
		t.Fatalf("get of a missing release: %d %s", code, errOut)
	}
}
