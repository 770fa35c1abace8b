package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// FuzzDecodeOperation: an Application resource's `operation` (written by anyone with rights
// on the namespace) never panics the decoder; every error names a field or a line; what
// decodes has a sync whose options and resources are valid.
func FuzzDecodeOperation(f *testing.F) {
	f.Add([]byte(`{"operation":{"sync":{"revision":"main","prune":true,"dryRun":false,"syncOptions":["Replace=true"],"resources":[{"group":"apps","kind":"Deployment","name":"web","namespace":"ns"}],"syncStrategy":{"hook":{"force":true}}},"initiatedBy":{"username":"admin"},"info":[{"name":"reason","value":"x"}],"retry":{"limit":2}}}`))
	f.Add([]byte(`{"operation":{"sync":{"revisions":["a","b"],"syncStrategy":{"apply":{}}},"initiatedBy":{"automated":true}}}`))
	f.Add([]byte(`{"operation":{"sync":{"manifests":["x"],"source":{}}}}`))
	f.Add([]byte(`operation: {sync: {syncOptions: [Bogus=1]}}`))
	f.Add([]byte(`{"operation":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		op, err := app.DecodeOperation(data)
		if err != nil {
			var es app.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not app.Errors", err, err)
			}
			for _, e := range es {
				if e.Path == "" && e.Line == 0 && !strings.HasPrefix(e.Reason, "is empty") && !strings.Contains(e.Reason, "bytes; the limit") && !strings.Contains(e.Reason, "not valid YAML") {
					t.Fatalf("error names neither a field nor a line: %v", e)
				}
			}
			return
		}
		if op.Sync == nil {
			t.Fatal("decoded an operation without sync")
		}
		for _, r := range op.Sync.Resources {
			if r.Kind == "" || r.Name == "" {
				t.Fatalf("resource without kind or name: %+v", r)
			}
		}
		if op.Sync.Revision != "" && len(op.Sync.Revisions) > 0 {
			t.Fatal("both revision and revisions")
		}
	})
}
