package rollouts

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

const templateYAML = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  args: [{name: threshold}]
  metrics:
  - name: rate
    interval: 10s
    count: 3
    successCondition: "result >= {{args.threshold}}"
    failureCondition: "result < 0.5"
    provider:
      web: {url: "http://metrics.local/rate", jsonPath: "{$.rate}"}
`

func TestAnalysisTemplateRefusalsNameTheField(t *testing.T) {
	for _, tc := range []struct{ from, to, field string }{
		{`failureCondition: "result < 0.5"`, `failureCondition: "result <"`, "spec.metrics[0].failureCondition"},
		{`interval: 10s`, `interval: soon`, "spec.metrics[0].interval"},
		{`web: {url: "http://metrics.local/rate", jsonPath: "{$.rate}"}`, `prometheus: {query: up}`, "spec.metrics[0].provider.prometheus.address"},
		{`web: {url: "http://metrics.local/rate", jsonPath: "{$.rate}"}`, `datadog: {query: up}`, "spec.metrics[0].provider.datadog"},
		{`web: {url: "http://metrics.local/rate", jsonPath: "{$.rate}"}`, `prometheus: {address: "http://p:9090", query: up, authentication: {sigv4: {region: x}}}`, "spec.metrics[0].provider.prometheus.authentication.sigv4"},
		{`web: {url: "http://metrics.local/rate", jsonPath: "{$.rate}"}`, `job: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}`, "spec.metrics[0].provider.job.spec.template.spec.restartPolicy"},
		{`args: [{name: threshold}]`, `args: [{name: threshold, valueFrom: {secretKeyRef: {name: s}}}]`, "spec.args[0].valueFrom.secretKeyRef"},
		{`count: 3`, `count: -1`, "spec.metrics[0].count"},
	} {
		j, err := yaml.YAMLToJSON([]byte(strings.Replace(templateYAML, tc.from, tc.to, 1)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeAnalysisTemplate(j)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: %v (field %q), want field %s", tc.to, err, errdefs.Field(err), tc.field)
		}
	}
}

func TestArgsAndConditions(t *testing.T) {
	j, _ := yaml.YAMLToJSON([]byte(templateYAML))
	at, err := DecodeAnalysisTemplate(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resolveArgs(at.Spec.Metrics, map[string]string{}, nil); errdefs.Field(err) != "metrics[0].successCondition" {
		t.Fatalf("an unresolved argument: %v", err)
	}
	ms, err := resolveArgs(at.Spec.Metrics, map[string]string{"threshold": "0.9"}, nil)
	if err != nil || ms[0].SuccessCondition != "result >= 0.9" || at.Spec.Metrics[0].SuccessCondition != "result >= {{args.threshold}}" {
		t.Fatalf("resolved %q (template %q): %v", ms[0].SuccessCondition, at.Spec.Metrics[0].SuccessCondition, err)
	}
	for _, tc := range []struct {
		result any
		want   AnalysisPhase
	}{{0.95, AnalysisSuccessful}, {0.7, AnalysisInconclusive}, {0.2, AnalysisFailed}} {
		if got, err := judge(ms[0], tc.result); got != tc.want || err != nil {
			t.Errorf("result %v: %s %v, want %s", tc.result, got, err, tc.want)
		}
	}
	if got, err := judge(ms[0], "text"); got != AnalysisError || err == nil {
		t.Errorf("a string result: %s %v", got, err)
	}
}

// FuzzDecodeAnalysisTemplate: a template from git either is refused naming a field, or its
// conditions judge any JSON value without panicking.
func FuzzDecodeAnalysisTemplate(f *testing.F) {
	j, _ := yaml.YAMLToJSON([]byte(templateYAML))
	f.Add(j, []byte(`0.9`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AnalysisTemplate","spec":{"metrics":[{"name":"m","successCondition":"result[0] > 1","provider":{"web":{"url":"http://x/"}}}]}}`), []byte(`[2]`))
	f.Add([]byte(`{"kind":"AnalysisTemplate"}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, data, result []byte) {
		at, err := DecodeAnalysisTemplate(data)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		var v any
		if yaml.Unmarshal(result, &v) != nil {
			return
		}
		for _, m := range at.Spec.Metrics {
			if strings.Contains(m.SuccessCondition+m.FailureCondition, "{{") {
				continue
			}
			if _, err := judge(m, v); err != nil && !strings.Contains(err.Error(), "Condition") {
				t.Fatalf("judge error %v does not name the condition", err)
			}
		}
	})
}
