package host

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/events"
)

// FuzzBuildDeliveryPipeline feeds untrusted wizard values to the Delivery Pipeline builder:
// no panics; a refusal names a field; what is built decodes as an EventSource and a Sensor
// whose names are the pipeline's, so a value never escapes into the manifests' structure.
func FuzzBuildDeliveryPipeline(f *testing.F) {
	f.Add("build", "webhook", "/build", "", "", "", "hook", "git-clone", "repo", "x")
	f.Add("nightly", "calendar", "", "0 3 * * *", "", "", "", "git-clone", "", "")
	f.Add("p", "github", "", "", "acme", "shop\nkind: Secret", "s", "t", "a: b", "{{x}}")
	f.Add("p", "gitlab", "/x", "", "", "g/p", "s", "t", "", "")
	f.Fuzz(func(t *testing.T, name, typ, endpoint, schedule, owner, repo, secret, tmpl, param, value string) {
		req := appproxyv1.DeliveryPipelineCommitRequest{Name: name, WorkflowTemplate: tmpl,
			Event: appproxyv1.PipelineEvent{Type: typ, Endpoint: endpoint, Schedule: schedule, Owner: owner, Repository: repo, SecretName: secret}}
		if param != "" {
			req.Parameters = []appproxyv1.WorkflowParameter{{Name: param, Value: value}}
		}
		m, err := BuildDeliveryPipeline(req)
		if err != nil {
			if errdefs.Field(err) == "" {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		es, err := events.DecodeEventSource(mustJSON(t, m.EventSource))
		if err != nil || es.Name != name {
			t.Fatalf("built an EventSource that does not decode as %q: %v\n%s", name, err, m.EventSource)
		}
		s, err := events.DecodeSensor(mustJSON(t, m.Sensor))
		if err != nil || s.Name != name || len(s.Spec.Triggers) != 1 || len(s.Spec.Dependencies) != 1 {
			t.Fatalf("built a Sensor that does not decode as %q: %v\n%s", name, err, m.Sensor)
		}
		if m.TemplateName != tmpl || !strings.Contains(string(m.Sensor), tmpl) {
			t.Fatalf("the Sensor does not submit %q:\n%s", tmpl, m.Sensor)
		}
	})
}

func mustJSON(t *testing.T, y []byte) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("built YAML that does not read back: %v\n%s", err, y)
	}
	return j
}
