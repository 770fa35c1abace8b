package rollouts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
	"github.com/freshet-dev/freshet/internal/testenv/promenv"
)

// TestPrometheusProvider measures against a real Prometheus scraping a target the test sets:
// a vector and a scalar judged, basic auth and headers sent, and each kind of bad input an
// Error naming what is wrong.
func TestPrometheusProvider(t *testing.T) {
	target := promenv.NewTarget(t)
	target.Set(`freshet_success_rate{app="web"}`, 0.99)
	prom := promenv.Start(t, target)
	prom.WaitFor(t, `freshet_success_rate{app="web"}`, 0.99)

	metric := func(mod func(p *PrometheusMetric)) Metric {
		p := &PrometheusMetric{Address: prom.URL, Query: `freshet_success_rate{app="web"}`,
			Authentication: &PrometheusAuth{BasicAuth: &BasicAuth{Username: prom.User, Password: prom.Password}}}
		if mod != nil {
			mod(p)
		}
		return Metric{Name: "rate", SuccessCondition: "result[0] >= 0.95", Provider: MetricProvider{Prometheus: p}}
	}
	measure := func(m Metric) (AnalysisPhase, string, string) {
		return measurePrometheus(context.Background(), netpolicy.Unrestricted().HTTPClient(0), m)
	}
	if ph, v, msg := measure(metric(nil)); ph != AnalysisSuccessful || v != "[0.99]" || msg != "" {
		t.Fatalf("passing: %s %q %q", ph, v, msg)
	}
	scalar := metric(func(p *PrometheusMetric) { p.Query = `scalar(freshet_success_rate{app="web"})` })
	scalar.SuccessCondition = "result >= 0.95"
	if ph, v, msg := measure(scalar); ph != AnalysisSuccessful || v != "0.99" {
		t.Fatalf("scalar: %s %q %q", ph, v, msg)
	}
	// The same credentials as a header (how Argo Rollouts users send a bearer or basic token).
	viaHeader := metric(func(p *PrometheusMetric) {
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.SetBasicAuth(prom.User, prom.Password)
		p.Authentication = nil
		p.Headers = []WebHeader{{Key: "Authorization", Value: req.Header.Get("Authorization")}}
	})
	if ph, _, msg := measure(viaHeader); ph != AnalysisSuccessful {
		t.Fatalf("auth header: %s %q", ph, msg)
	}

	target.Set(`freshet_success_rate{app="web"}`, 0.5)
	prom.WaitFor(t, `freshet_success_rate{app="web"}`, 0.5)
	if ph, v, _ := measure(metric(nil)); ph != AnalysisFailed || v != "[0.5]" {
		t.Fatalf("failing: %s %q", ph, v)
	}

	for _, tc := range []struct {
		name string
		mod  func(p *PrometheusMetric)
		cond string
		want string
	}{
		{"wrong password", func(p *PrometheusMetric) { p.Authentication.BasicAuth.Password = "wrong" }, "", "not its API's JSON"},
		{"query error", func(p *PrometheusMetric) { p.Query = "sum(" }, "", "prometheus query failed (HTTP 400, bad_data)"},
		{"unreachable", func(p *PrometheusMetric) { p.Address = fmt.Sprintf("http://127.0.0.1:%d", proc.FreePort(t)) }, "", "connection refused"},
		{"no series", func(p *PrometheusMetric) { p.Query = `freshet_success_rate{app="none"}` }, "", `successCondition "result[0] >= 0.95"`},
		{"matrix", func(p *PrometheusMetric) { p.Query = `freshet_success_rate[1m]` }, "", `result type "matrix" is not supported`},
	} {
		ph, _, msg := measure(metric(tc.mod))
		if ph != AnalysisError || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %s %q, want Error with %q", tc.name, ph, msg, tc.want)
		}
	}
}

func TestPrometheusTemplateRefusals(t *testing.T) {
	for _, tc := range []struct{ provider, field string }{
		{`{"prometheus":{"query":"up"}}`, "spec.metrics[0].provider.prometheus.address"},
		{`{"prometheus":{"address":"ftp://x","query":"up"}}`, "spec.metrics[0].provider.prometheus.address"},
		{`{"prometheus":{"address":"http://p:9090"}}`, "spec.metrics[0].provider.prometheus.query"},
		{`{"prometheus":{"address":"http://p:9090","query":"up","timeout":-1}}`, "spec.metrics[0].provider.prometheus.timeout"},
		{`{"prometheus":{"address":"http://p:9090","query":"up","rangeQuery":{"step":"1m"}}}`, "spec.metrics[0].provider.prometheus.rangeQuery"},
		{`{"prometheus":{"address":"http://p:9090","query":"up"},"web":{"url":"http://x"}}`, "spec.metrics[0].provider"},
	} {
		doc := `{"apiVersion":"argoproj.io/v1alpha1","kind":"AnalysisTemplate","spec":{"metrics":[{"name":"m","provider":` + tc.provider + `}]}}`
		_, err := DecodeAnalysisTemplate([]byte(doc))
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: %v (field %q), want %s", tc.provider, err, errdefs.Field(err), tc.field)
		}
	}
}

// TestRunDryRunAndRetention: a dry-run metric that fails is recorded and summarised but the run
// succeeds; measurementRetention keeps that many measurements.
func TestRunDryRunAndRetention(t *testing.T) {
	run := AnalysisRun{Spec: AnalysisSpec{
		Metrics: []Metric{
			{Name: "gate", Interval: "1s", Count: ptrTo(intstr.FromInt32(5))},
			{Name: "probe", Interval: "1s", Count: ptrTo(intstr.FromInt32(5))},
		},
		DryRun:               []DryRun{{MetricName: "probe"}},
		MeasurementRetention: []MeasurementRetention{{MetricName: "*", Limit: 2}},
	}}
	measure := func(_ context.Context, i int, m Metric, n int32) (AnalysisPhase, string, string) {
		if m.Name == "probe" {
			return AnalysisFailed, fmt.Sprint(n), "low"
		}
		return AnalysisSuccessful, fmt.Sprint(n), ""
	}
	now := time.Now() // a measurement's finishedAt is the wall clock
	for range 10 {
		if run.step(context.Background(), measure, now) == 0 {
			break
		}
		now = now.Add(2 * time.Second)
	}
	if run.Status.Phase != AnalysisSuccessful {
		b, _ := json.Marshal(run.Status)
		t.Fatalf("run %s", b)
	}
	gate, probe := run.Status.MetricResults[0], run.Status.MetricResults[1]
	if gate.Count != 5 || len(gate.Measurements) != 2 || gate.Measurements[1].Value != "5" {
		t.Fatalf("gate %+v", gate)
	}
	if !probe.DryRun || probe.Phase != AnalysisFailed || probe.Count != 1 {
		t.Fatalf("probe %+v", probe)
	}
	if s := run.Status.DryRunSummary; s == nil || s.Count != 1 || s.Failed != 1 {
		t.Fatalf("dry-run summary %+v", s)
	}
}

func TestFieldPath(t *testing.T) {
	doc := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"app.kubernetes.io/name": "shop"}},
		"spec": map[string]any{"replicas": float64(4), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "web:2"}}}}}}
	for path, want := range map[string]string{
		"metadata.name": "web", "metadata.labels['app.kubernetes.io/name']": "shop", "spec.replicas": "4",
		"spec.template.spec.containers[0].image": "web:2",
	} {
		if got, err := fieldPath(doc, path); got != want || err != nil {
			t.Errorf("%s: %q %v, want %q", path, got, err, want)
		}
	}
	for _, bad := range []string{"metadata.nope", "spec.replicas.x", "spec.template.spec.containers[3]", "metadata.labels['x", "metadata..name"} {
		if _, err := fieldPath(doc, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// FuzzPrometheusResult: whatever a Prometheus server (or anything at its address) answers is
// read as numbers or refused with an error, never a panic.
func FuzzPrometheusResult(f *testing.F) {
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.99"]}]}}`))
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}}`))
	f.Add(400, []byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	f.Add(401, []byte(`Unauthorized`))
	f.Fuzz(func(t *testing.T, status int, raw []byte) {
		res, value, err := parsePrometheusResult(status, raw)
		if err != nil {
			if res != nil || value != "" {
				t.Fatal("an error with a result")
			}
			return
		}
		switch r := res.(type) {
		case []float64, float64:
			_ = r
		default:
			t.Fatalf("result %T", res)
		}
		if _, err := judge(Metric{Name: "m", SuccessCondition: "len(result) > 0 && result[0] > 0"}, res); err != nil &&
			!strings.Contains(err.Error(), "successCondition") {
			t.Fatalf("judge: %v", err)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
