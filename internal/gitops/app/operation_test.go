package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

func TestDecodeOperation(t *testing.T) {
	op, err := app.DecodeOperation([]byte(`{"operation":{"sync":{"revision":"v1","prune":true,"dryRun":true,"syncOptions":["Replace=true"],"resources":[{"group":"apps","kind":"Deployment","name":"web"}],"syncStrategy":{"apply":{"force":true}}},"initiatedBy":{"username":"alice"},"info":[{"name":"why","value":"release"}],"retry":{"limit":3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := op.Sync; s.RevisionSpec() != "v1" || !s.Prune || !s.DryRun || !s.SkipHooks() || len(s.Resources) != 1 || s.Resources[0].Group != "apps" || op.InitiatedBy.Username != "alice" {
		t.Errorf("decoded %+v %+v", op, op.Sync)
	}
	if w := strings.Join(op.Warnings, "; "); !strings.Contains(w, "operation.retry") || !strings.Contains(w, "force") {
		t.Errorf("warnings %q: want operation.retry and force named", w)
	}
	op, err = app.DecodeOperation([]byte("operation:\n  sync: {revisions: [a, b], syncStrategy: {hook: {}}}\n  initiatedBy: {automated: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if op.Sync.RevisionSpec() != "a,b" || op.Sync.SkipHooks() || !op.InitiatedBy.Automated {
		t.Errorf("decoded %+v", op.Sync)
	}

	for _, c := range []struct{ in, want string }{
		{`{"operation":{}}`, "operation.sync: is required"},
		{`{"operation":{"sync":{"revision":"a","revisions":["b"]}}}`, "operation.sync.revisions"},
		{`{"operation":{"sync":{"syncOptions":["CreateNamespace=yes"]}}}`, `operation.sync.syncOptions[0]: "CreateNamespace=yes" CreateNamespace takes true or false`},
		{`{"operation":{"sync":{"resources":[{"name":"x"}]}}}`, "operation.sync.resources[0].kind: is required"},
		{`{"operation":{"sync":{"syncStrategy":{"apply":{},"hook":{}}}}}`, "operation.sync.syncStrategy"},
		{`{"operation":{"sync":{"prune":"yes"}}}`, "operation.sync.prune"},
		{`{"operation":{"sync":{"revison":"a"}}}`, `did you mean "revision"`},
		{`{"operation":{"sync":{"manifests":["kind: x"]}}}`, "operation.sync.manifests"},
		{`{"operation":{"sync":{"revision":"a,b"}}}`, "without commas"},
	} {
		_, err := app.DecodeOperation([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want an invalid-argument error with %q", c.in, err, c.want)
		}
	}
	if _, err := app.DecodeOperation([]byte(`{"operation":{"sync":{"manifests":["x"]}}}`)); !errors.Is(err, app.ErrUnsupported) {
		t.Errorf("manifests: %v, want ErrUnsupported", err)
	}
}
