package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// `freshet environment …` and `freshet product …` against a real control plane whose runtime
// reports an annotated application: environments are created, listed in promotion order and
// read; the product's view places the application in its environment; bad input names the
// field.
func TestProductCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	cl := connect.NewClient[runtimev1.ReportRequest, runtimev1.ReportResponse](http.DefaultClient, s.URL+runtimev1.ProcedureReport, connect.WithCodec(runnerv1.Codec{}))
	req := connect.NewRequest(&runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{{Name: "web-qa", RepoURL: "https://git.example/a.git",
		DestName: "qa", DestNamespace: "web", Sync: "Synced", Health: "Healthy", Revision: "abc123", Annotations: map[string]string{"codefresh.io/product": "web"},
		ReconciledAt: time.Unix(1700000000, 0).UTC()}}})
	req.Header().Set("Authorization", "Bearer "+reg.Token)
	if _, err := cl.CallUnary(ctx, req); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runIn(t, s.URL, key.Token, "", args...) }
	if code, out, errOut := run("environment", "create", "prod", "--kind", "prod", "--order", "2", "--target", "cluster=prod"); code != 0 || !strings.Contains(out, "prod") {
		t.Fatalf("environment create prod: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run("environment", "create", "qa", "--order", "1", "--target", "runtime=edge,cluster=qa,namespace=w*"); code != 0 {
		t.Fatalf("environment create qa: %d %s %s", code, out, errOut)
	}
	code, out, _ := run("environment", "list")
	if code != 0 || strings.Index(out, "qa") > strings.Index(out, "prod") || !strings.Contains(out, "edge/qa/w*") {
		t.Fatalf("environment list: %d %s", code, out)
	}
	if code, out, _ := run("environment", "get", "qa", "-o", "json"); code != 0 || !strings.Contains(out, `"kind": "non-prod"`) {
		t.Fatalf("environment get: %d %s", code, out)
	}
	if code, out, errOut := run("product", "create", "web", "--pattern", "web-*"); code != 0 {
		t.Fatalf("product create: %d %s %s", code, out, errOut)
	}
	if code, out, _ := run("product", "list"); code != 0 || !strings.Contains(out, "web-*") {
		t.Fatalf("product list: %d %s", code, out)
	}
	code, out, errOut := run("product", "get", "web", "-o", "json")
	var v client.ProductView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Environments) != 2 || v.Environments[0].Environment.Name != "qa" ||
		len(v.Environments[0].Applications) != 1 || v.Environments[0].Applications[0].Revision != "abc123" || len(v.Promotions) != 1 {
		t.Fatalf("product get: %d %s %s", code, out, errOut)
	}
	if code, out, _ := run("product", "get", "web"); code != 0 || !strings.Contains(out, "PROMOTE qa → prod") || !strings.Contains(out, "edge/web-qa") {
		t.Fatalf("product get table: %d %s", code, out)
	}
	if code, _, errOut := run("environment", "create", "bad", "--kind", "production", "--target", "cluster=x"); code == 0 || !strings.Contains(errOut, "kind") {
		t.Fatalf("bad kind: %d %s", code, errOut)
	}
	if code, _, errOut := run("environment", "create", "bad", "--target", "zone=x"); code == 0 || !strings.Contains(errOut, "runtime, cluster or namespace") {
		t.Fatalf("bad target: %d %s", code, errOut)
	}
	if code, out, errOut := run("product", "update", "web", "--pattern", "web-*", "--pattern", "site-*"); code != 0 || !strings.Contains(out, "web-* site-*") {
		t.Fatalf("product update: %d %s %s", code, out, errOut)
	}
	if code, out, _ := run("product", "list"); code != 0 || !strings.Contains(out, "web-* site-*") {
		t.Fatalf("product list after the update: %d %s", code, out)
	}
	if code, _, errOut := run("product", "update", "web", "--pattern", "[x"); code == 0 || !strings.Contains(errOut, "patterns[0]") {
		t.Fatalf("bad pattern on update: %d %s", code, errOut)
	}
	if code, _, errOut := run("product", "delete", "web"); code != 0 {
		t.Fatalf("product delete: %d %s", code, errOut)
	}
	if code, _, errOut := run("environment", "delete", "qa"); code != 0 {
		t.Fatalf("environment delete: %d %s", code, errOut)
	}
}
