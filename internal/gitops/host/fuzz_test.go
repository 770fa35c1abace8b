package host

import (
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// FuzzGitSourceInput feeds untrusted YAML to the Git Source decoder and to the destination
// filler that runs on every file of a Git Source: no panics; a refused Git Source names a
// field; filling a destination never makes an undecodable file decodable as something else.
func FuzzGitSourceInput(f *testing.F) {
	f.Add("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: apps}\nspec: {repoURL: https://example.com/a.git, path: prod}\n")
	f.Add("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: x}\nspec:\n  project: default\n  source: {repoURL: https://e.com/r.git}\n")
	f.Add("---\nkind: Application\nspec: []\n---\n{}\n")
	f.Add("a: &x [*x, *x]\n")
	f.Fuzz(func(t *testing.T, in string) {
		if g, err := decodeGitSource([]byte(in)); err == nil {
			if g.Metadata.Name == "" || g.Spec.RepoURL == "" {
				t.Fatalf("accepted a Git Source without name or repository: %+v", g)
			}
		} else if errdefs.Field(err) == "" {
			t.Fatalf("error names no field: %v", err)
		}
		out := withDestination([]byte(in), app.Destination{Name: "in-cluster", Namespace: "prod"})
		if string(out) != in {
			// Re-encoded: only Applications without a destination are touched, so the result
			// must hold a destination and still be YAML the decoder reads without panicking.
			if !strings.Contains(string(out), "destination") {
				t.Fatalf("re-encoded without adding a destination:\n%s", out)
			}
			_, _ = app.DecodeAll(out)
		}
	})
}
