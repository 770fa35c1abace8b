package runtimes

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// FuzzProjectRoles decodes arbitrary ProjectRolesListed events as the protocol handler does and
// validates them: nothing panics, every refusal is invalid input naming a field, what is
// accepted is bounded and free of NULs, and every rule derived from it (each group a team)
// validates.
func FuzzProjectRoles(f *testing.F) {
	for _, s := range []string{`{}`, `{"projectRoles":null}`, `{"app":"x"}`,
		`{"projectRoles":[{"project":"proj","role":"deployer","groups":["qa"],"policies":[{"resource":"applications","action":"sync","object":"web-*","allow":true},{"resource":"applications","action":"*","object":"web-3"}]}]}`,
		`{"projectRoles":[{"project":"proj","role":"r","policies":[{"resource":"logs","action":"action/apps/Deployment/restart","object":"ns/*","allow":true}]}]}`,
		`{"projectRoles":[{"project":"Proj","role":"-","groups":[""],"policies":[{"resource":"x","action":"fly","object":"[","allow":true}]}]}`,
		`{"projectRoles":[{"project":"p","role":"r"},{"project":"p","role":"r"}]}`,
		`{"projectRoles":[{"project":"p","role":"r","groups":["a\u0000"],"policies":[{"resource":"applications","action":"get","object":"a/b/c"}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ev runtimev1.AppEvent
		if err := (runnerv1.Codec{}).Unmarshal(body, &ev); err != nil {
			return
		}
		ev.Type = runtimev1.ProjectRolesListed
		roles, err := prepareProjectRoles("events[0]", &ev)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.HasPrefix(errdefs.Field(err), "events[0]") {
				t.Fatalf("refusal %q is not invalid input naming a field", err)
			}
			return
		}
		if len(roles) > runtimev1.MaxProjectRoles {
			t.Fatalf("accepted %d roles", len(roles))
		}
		teams := map[string]string{}
		for _, r := range roles {
			if len(r.Policies) > runtimev1.MaxRolePolicies || strings.ContainsRune(r.Project+r.Role+strings.Join(r.Groups, ""), 0) {
				t.Fatalf("accepted role %+v", r)
			}
			for _, g := range r.Groups {
				teams[g] = "team-" + g
			}
		}
		rules, _, _ := rbac.DeriveProjectRules("edge", teams, roles)
		for _, r := range rules {
			if err := r.Validate(); err != nil {
				t.Fatalf("derived rule %s does not validate: %v", r.Describe(), err)
			}
		}
	})
}
