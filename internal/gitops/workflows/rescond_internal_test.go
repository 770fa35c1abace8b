package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

const jobJSON = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","labels":{"x":"y","app.kubernetes.io/name":"n"}},
"spec":{"completions":3},"status":{"succeeded":2,"active":1,"phase":"Running","ratio":0.5,"ready":true,
"conditions":[{"type":"Complete","status":"False"}]}}`

// TestResourceConditions: Argo's reading of successCondition and failureCondition over an
// object's fields.
func TestResourceConditions(t *testing.T) {
	for _, tc := range []struct {
		success, failure string
		phase            NodePhase
		msg              string
	}{
		{"status.succeeded > 1", "", NodeSucceeded, "success condition 'status.succeeded > 1' evaluated true"},
		{"status.succeeded > 2", "", "", ""},
		{"status.succeeded < 3", "", NodeSucceeded, "success condition"},
		{"status.phase in (Running, Pending)", "", NodeSucceeded, ""},
		{"status.phase notin (Running)", "", "", ""},
		{"status.phase == Running,status.active = 1", "", NodeSucceeded, ""},
		{"status.phase == Running,status.active = 2", "", "", ""}, // every requirement must hold
		{"metadata.labels.x == y", "", NodeSucceeded, ""},
		{"metadata.labels.x != y", "", "", ""},
		{"status.ready == true", "", NodeSucceeded, ""},
		{"status.conditions.0.type == Complete", "", NodeSucceeded, ""},
		{"status.failed", "", "", ""},             // exists
		{"!status.failed", "", NodeSucceeded, ""}, // does not exist
		{"status.ratio > 0", "", "", ""},          // > compares integers only
		// failureCondition: any one requirement; it wins over a success condition that holds.
		{"status.succeeded > 1", "status.phase in (Failed, Running)", NodeFailed, "failure condition 'status.phase in (Failed,Running)' evaluated true"},
		{"", "status.active > 5,status.succeeded = 2", NodeFailed, "failure condition 'status.succeeded=2' evaluated true"},
		{"status.succeeded > 1", "status.phase in (Failed, Error)", NodeSucceeded, ""},
		{"", "status.phase == Failed", NodeSucceeded, ""}, // no success condition: done when the failure one does not hold
		{"", "", NodeSucceeded, ""},
	} {
		s, err := parseCondition(tc.success)
		if err != nil {
			t.Fatalf("%q: %v", tc.success, err)
		}
		f, err := parseCondition(tc.failure)
		if err != nil {
			t.Fatalf("%q: %v", tc.failure, err)
		}
		phase, msg := conditionsOutcome(s, f, []byte(jobJSON))
		if phase != tc.phase || !strings.Contains(msg, tc.msg) {
			t.Errorf("success %q failure %q: got %q %q, want %q %q", tc.success, tc.failure, phase, msg, tc.phase, tc.msg)
		}
	}
	for _, bad := range []string{"status.phase in (Failed", "status.phase ~ x", "a > b", "x = " + strings.Repeat("v", 64)} {
		if _, err := parseCondition(bad); err == nil || !strings.Contains(err.Error(), "is not a condition") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestResourceOutputs: valueFrom.jsonPath is what kubectl get -o jsonpath prints; jqFilter is
// gojq's output as Argo joins it, without the controller's environment, bounded.
func TestResourceOutputs(t *testing.T) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(jobJSON), &obj); err != nil {
		t.Fatal(err)
	}
	obj["spec"].(map[string]any)["completions"] = int64(3) // as the dynamic client decodes it
	for tmpl, want := range map[string]string{
		"{.metadata.name}":                            "j",
		"{.spec.completions}":                         "3",
		"{.status.nope}":                              "", // a missing key prints nothing
		"{.metadata.name}/{.status.phase}":            "j/Running",
		"{.status.conditions[0].type}":                "Complete",
		"{.metadata.labels}":                          `{"app.kubernetes.io/name":"n","x":"y"}`, // as JSON, as kubectl prints it
		"{range .status.conditions[*]}{.status}{end}": "False",
		`{.metadata.labels.app\.kubernetes\.io/name}`: "n",
	} {
		got, err := evalJSONPath(tmpl, obj)
		if err != nil || got != want {
			t.Errorf("jsonPath %s: got %q, %v; want %q", tmpl, got, err, want)
		}
	}
	ctx := context.Background()
	for filter, want := range map[string]string{
		".metadata.name":                     "j",
		".spec.completions":                  "3",
		".status.conditions[0]":              `{"status":"False","type":"Complete"}`,
		".metadata.labels | keys[]":          "app.kubernetes.io/name\nx",
		".status.nope":                       "null",
		"$ENV | length":                      "0",
		"env | length":                       "0",
		"[.status.succeeded, .status.ratio]": "[2,0.5]",
		"empty":                              "",
	} {
		got, err := evalJQ(ctx, filter, obj)
		if err != nil || got != want {
			t.Errorf("jqFilter %s: got %q, %v; want %q", filter, got, err, want)
		}
	}
	for filter, want := range map[string]string{
		".a | ":              "is not a jq filter",
		`import "x" as x; .`: "is not a jq filter",
		"error(\"no\")":      "no",
		// Few, large outputs: the cap is reached in microseconds, well inside jqTimeout on a
		// loaded machine under -race (100000 small ones took longer than 2s there).
		`range(1000) | "x" * 10000`: "makes more than 256 KiB",
		"last(repeat(1))":           "ran longer than 2s",
		// Memory without bound ends the filter's process, not the controller (jqchild.go).
		`"x" * 1e9 | length`: "needs more than 512 MiB",
	} {
		start := time.Now()
		if _, err := evalJQ(ctx, filter, obj); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("jqFilter %s: %v, want %q", filter, err, want)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("jqFilter %s ran %v", filter, time.Since(start))
		}
	}
	if _, err := evalJSONPath("{.metadata.name", obj); err == nil || !strings.Contains(err.Error(), "is not a JSONPath template") {
		t.Errorf("bad jsonPath: %v", err)
	}
	if _, err := evalJSONPath("{range .}{[]0}", obj); err == nil || !strings.Contains(err.Error(), "does not evaluate") {
		t.Errorf("jsonPath on which client-go panics: %v", err)
	}
	if _, err := evalJSONPath("{range .status.conditions[*]}{range .status.conditions[*]}{.metadata}{end}{end}", obj); err != nil {
		t.Errorf("nested range: %v", err)
	}
}

// FuzzResourceCondition: a successCondition or failureCondition either is refused by lint
// naming its field, or parses and is checked over any JSON without panicking, the failure
// condition winning.
func FuzzResourceCondition(f *testing.F) {
	for _, c := range []string{"status.succeeded > 0", "status.phase in (Failed, Error)", "metadata.labels.x == y", "!status.failed", "a,b!=c,d notin (e)", "x in ()", "a > 99999999999999999999"} {
		f.Add(c, jobJSON)
	}
	f.Add("status.a.b.c", `{"status":{"a":[1,{"b":{"c":null}}]}}`)
	f.Add("status.#", `[`)
	f.Fuzz(func(t *testing.T, cond, obj string) {
		c, err := parseCondition(cond)
		tmpl := &Template{Resource: &ResourceTemplate{Action: "get", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}", SuccessCondition: cond}}
		lerr := checkResource(tmpl, "r")
		switch {
		case strings.Contains(cond, "{{"):
			return // substituted before it is parsed
		case err != nil && (!errors.Is(lerr, errdefs.ErrInvalid) || errdefs.Field(lerr) != "r.successCondition"):
			t.Fatalf("%q does not parse (%v); lint: %v", cond, err, lerr)
		case err != nil:
			return
		case lerr != nil:
			t.Fatalf("%q parses yet lint refuses it: %v", cond, lerr)
		}
		phase, _ := conditionsOutcome(c, nil, []byte(obj))
		if fp, msg := conditionsOutcome(c, c, []byte(obj)); c != nil && phase == NodeSucceeded && fp != NodeFailed {
			t.Fatalf("%q holds as a success condition but not as a failure condition: %q %q", cond, fp, msg)
		}
	})
}

// FuzzResourceOutput: an output parameter's jsonPath and jqFilter either are refused (an error,
// never a panic) or give a bounded value within bounded time.
func FuzzResourceOutput(f *testing.F) {
	for _, s := range []string{"{.metadata.name}", ".metadata.name", "{range .status.conditions[*]}{.type}{end}", "[.[] | tostring]", "{.a[?(@.b==\"c\")]}", ".. | numbers", "{$.spec}"} {
		f.Add(s)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(jobJSON), &obj); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		if v, err := evalJSONPath(s, obj); err == nil && len(v) > maxOutputBytes {
			t.Fatalf("jsonPath %q: %d bytes", s, len(v))
		}
		if v, err := evalJQ(context.Background(), s, obj); err == nil && len(v) > maxOutputBytes {
			t.Fatalf("jqFilter %q: %d bytes", s, len(v))
		}
		if d := time.Since(start); d > jqTimeout+3*time.Second {
			t.Fatalf("%q took %v", s, d)
		}
	})
}

// TestResourceWaitsInEngine: a resource node stays Running, reading its object every check
// interval, until its success condition holds; its outputs (globalName too) come from the object
// as it is then; one whose condition never holds fails at its activeDeadlineSeconds.
func TestResourceWaitsInEngine(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: job, template: job}
      - {name: stuck, template: stuck, continueOn: {failed: true}}
  - name: job
    resource:
      action: create
      successCondition: status.succeeded > 0
      failureCondition: status.failed > 0
      manifest: |
        apiVersion: batch/v1
        kind: Job
        metadata: {name: j}
    outputs:
      parameters:
      - {name: count, globalName: succeeded, valueFrom: {jqFilter: .status.succeeded}}
  - name: stuck
    activeDeadlineSeconds: 30
    resource:
      action: get
      successCondition: status.phase == Done
      manifest: |
        apiVersion: v1
        kind: Thing
        metadata: {name: t}
`, nil)
	h.fc.objects = map[string]*unstructured.Unstructured{"Thing/t": {Object: map[string]any{"apiVersion": "v1", "kind": "Thing", "metadata": map[string]any{"name": "t"}}}}
	for i := 0; i < 3; i++ {
		if d := h.step(); d != DefaultResourceCheckInterval {
			t.Fatalf("requeue %v", d)
		}
		h.now = h.now.Add(DefaultResourceCheckInterval)
		if n := h.node("w[0].job"); n.Phase != NodeRunning || n.Message != "create Job/j as default (waiting for its success or failure condition)" {
			t.Fatalf("job %+v", n)
		}
	}
	h.fc.objects["Job/j"].Object["status"] = map[string]any{"succeeded": int64(2)}
	h.runToEnd()
	j := h.node("w[0].job")
	if j.Phase != NodeSucceeded || j.Message != "create Job/j as default; success condition 'status.succeeded > 0' evaluated true" ||
		j.Outputs == nil || *j.Outputs.Parameters[0].Value != "2" {
		t.Fatalf("job %+v", j)
	}
	if g := h.wf.Status.Outputs; g == nil || len(g.Parameters) != 1 || *g.Parameters[0].Value != "2" {
		t.Fatalf("global outputs %+v", g)
	}
	if s := h.node("w[0].stuck"); s.Phase != NodeFailed || s.Message != msgDeadline || s.FinishedAt.Sub(s.StartedAt.Time) != 30*time.Second {
		t.Fatalf("stuck %+v (%v)", s, s.FinishedAt.Sub(s.StartedAt.Time))
	}
	if !slices.Equal(h.fc.resources, []string{"create Job/j as default", "get Thing/t as default"}) {
		t.Fatalf("actions %q: each done once", h.fc.resources)
	}
}

// TestResourceWaitStopped: terminating a workflow fails a resource node that waits for its
// condition, with Argo's message, and the object is not read again.
func TestResourceWaitStopped(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w}
spec:
  entrypoint: main
  templates:
  - name: main
    resource:
      action: apply
      successCondition: status.ready == true
      manifest: |
        apiVersion: v1
        kind: Thing
        metadata: {name: t}
`, nil)
	h.step()
	if n := h.node("w"); n.Phase != NodeRunning || n.Resource == nil || n.Resource.Kind != "Thing" || n.Resource.Name != "t" {
		t.Fatalf("node %+v", n)
	}
	h.wf.Spec.Shutdown = "Terminate"
	h.runToEnd()
	if n := h.node("w"); n.Phase != NodeFailed || n.Message != msgTerminated || h.wf.Status.Message != msgTerminated {
		t.Fatalf("node %+v\n%s", n, h.dump())
	}
}

// TestResourceManifestFromInEngine: a resource template reads its manifest from an input
// artifact (raw here, given by the caller) as it is, fails with the artifact's name when the
// content is not a manifest, and fails when the controller cannot read it.
func TestResourceManifestFromInEngine(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: good
        template: make
        arguments:
          artifacts:
          - name: m
            raw:
              data: |
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: from-raw}
                data: {k: v}
      - name: bad
        template: make
        continueOn: {failed: true}
        arguments:
          artifacts:
          - {name: m, raw: {data: "just text"}}
      - name: remote
        template: make
        continueOn: {failed: true}
        arguments:
          artifacts:
          - {name: m, http: {url: "https://example.com/cm.yaml"}}
  - name: make
    inputs:
      artifacts:
      - {name: m}
    resource:
      action: apply
      manifestFrom: {artifact: {name: m}}
`, nil)
	h.runToEnd()
	if n := h.node("w[0].good"); n.Phase != NodeSucceeded || n.Message != "apply ConfigMap/from-raw as default" {
		t.Fatalf("good %+v", n)
	}
	if o := h.fc.objects["ConfigMap/from-raw"]; o == nil || o.Object["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("object %+v", o)
	}
	if n := h.node("w[0].bad"); n.Phase != NodeError || !strings.Contains(n.Message, `resource.manifestFrom (input artifact "m"): is not one YAML object`) {
		t.Fatalf("bad %+v", n)
	}
	if n := h.node("w[0].remote"); n.Phase != NodeFailed || !strings.Contains(n.Message, `resource.manifestFrom: input artifact "m": no artifact store in unit tests (https://example.com/cm.yaml)`) {
		t.Fatalf("remote %+v", n)
	}
	if !slices.Equal(h.fc.resources, []string{"apply ConfigMap/from-raw as default"}) {
		t.Fatalf("actions %q", h.fc.resources)
	}
}
