package app_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// FuzzDecodeAll feeds arbitrary multi-document files (an installation repository's
// projects/<name>.yaml, an app-of-apps directory) to DecodeAll: it never panics, every error
// names a field path or a line, every document decoded is an Application or an AppProject, and
// each survives an encode/decode round trip through the single-document decoders.
var fuzzNow = time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC) // the night Europe's clocks go forward

func FuzzDecodeAll(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	var all [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		all = append(all, data)
	}
	f.Add(bytes.Join(all, []byte("\n---\n")))
	f.Add([]byte(base + "---\n" + "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p}\nspec: {sourceRepos: ['*']}\n"))
	f.Add([]byte("kind: Deployment\n---\nkind: [x]\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("kind: AppProject\napiVersion: argoproj.io/v1alpha1\nmetadata: {name: p}\nspec:\n  syncWindows:\n" +
		"    - {kind: deny, schedule: '0 22 * * *', duration: 1h, applications: ['*'], manualSync: true, timeZone: Europe/Berlin}\n" +
		"    - {kind: allow, schedule: 'CRON_TZ=Asia/Tokyo 30 8 * * 1-5', duration: 36h, namespaces: ['prod-*'], clusters: [in-cluster], andOperator: true}\n"))
	f.Add([]byte("kind: AppProject\napiVersion: argoproj.io/v1alpha1\nmetadata: {name: p}\nspec:\n  syncWindows: [{kind: x, schedule: '61 * * *', duration: -1h, timeZone: Mars/Base}]\n"))
	f.Add([]byte("kind: AppProject\nspec: {destinations: [{server: '*', namespace: '*'}], roles: [{name: r, policies: [p]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := app.DecodeAll(data)
		if err != nil {
			var es app.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				if errors.Is(err, errdefs.ErrInvalid) && errdefs.Field(err) != "" {
					return
				}
				t.Fatalf("error %T %v is not app.Errors", err, err)
			}
			for _, e := range es {
				if e.Path == "" && e.Line == 0 && !strings.Contains(e.Reason, "not valid YAML") {
					t.Fatalf("error names neither a field nor a line: %v", e)
				}
			}
			return
		}
		for _, d := range docs {
			switch {
			case d.Application != nil && d.AppProject == nil:
				enc, err := app.EncodeApplication(d.Application)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				if _, err := app.DecodeApplication(enc); err != nil {
					t.Fatalf("re-decode of an Application from %q: %v\nencoded:\n%s", data, err, enc)
				}
			case d.AppProject != nil && d.Application == nil:
				enc, err := app.EncodeAppProject(d.AppProject)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				again, err := app.DecodeAppProject(enc)
				if err != nil {
					t.Fatalf("re-decode of an AppProject from %q: %v\nencoded:\n%s", data, err, enc)
				}
				if e2, _ := app.EncodeAppProject(again); !bytes.Equal(enc, e2) {
					t.Fatalf("round trip changed the project:\n%s\n%s", enc, e2)
				}
				// Decoded windows evaluate without panicking, and a blocked sync says why.
				probe := &app.Application{Metadata: app.ObjectMeta{Name: "probe"}, Spec: app.ApplicationSpec{
					Destination: app.Destination{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: "prod-a"}}}
				for _, manual := range []bool{false, true} {
					if dec := d.AppProject.SyncWindowsAllow(probe, fuzzNow, manual); !dec.Allowed && (dec.Index < 0 || !strings.Contains(dec.Message, "spec.syncWindows[")) {
						t.Fatalf("blocked without naming the window: %+v", dec)
					}
				}
			default:
				t.Fatalf("document at line %d is neither one Application nor one AppProject", d.Line)
			}
		}
	})
}
