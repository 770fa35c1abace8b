package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

const hubCLITemplate = `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: %s
  annotations:
    argo-hub/description: Greets
    argo-hub/categories: demo
spec:
  entrypoint: %s
  templates:
    - name: main
      container: {image: busybox, command: [echo, hi]}
`

// `freshet hub …` against a real control plane (whose operator allows loopback repositories):
// the builtin catalogue as JSON, a template's README and parameters, an admin's hub source from
// a real git repository over HTTP with its bad template reported naming file and field, and
// "use" refusing what it must before reaching a runtime.
func TestHubCommands(t *testing.T) {
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runIn(t, s.URL, key.Token, "", args...) }

	code, out, errOut := run("hub", "list", "-o", "json")
	var items []client.HubTemplate
	if code != 0 || json.Unmarshal([]byte(out), &items) != nil {
		t.Fatalf("hub list -o json: %d %s %s", code, out, errOut)
	}
	names := map[string]bool{}
	for _, it := range items {
		names[it.Name] = it.Source == "builtin" && it.LatestVersion != "" && it.Description != ""
	}
	for _, want := range []string{"git-clone", "build-image", "push-image", "run-tests", "promote-image-tag", "notify"} {
		if !names[want] {
			t.Errorf("hub list lacks builtin %s: %s", want, out)
		}
	}
	if code, out, _ := run("hub", "list", "--category", "notifications"); code != 0 || !strings.Contains(out, "notify") || strings.Contains(out, "git-clone") {
		t.Errorf("hub list --category: %d %s", code, out)
	}
	code, out, _ = run("hub", "get", "promote-image-tag")
	if code != 0 || !strings.Contains(out, "git-credentials-secret") || !strings.Contains(out, "(required)") || !strings.Contains(out, "README:") {
		t.Errorf("hub get: %d %s", code, out)
	}
	if code, _, errOut := run("hub", "get", "git-clone", "--version", "9.9.9"); code == 0 || !strings.Contains(errOut, "version") || !strings.Contains(errOut, "0.1.0") {
		t.Errorf("hub get of an unknown version: %d %s", code, errOut)
	}

	repo := gitserver.New(t).NewRepo("team-hub")
	repo.Commit("main", map[string]string{
		"workflows/greet/versions/1.0.0/workflowTemplate.yaml":  strings.NewReplacer("%s", "greet").Replace(strings.Replace(hubCLITemplate, "entrypoint: %s", "entrypoint: main", 1)),
		"workflows/broken/versions/1.0.0/workflowTemplate.yaml": strings.Replace(strings.Replace(hubCLITemplate, "name: %s", "name: broken", 1), "entrypoint: %s", "entrypoint: absent", 1),
	}, "templates")
	code, out, errOut = run("hub", "source", "add", "team", "--url", repo.URL(), "--path", "workflows")
	if code != 0 || !strings.Contains(out, "team") || !strings.Contains(errOut, "workflows/broken/versions/1.0.0/workflowTemplate.yaml: spec.entrypoint") {
		t.Fatalf("hub source add: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := run("hub", "source", "add", "bad", "--url", repo.URL(), "--path", "nowhere"); code == 0 || !strings.Contains(errOut, "path") {
		t.Errorf("hub source add with a missing path: %d %s", code, errOut)
	}
	if code, out, _ := run("hub", "list", "--search", "greet"); code != 0 || !strings.Contains(out, "greet") || !strings.Contains(out, "team") {
		t.Errorf("hub list after the source: %d %s", code, out)
	}
	if code, _, errOut := run("hub", "use", "greet", "--git-source", "ci"); code == 0 || !strings.Contains(errOut, "--runtime") {
		t.Errorf("hub use without --runtime: %d %s", code, errOut)
	}
	if code, _, errOut := run("hub", "use", "greet", "--runtime", "absent", "--git-source", "ci"); code == 0 || !strings.Contains(errOut, "absent") {
		t.Errorf("hub use on an unknown runtime: %d %s", code, errOut)
	}
	if code, _, errOut := run("hub", "source", "delete", "team"); code != 0 {
		t.Errorf("hub source delete: %d %s", code, errOut)
	}
	if code, out, _ := run("hub", "source", "list"); code != 0 || strings.Contains(out, "team") {
		t.Errorf("hub source list after delete: %d %s", code, out)
	}
}
