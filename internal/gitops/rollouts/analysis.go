package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/jsonpath"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// RolloutAnalysis is a canary step's `analysis`: templates run as one AnalysisRun, blocking the
// step until it succeeds (a failure aborts the update).
type RolloutAnalysis struct {
	Templates            []AnalysisTemplateRef  `json:"templates"`
	Args                 []AnalysisArg          `json:"args,omitempty"`
	DryRun               []DryRun               `json:"dryRun,omitempty"`
	MeasurementRetention []MeasurementRetention `json:"measurementRetention,omitempty"`
	// StartingStep: background analysis (strategy.canary.analysis) starts at this step.
	StartingStep *int32 `json:"startingStep,omitempty"`
}

// DryRun names a metric (or "*": every metric) whose results are recorded but do not decide
// the run's phase.
type DryRun struct {
	MetricName string `json:"metricName"`
}

// MeasurementRetention keeps Limit measurements of a metric (or "*") instead of 10.
type MeasurementRetention struct {
	MetricName string `json:"metricName"`
	Limit      int32  `json:"limit"`
}

// AnalysisTemplateRef names an AnalysisTemplate (a ClusterAnalysisTemplate with clusterScope).
type AnalysisTemplateRef struct {
	TemplateName string `json:"templateName"`
	ClusterScope bool   `json:"clusterScope,omitempty"`
}

// AnalysisArg is an argument: a value, the pod-template hash of the Stable or Latest revision,
// a field of the Rollout, or a key of a Secret (read at each measurement, never written to the
// run's status or to a log).
type AnalysisArg struct {
	Name      string     `json:"name"`
	Value     *string    `json:"value,omitempty"`
	ValueFrom *ValueFrom `json:"valueFrom,omitempty"`
}

// ValueFrom is where an argument's value comes from.
type ValueFrom struct {
	PodTemplateHashValue *string       `json:"podTemplateHashValue,omitempty"`
	FieldRef             *FieldRef     `json:"fieldRef,omitempty"`
	SecretKeyRef         *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// FieldRef is a path in the Rollout: metadata.name, metadata.labels['k'], spec.replicas, …
type FieldRef struct {
	FieldPath string `json:"fieldPath"`
}

// SecretKeyRef is a key of a Secret in the Rollout's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// AnalysisTemplate is Argo Rollouts' AnalysisTemplate (and ClusterAnalysisTemplate).
type AnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AnalysisSpec `json:"spec"`
}

// AnalysisSpec is the spec of a template and of a run.
type AnalysisSpec struct {
	Metrics              []Metric               `json:"metrics"`
	Args                 []AnalysisArg          `json:"args,omitempty"`
	DryRun               []DryRun               `json:"dryRun,omitempty"`
	MeasurementRetention []MeasurementRetention `json:"measurementRetention,omitempty"`
	// Terminate ends a run (as Argo Rollouts' spec.terminate): it stops measuring, Successful.
	Terminate bool `json:"terminate,omitempty"`
}

// Metric is one measurement series and its verdict rules.
type Metric struct {
	Name                  string              `json:"name"`
	Interval              string              `json:"interval,omitempty"`
	InitialDelay          string              `json:"initialDelay,omitempty"`
	Count                 *intstr.IntOrString `json:"count,omitempty"`
	SuccessCondition      string              `json:"successCondition,omitempty"`
	FailureCondition      string              `json:"failureCondition,omitempty"`
	FailureLimit          *intstr.IntOrString `json:"failureLimit,omitempty"`
	InconclusiveLimit     *intstr.IntOrString `json:"inconclusiveLimit,omitempty"`
	ConsecutiveErrorLimit *intstr.IntOrString `json:"consecutiveErrorLimit,omitempty"`
	Provider              MetricProvider      `json:"provider"`
}

// MetricProvider is where a metric's measurements come from: exactly one of web, prometheus and
// job (Argo Rollouts' other providers are refused by name).
type MetricProvider struct {
	Web        *WebMetric        `json:"web,omitempty"`
	Prometheus *PrometheusMetric `json:"prometheus,omitempty"`
	Job        *JobMetric        `json:"job,omitempty"`
	Datadog    map[string]any    `json:"datadog,omitempty"`
	NewRelic   map[string]any    `json:"newRelic,omitempty"`
	Wavefront  map[string]any    `json:"wavefront,omitempty"`
	Kayenta    map[string]any    `json:"kayenta,omitempty"`
	CloudWatch map[string]any    `json:"cloudWatch,omitempty"`
	Graphite   map[string]any    `json:"graphite,omitempty"`
	InfluxDB   map[string]any    `json:"influxdb,omitempty"`
	SkyWalking map[string]any    `json:"skywalking,omitempty"`
	Plugin     map[string]any    `json:"plugin,omitempty"`
}

// WebMetric reads a JSON document over HTTP and picks the result with a JSON path.
type WebMetric struct {
	URL            string      `json:"url"`
	Method         string      `json:"method,omitempty"`
	Headers        []WebHeader `json:"headers,omitempty"`
	Body           string      `json:"body,omitempty"`
	TimeoutSeconds int64       `json:"timeoutSeconds,omitempty"`
	JSONPath       string      `json:"jsonPath,omitempty"`
}

// WebHeader is one request header.
type WebHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// AnalysisPhase is the phase of a measurement, a metric or a run.
type AnalysisPhase string

// The analysis phases, as Argo Rollouts names them.
const (
	AnalysisPending      AnalysisPhase = "Pending"
	AnalysisRunning      AnalysisPhase = "Running"
	AnalysisSuccessful   AnalysisPhase = "Successful"
	AnalysisFailed       AnalysisPhase = "Failed"
	AnalysisError        AnalysisPhase = "Error"
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
)

// AnalysisRun is Argo Rollouts' AnalysisRun: the metrics with their arguments resolved, and the
// measurements taken.
type AnalysisRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AnalysisSpec      `json:"spec"`
	Status            AnalysisRunStatus `json:"status,omitempty"`
}

// AnalysisRunStatus is status of an AnalysisRun.
type AnalysisRunStatus struct {
	Phase         AnalysisPhase  `json:"phase,omitempty"`
	Message       string         `json:"message,omitempty"`
	MetricResults []MetricResult `json:"metricResults,omitempty"`
	StartedAt     *metav1.Time   `json:"startedAt,omitempty"`
	DryRunSummary *RunSummary    `json:"dryRunSummary,omitempty"`
}

// RunSummary counts the dry-run metrics by phase.
type RunSummary struct {
	Count        int32 `json:"count,omitempty"`
	Successful   int32 `json:"successful,omitempty"`
	Failed       int32 `json:"failed,omitempty"`
	Inconclusive int32 `json:"inconclusive,omitempty"`
	Error        int32 `json:"error,omitempty"`
}

// MetricResult is one metric's measurements and counts.
type MetricResult struct {
	Name             string        `json:"name"`
	Phase            AnalysisPhase `json:"phase"`
	Measurements     []Measurement `json:"measurements,omitempty"`
	Message          string        `json:"message,omitempty"`
	Count            int32         `json:"count,omitempty"`
	Successful       int32         `json:"successful,omitempty"`
	Failed           int32         `json:"failed,omitempty"`
	Inconclusive     int32         `json:"inconclusive,omitempty"`
	Error            int32         `json:"error,omitempty"`
	ConsecutiveError int32         `json:"consecutiveError,omitempty"`
	DryRun           bool          `json:"dryRun,omitempty"`
}

// Measurement is one measurement.
type Measurement struct {
	Phase      AnalysisPhase `json:"phase"`
	Message    string        `json:"message,omitempty"`
	StartedAt  *metav1.Time  `json:"startedAt,omitempty"`
	FinishedAt *metav1.Time  `json:"finishedAt,omitempty"`
	Value      string        `json:"value,omitempty"`
}

// RolloutAnalysisRunStatus is status.canary.currentStepAnalysisRunStatus.
type RolloutAnalysisRunStatus struct {
	Name    string        `json:"name"`
	Status  AnalysisPhase `json:"status"`
	Message string        `json:"message,omitempty"`
}

// maxMeasurements kept per metric (Argo Rollouts keeps 10 by default).
const maxMeasurements = 10

// DecodeAnalysisTemplate reads an AnalysisTemplate or ClusterAnalysisTemplate and checks what
// this controller runs: errors name the field.
func DecodeAnalysisTemplate(data []byte) (*AnalysisTemplate, error) {
	var at AnalysisTemplate
	if err := json.Unmarshal(data, &at); err != nil {
		return nil, decodeError(err)
	}
	if at.APIVersion != Group+"/"+Version || (at.Kind != "AnalysisTemplate" && at.Kind != "ClusterAnalysisTemplate") {
		return nil, errdefs.Invalid("apiVersion/kind", at.APIVersion+" "+at.Kind, "is not "+Group+"/"+Version+" AnalysisTemplate or ClusterAnalysisTemplate")
	}
	if len(at.Spec.Metrics) == 0 {
		return nil, errdefs.Invalid("spec.metrics", "", "must hold at least one metric")
	}
	for i, m := range at.Spec.Metrics {
		f := fmt.Sprintf("spec.metrics[%d]", i)
		if m.Name == "" {
			return nil, errdefs.Invalid(f+".name", "", "is required")
		}
		for k, v := range map[string]string{"interval": m.Interval, "initialDelay": m.InitialDelay} {
			if v == "" {
				continue
			}
			if d, err := time.ParseDuration(v); err != nil || d < 0 {
				return nil, errdefs.Invalid(f+"."+k, v, "is not a duration (30s, 5m)")
			}
		}
		for k, v := range map[string]*intstr.IntOrString{"count": m.Count, "failureLimit": m.FailureLimit,
			"inconclusiveLimit": m.InconclusiveLimit, "consecutiveErrorLimit": m.ConsecutiveErrorLimit} {
			if v != nil && v.Type == intstr.Int && v.IntVal < 0 {
				return nil, errdefs.Invalid(f+"."+k, v.String(), "must be 0 or more")
			}
		}
		for k, c := range map[string]string{"successCondition": m.SuccessCondition, "failureCondition": m.FailureCondition} {
			if c == "" || strings.Contains(c, "{{") {
				continue // with arguments: compiled once they are resolved
			}
			if _, err := expr.Compile(c, expr.AllowUndefinedVariables(), expr.AsBool()); err != nil {
				return nil, errdefs.Invalid(f+"."+k, c, "does not parse: "+firstLine(err.Error()))
			}
		}
		if err := validateProvider(f+".provider", m.Provider); err != nil {
			return nil, err
		}
	}
	if err := validateArgs("spec.args", at.Spec.Args); err != nil {
		return nil, err
	}
	if err := validateDryRun("spec", at.Spec.DryRun, at.Spec.MeasurementRetention); err != nil {
		return nil, err
	}
	return &at, nil
}

const supportedProviders = "supported: web, prometheus, job"

func validateProvider(f string, p MetricProvider) error {
	var set []string
	for name, ok := range map[string]bool{"web": p.Web != nil, "prometheus": p.Prometheus != nil, "job": p.Job != nil,
		"datadog": p.Datadog != nil, "newRelic": p.NewRelic != nil, "wavefront": p.Wavefront != nil, "kayenta": p.Kayenta != nil,
		"cloudWatch": p.CloudWatch != nil, "graphite": p.Graphite != nil, "influxdb": p.InfluxDB != nil,
		"skywalking": p.SkyWalking != nil, "plugin": p.Plugin != nil} {
		if ok {
			set = append(set, name)
		}
	}
	switch {
	case len(set) == 0:
		return errdefs.Invalid(f, "", "names no provider ("+supportedProviders+")")
	case len(set) > 1:
		return errdefs.Invalid(f, strings.Join(sortedCopy(set), ", "), "must name exactly one provider")
	}
	switch {
	case p.Web != nil:
		if p.Web.URL == "" {
			return errdefs.Invalid(f+".web.url", "", "is required")
		}
	case p.Prometheus != nil:
		return validatePrometheus(f+".prometheus", p.Prometheus)
	case p.Job != nil:
		return validateJob(f+".job", p.Job)
	default:
		return errdefs.Invalid(f+"."+set[0], "", "is not supported ("+supportedProviders+")")
	}
	return nil
}

// validateArgs checks arguments (a template's or a Rollout's): a name, and at most one source.
func validateArgs(f string, args []AnalysisArg) error {
	for i, arg := range args {
		af := fmt.Sprintf("%s[%d]", f, i)
		if arg.Name == "" {
			return errdefs.Invalid(af+".name", "", "is required")
		}
		vf := arg.ValueFrom
		if vf == nil {
			continue
		}
		n := 0
		for _, set := range []bool{vf.PodTemplateHashValue != nil, vf.FieldRef != nil, vf.SecretKeyRef != nil} {
			if set {
				n++
			}
		}
		switch {
		case arg.Value != nil:
			return errdefs.Invalid(af+".valueFrom", "", "cannot be given with value")
		case n != 1:
			return errdefs.Invalid(af+".valueFrom", "", "must name exactly one of podTemplateHashValue, fieldRef, secretKeyRef")
		case vf.PodTemplateHashValue != nil && *vf.PodTemplateHashValue != "Stable" && *vf.PodTemplateHashValue != "Latest":
			return errdefs.Invalid(af+".valueFrom.podTemplateHashValue", *vf.PodTemplateHashValue, "must be Stable or Latest")
		case vf.FieldRef != nil && vf.FieldRef.FieldPath == "":
			return errdefs.Invalid(af+".valueFrom.fieldRef.fieldPath", "", "is required")
		case vf.SecretKeyRef != nil && (vf.SecretKeyRef.Name == "" || vf.SecretKeyRef.Key == ""):
			return errdefs.Invalid(af+".valueFrom.secretKeyRef", "", "needs name and key")
		}
	}
	return nil
}

// validateAnalysis checks a Rollout's analysis (a step's, background, pre- or post-promotion).
func validateAnalysis(f string, a *RolloutAnalysis) error {
	if len(a.Templates) == 0 {
		return errdefs.Invalid(f+".templates", "", "must name at least one template")
	}
	for i, t := range a.Templates {
		if t.TemplateName == "" {
			return errdefs.Invalid(fmt.Sprintf("%s.templates[%d].templateName", f, i), "", "is required")
		}
	}
	if err := validateArgs(f+".args", a.Args); err != nil {
		return err
	}
	return validateDryRun(f, a.DryRun, a.MeasurementRetention)
}

func validateDryRun(f string, dry []DryRun, keep []MeasurementRetention) error {
	for i, d := range dry {
		if d.MetricName == "" {
			return errdefs.Invalid(fmt.Sprintf("%s.dryRun[%d].metricName", f, i), "", "is required (a metric's name, or *)")
		}
	}
	for i, k := range keep {
		switch {
		case k.MetricName == "":
			return errdefs.Invalid(fmt.Sprintf("%s.measurementRetention[%d].metricName", f, i), "", "is required (a metric's name, or *)")
		case k.Limit < 1 || k.Limit > 1000:
			return errdefs.Invalid(fmt.Sprintf("%s.measurementRetention[%d].limit", f, i), strconv.Itoa(int(k.Limit)), "must be 1 to 1000")
		}
	}
	return nil
}

// dryRunOf says whether metric's results are only recorded.
func dryRunOf(spec *AnalysisSpec, metric string) bool {
	for _, d := range spec.DryRun {
		if d.MetricName == "*" || d.MetricName == metric {
			return true
		}
	}
	return false
}

// retentionOf is how many measurements of metric are kept (the metric's own entry before "*").
func retentionOf(spec *AnalysisSpec, metric string) int {
	n := maxMeasurements
	for _, k := range spec.MeasurementRetention {
		if k.MetricName == metric {
			return int(k.Limit)
		}
		if k.MetricName == "*" {
			n = int(k.Limit)
		}
	}
	return n
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// resolveArgs substitutes {{args.NAME}} in the fields of the metrics that take arguments. An
// argument without a value is an error naming it; one in keep (a Secret's, resolved only when
// measuring) is left as it is.
func resolveArgs(metrics []Metric, args map[string]string, keep map[string]bool) ([]Metric, error) {
	out := make([]Metric, len(metrics))
	for i, m := range metrics {
		sub := func(field, s string) (string, error) {
			var b strings.Builder
			for {
				start := strings.Index(s, "{{")
				if start < 0 {
					return b.String() + s, nil
				}
				end := strings.Index(s[start:], "}}")
				if end < 0 {
					return b.String() + s, nil
				}
				ref := strings.TrimSpace(s[start+2 : start+end])
				name, ok := strings.CutPrefix(ref, "args.")
				v, has := args[name]
				switch {
				case ok && keep[name]:
					v = s[start : start+end+2]
				case !ok || !has:
					return "", errdefs.Invalid(fmt.Sprintf("metrics[%d].%s", i, field), ref, "names an argument with no value")
				}
				b.WriteString(s[:start])
				b.WriteString(v)
				s = s[start+end+2:]
			}
		}
		subs := func(field string, ss ...*string) error {
			for _, p := range ss {
				v, err := sub(field, *p)
				if err != nil {
					return err
				}
				*p = v
			}
			return nil
		}
		headers := func(field string, hs []WebHeader) ([]WebHeader, error) {
			hs = append([]WebHeader(nil), hs...)
			for j := range hs {
				if err := subs(fmt.Sprintf("%s[%d].value", field, j), &hs[j].Value); err != nil {
					return nil, err
				}
			}
			return hs, nil
		}
		var err error
		c := m
		if err := subs("successCondition", &c.SuccessCondition); err != nil {
			return nil, err
		}
		if err := subs("failureCondition", &c.FailureCondition); err != nil {
			return nil, err
		}
		switch {
		case m.Provider.Web != nil:
			w := *m.Provider.Web
			if err := subs("provider.web.url", &w.URL); err != nil {
				return nil, err
			}
			if err := subs("provider.web.jsonPath", &w.JSONPath); err != nil {
				return nil, err
			}
			if err := subs("provider.web.body", &w.Body); err != nil {
				return nil, err
			}
			if w.Headers, err = headers("provider.web.headers", w.Headers); err != nil {
				return nil, err
			}
			c.Provider.Web = &w
		case m.Provider.Prometheus != nil:
			p := *m.Provider.Prometheus
			if err := subs("provider.prometheus.address", &p.Address); err != nil {
				return nil, err
			}
			if err := subs("provider.prometheus.query", &p.Query); err != nil {
				return nil, err
			}
			if err := subs("provider.prometheus.caCert", &p.CACert); err != nil {
				return nil, err
			}
			if p.Headers, err = headers("provider.prometheus.headers", p.Headers); err != nil {
				return nil, err
			}
			if a := p.Authentication; a != nil {
				a2 := *a
				if a.BasicAuth != nil {
					ba := *a.BasicAuth
					if err := subs("provider.prometheus.authentication.basicAuth", &ba.Username, &ba.Password); err != nil {
						return nil, err
					}
					a2.BasicAuth = &ba
				}
				if a.OAuth2 != nil {
					o := *a.OAuth2
					if err := subs("provider.prometheus.authentication.oauth2", &o.TokenURL, &o.ClientID, &o.ClientSecret); err != nil {
						return nil, err
					}
					o.Scopes = append([]string(nil), o.Scopes...)
					for j := range o.Scopes {
						if err := subs("provider.prometheus.authentication.oauth2.scopes", &o.Scopes[j]); err != nil {
							return nil, err
						}
					}
					a2.OAuth2 = &o
				}
				p.Authentication = &a2
			}
			c.Provider.Prometheus = &p
		case m.Provider.Job != nil:
			// Every string of the Job: the JSON is rewritten with each value escaped as a JSON
			// string's content, so a value stays data in the field it was put in.
			raw, err := json.Marshal(m.Provider.Job)
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			s := string(raw)
			for {
				start := strings.Index(s, "{{")
				end := -1
				if start >= 0 {
					end = strings.Index(s[start:], "}}")
				}
				if start < 0 || end < 0 {
					b.WriteString(s)
					break
				}
				ref := strings.TrimSpace(s[start+2 : start+end])
				v, err := sub("provider.job", "{{"+ref+"}}")
				if err != nil {
					return nil, err
				}
				q, _ := json.Marshal(v)
				b.WriteString(s[:start])
				b.WriteString(string(q[1 : len(q)-1]))
				s = s[start+end+2:]
			}
			var j JobMetric
			if err := json.Unmarshal([]byte(b.String()), &j); err != nil {
				return nil, errdefs.Invalid(fmt.Sprintf("metrics[%d].provider.job", i), "", "does not decode once its arguments are substituted: "+err.Error())
			}
			c.Provider.Job = &j
		}
		out[i] = c
	}
	return out, nil
}

// measureWeb takes one web measurement: GET (or the method) the URL through client, pick the
// value with the JSON path, and judge it with the conditions.
func measureWeb(ctx context.Context, client *http.Client, m Metric) (AnalysisPhase, string, string) {
	w := m.Provider.Web
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return AnalysisError, "", fmt.Sprintf("provider.web.url %q is not an http(s) URL", w.URL)
	}
	timeout := 10 * time.Second
	if w.TimeoutSeconds > 0 && w.TimeoutSeconds < 600 {
		timeout = time.Duration(w.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	method := w.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if w.Body != "" {
		body = strings.NewReader(w.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.URL, body)
	if err != nil {
		return AnalysisError, "", err.Error()
	}
	for _, h := range w.Headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return AnalysisError, "", err.Error()
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return AnalysisError, "", err.Error()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return AnalysisError, "", fmt.Sprintf("received non 2xx response code: %d", resp.StatusCode)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return AnalysisError, "", "the response is not JSON: " + err.Error()
	}
	result := doc
	if w.JSONPath != "" {
		jp := jsonpath.New("metric")
		if err := jp.Parse(w.JSONPath); err != nil {
			return AnalysisError, "", fmt.Sprintf("provider.web.jsonPath %q: %v", w.JSONPath, err)
		}
		vals, err := jp.FindResults(doc)
		if err != nil || len(vals) == 0 || len(vals[0]) == 0 {
			return AnalysisError, "", fmt.Sprintf("provider.web.jsonPath %q finds nothing in the response", w.JSONPath)
		}
		result = vals[0][0].Interface()
	}
	vb, _ := json.Marshal(result)
	phase, err := judge(m, result)
	if err != nil {
		return AnalysisError, string(vb), err.Error()
	}
	return phase, string(vb), ""
}

// judge applies successCondition and failureCondition (expr-lang, the language Argo Rollouts
// uses) to result.
func judge(m Metric, result any) (AnalysisPhase, error) {
	eval := func(field, c string) (bool, error) {
		prg, err := expr.Compile(c, expr.Env(map[string]any{"result": result}), expr.AsBool())
		if err != nil {
			return false, fmt.Errorf("%s %q does not parse: %s", field, c, firstLine(err.Error()))
		}
		out, err := expr.Run(prg, map[string]any{"result": result})
		if err != nil {
			return false, fmt.Errorf("%s %q: %s", field, c, firstLine(err.Error()))
		}
		b, _ := out.(bool)
		return b, nil
	}
	var ok, bad bool
	var err error
	if m.FailureCondition != "" {
		if bad, err = eval("failureCondition", m.FailureCondition); err != nil {
			return AnalysisError, err
		}
	}
	if m.SuccessCondition != "" {
		if ok, err = eval("successCondition", m.SuccessCondition); err != nil {
			return AnalysisError, err
		}
	}
	switch {
	case bad:
		return AnalysisFailed, nil
	case m.SuccessCondition == "":
		return AnalysisSuccessful, nil
	case ok:
		return AnalysisSuccessful, nil
	case m.FailureCondition == "":
		return AnalysisFailed, nil
	}
	return AnalysisInconclusive, nil
}

func limit(v *intstr.IntOrString, def int32) int32 {
	if v == nil {
		return def
	}
	if v.Type == intstr.Int {
		return v.IntVal
	}
	n, err := strconv.Atoi(v.StrVal)
	if err != nil {
		return def
	}
	return int32(n)
}

// measurer takes measurement n (1-based) of metric i of a run: Running while it is not over
// (a Job still running), else its phase, value and message.
type measurer func(ctx context.Context, i int, m Metric, n int32) (phase AnalysisPhase, value, msg string)

// inFlightPoll is how often a measurement that is still running (a Job) is looked at again.
const inFlightPoll = 250 * time.Millisecond

// step advances run by the measurements due at now and returns when the next one is due (0:
// none, the run is over). Dry-run metrics are measured and judged like the others, but only the
// dry-run summary counts them.
func (r *AnalysisRun) step(ctx context.Context, measure measurer, now time.Time) time.Duration {
	if r.Status.StartedAt == nil {
		t := metav1.NewTime(now)
		r.Status.StartedAt = &t
	}
	if len(r.Status.MetricResults) != len(r.Spec.Metrics) {
		r.Status.MetricResults = make([]MetricResult, len(r.Spec.Metrics))
		for i, m := range r.Spec.Metrics {
			r.Status.MetricResults[i] = MetricResult{Name: m.Name, Phase: AnalysisPending, DryRun: dryRunOf(&r.Spec, m.Name)}
		}
	}
	var next time.Duration
	soon := func(d time.Duration) {
		d = max(d, time.Millisecond)
		if next == 0 || d < next {
			next = d
		}
	}
	for i, m := range r.Spec.Metrics {
		res := &r.Status.MetricResults[i]
		if terminalPhase(res.Phase) {
			continue
		}
		if r.Spec.Terminate {
			res.Phase, res.Message = AnalysisSuccessful, "Metric Terminated"
			continue
		}
		interval, _ := time.ParseDuration(m.Interval)
		delay, _ := time.ParseDuration(m.InitialDelay)
		count := limit(m.Count, 0)
		if count == 0 && interval == 0 {
			count = 1
		}
		due := r.Status.StartedAt.Add(delay)
		if n := len(res.Measurements); n > 0 && res.Measurements[n-1].FinishedAt != nil {
			due = res.Measurements[n-1].FinishedAt.Add(interval)
		}
		if now.Before(due) {
			soon(due.Sub(now))
			continue
		}
		phase, value, msg := measure(ctx, i, m, res.Count+1)
		if phase == AnalysisRunning {
			res.Phase = AnalysisRunning
			soon(inFlightPoll)
			continue
		}
		start := metav1.NewTime(now)
		end := metav1.NewTime(time.Now())
		res.Measurements = append(res.Measurements, Measurement{Phase: phase, Value: value, Message: msg, StartedAt: &start, FinishedAt: &end})
		if keep := retentionOf(&r.Spec, m.Name); len(res.Measurements) > keep {
			res.Measurements = res.Measurements[len(res.Measurements)-keep:]
		}
		res.Count++
		res.Phase = AnalysisRunning
		switch phase {
		case AnalysisSuccessful:
			res.Successful++
			res.ConsecutiveError = 0
		case AnalysisFailed:
			res.Failed++
			res.ConsecutiveError = 0
		case AnalysisInconclusive:
			res.Inconclusive++
			res.ConsecutiveError = 0
		case AnalysisError:
			res.Error++
			res.ConsecutiveError++
			res.Message = msg
		}
		switch {
		case res.Failed > limit(m.FailureLimit, 0):
			res.Phase, res.Message = AnalysisFailed, fmt.Sprintf("%d of %d measurements failed (failureLimit %d)", res.Failed, res.Count, limit(m.FailureLimit, 0))
			if msg != "" {
				res.Message += ": " + msg
			}
		case res.ConsecutiveError > limit(m.ConsecutiveErrorLimit, 4):
			res.Phase = AnalysisError
			res.Message = fmt.Sprintf("%d consecutive errors (consecutiveErrorLimit %d): %s", res.ConsecutiveError, limit(m.ConsecutiveErrorLimit, 4), msg)
		case res.Inconclusive > limit(m.InconclusiveLimit, 0):
			res.Phase, res.Message = AnalysisInconclusive, fmt.Sprintf("%d inconclusive measurements", res.Inconclusive)
		case count > 0 && res.Count >= count:
			res.Phase = AnalysisSuccessful
		default:
			soon(interval)
		}
	}
	r.Status.Phase, r.Status.Message = AnalysisSuccessful, ""
	if r.Spec.Terminate {
		r.Status.Message = "Run Terminated"
	}
	var dry RunSummary
	var decided bool
	for _, res := range r.Status.MetricResults {
		if res.DryRun {
			dry.Count++
			switch res.Phase {
			case AnalysisSuccessful:
				dry.Successful++
			case AnalysisFailed:
				dry.Failed++
			case AnalysisInconclusive:
				dry.Inconclusive++
			case AnalysisError:
				dry.Error++
			case AnalysisPending, AnalysisRunning:
				if r.Status.Phase == AnalysisSuccessful {
					r.Status.Phase = AnalysisRunning
				}
			}
			continue
		}
		switch res.Phase {
		case AnalysisFailed, AnalysisError, AnalysisInconclusive:
			if !decided {
				decided = true
				r.Status.Phase = res.Phase
				r.Status.Message = fmt.Sprintf("Metric %q assessed %s: %s", res.Name, res.Phase, res.Message)
			}
		case AnalysisPending, AnalysisRunning:
			if !decided {
				r.Status.Phase = AnalysisRunning
			}
		}
	}
	r.Status.DryRunSummary = nil
	if dry.Count > 0 {
		r.Status.DryRunSummary = &dry
	}
	if terminalPhase(r.Status.Phase) {
		return 0
	}
	if next == 0 {
		next = inFlightPoll
	}
	return next
}

func terminalPhase(p AnalysisPhase) bool {
	return p == AnalysisSuccessful || p == AnalysisFailed || p == AnalysisError || p == AnalysisInconclusive
}
