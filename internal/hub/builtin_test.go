package hub_test

import (
	"testing"

	hubfs "github.com/freshet-dev/freshet/hub"
	"github.com/freshet-dev/freshet/internal/hub"
)

// The templates Freshet ships with all decode and pass the workflow engine's validation (as
// `argo lint` would), and the everyday CI/CD jobs are there with README and parameters.
func TestBuiltinCatalogue(t *testing.T) {
	ts, errs := hub.Load(hubfs.FS, hubfs.Root)
	for _, e := range errs {
		t.Errorf("builtin template: %v", e)
	}
	byName := map[string]hub.Template{}
	for _, tp := range ts {
		byName[tp.Name] = tp
	}
	for _, want := range []string{"git-clone", "build-image", "push-image", "run-tests", "promote-image-tag", "notify"} {
		tp, ok := byName[want]
		if !ok {
			t.Errorf("builtin catalogue lacks %s", want)
			continue
		}
		v := tp.Latest()
		if v.README == "" || v.Description == "" || len(v.Parameters) == 0 || len(v.Categories) == 0 || v.Entrypoint == "" {
			t.Errorf("%s %s: README %d bytes, description %q, %d parameters, categories %v, entrypoint %q",
				want, v.Version, len(v.README), v.Description, len(v.Parameters), v.Categories, v.Entrypoint)
		}
		for _, p := range v.Parameters {
			if p.Description == "" {
				t.Errorf("%s: parameter %s has no description", want, p.Name)
			}
		}
	}
}
