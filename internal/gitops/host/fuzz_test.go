package host

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
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

// FuzzWorkflowSubmit feeds untrusted bodies of POST workflows to the decoder and to what the
// runtime checks before it creates anything: no panic; a refusal names a field; what is
// accepted is a Workflow in a valid namespace, with a name or a prefix, whose creator labels
// are the caller's and never the body's.
func FuzzWorkflowSubmit(f *testing.F) {
	f.Add(`{"workflow":{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"name":"hello"},"spec":{"entrypoint":"main","templates":[{"name":"main","suspend":{}}]}}}`)
	f.Add(`{"from":"workflowtemplate/release","parameters":["version=1.2.3"],"namespace":"ci"}`)
	f.Add(`{"workflow":{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"generateName":"x-","labels":{"workflows.argoproj.io/creator":"mallory"}},"spec":{"entrypoint":"main","templates":[{"name":"main","dag":{"tasks":[{"name":"A","template":"main","dependencies":["A"]}]}}]}}}`)
	f.Add(`{"from":"clusterworkflowtemplate/x","generateName":"A B"}`)
	f.Add(`{"workflow":[1]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeWorkflowSubmit(strings.NewReader(body))
		if err != nil {
			if errdefs.Field(err) == "" {
				t.Fatalf("decode error names no field: %v", err)
			}
			return
		}
		wf, err := workflows.PrepareSubmit(workflows.SubmitOptions{Namespace: req.Namespace, Manifest: req.Workflow, From: req.From,
			Parameters: req.Parameters, Entrypoint: req.Entrypoint, GenerateName: req.GenerateName, By: workflows.Submitter{User: "usr_1", Email: "ann@example.test"}})
		if err != nil {
			if errdefs.Field(err) == "" {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		if len(validation.IsDNS1123Label(wf.Namespace)) > 0 || (wf.Name == "" && wf.GenerateName == "") {
			t.Fatalf("accepted without a valid namespace or a name: %q %q %q", wf.Namespace, wf.Name, wf.GenerateName)
		}
		if wf.Labels[workflows.LabelCreator] != "usr_1" || wf.Annotations[workflows.AnnotationSubmittedBy] != "ann@example.test" {
			t.Fatalf("creator: %v %v", wf.Labels, wf.Annotations)
		}
	})
}

// FuzzResumeWorkflowParameters feeds untrusted JSON values as GraphQL resumeWorkflow's
// parameters: no panic; a refusal names parameters or parameters.NAME; what is accepted is an
// object whose every value was a string, held exactly.
func FuzzResumeWorkflowParameters(f *testing.F) {
	f.Add(`{"decision":"approve","reason":""}`)
	f.Add(`{}`)
	f.Add(`{"a":1}`)
	f.Add(`["decision=approve"]`)
	f.Add(`"decision"`)
	f.Add(`{"a":null,"b":{"c":"d"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		p, err := resumeParameters(v)
		if err != nil {
			if f := errdefs.Field(err); f != "parameters" && !strings.HasPrefix(f, "parameters.") {
				t.Fatalf("refusal names %q: %v", f, err)
			}
			return
		}
		var want map[string]string
		if err := json.Unmarshal([]byte(in), &want); err != nil || want == nil || len(want) != len(p) {
			t.Fatalf("accepted %q as %v, which is not an object of strings (%v)", in, p, err)
		}
		for k, x := range want {
			if p[k] != x {
				t.Fatalf("accepted %q as %v", in, p)
			}
		}
	})
}

// FuzzWorkflowResume feeds untrusted bodies of POST workflows/{namespace}/{name}/resume to the
// decoder: no panic; a refusal names the body; what is accepted holds exactly the body's node,
// parameters and message.
func FuzzWorkflowResume(f *testing.F) {
	f.Add(`{"node":"approve","parameters":{"decision":"approve"},"message":"approved by ann"}`)
	f.Add(`{}`)
	f.Add(``)
	f.Add(`{"parameters":{"a":1}}`)
	f.Add(`{"node":"x","extra":true}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeWorkflowResume(strings.NewReader(body))
		if err != nil {
			if errdefs.Field(err) != "body" {
				t.Fatalf("decode error names no field: %v", err)
			}
			return
		}
		var again appproxyv1.WorkflowResumeRequest
		if strings.TrimSpace(body) != "" {
			if err := json.Unmarshal([]byte(body), &again); err != nil {
				t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
			}
		}
		if again.Node != req.Node || again.Message != req.Message || len(again.Parameters) != len(req.Parameters) {
			t.Fatalf("decoded %+v, the body says %+v", req, again)
		}
	})
}
