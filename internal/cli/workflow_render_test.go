package cli

import (
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
)

// TestRenderWorkflowGates: `freshet workflow get` says what a waiting approval gate asks and
// how to answer it; a workflow without one shows no such section.
func TestRenderWorkflowGates(t *testing.T) {
	yes := "yes"
	d := client.WorkflowDetail{Workflow: client.Workflow{Name: "release-x2", Namespace: "ci", Phase: "Running"}, Nodes: []client.WorkflowNode{
		{ID: "release-x2", DisplayName: "release-x2", Phase: "Running", Children: []string{"g"}},
		{ID: "g", DisplayName: "approve", Phase: "Running", Supplied: []client.WorkflowSuppliedParameter{
			{Name: "decision", Default: &yes, Enum: []string{"yes", "no"}, Description: "ship it?"},
			{Name: "ticket"},
		}},
	}}
	out := renderWorkflow(d)
	for _, want := range []string{
		"Waiting for approval at approve:",
		`decision  one of yes, no; default "yes"; ship it?`,
		"ticket    required",
		"answer: freshet workflow resume release-x2 --node approve -p ticket=VALUE\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
	d.Nodes[1].Supplied = nil
	if out := renderWorkflow(d); strings.Contains(out, "approval") {
		t.Fatalf("a workflow without a gate:\n%s", out)
	}
}
