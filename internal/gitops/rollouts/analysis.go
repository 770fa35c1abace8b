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
	Templates []AnalysisTemplateRef `json:"templates"`
	Args      []AnalysisArg         `json:"args,omitempty"`
}

// AnalysisTemplateRef names an AnalysisTemplate (a ClusterAnalysisTemplate with clusterScope).
type AnalysisTemplateRef struct {
	TemplateName string `json:"templateName"`
	ClusterScope bool   `json:"clusterScope,omitempty"`
}

// AnalysisArg is an argument: a value, or the pod-template hash of the Stable or Latest revision.
type AnalysisArg struct {
	Name      string     `json:"name"`
	Value     *string    `json:"value,omitempty"`
	ValueFrom *ValueFrom `json:"valueFrom,omitempty"`
}

// ValueFrom is where an argument's value comes from.
type ValueFrom struct {
	PodTemplateHashValue *string        `json:"podTemplateHashValue,omitempty"`
	FieldRef             map[string]any `json:"fieldRef,omitempty"`
	SecretKeyRef         map[string]any `json:"secretKeyRef,omitempty"`
}

// AnalysisTemplate is Argo Rollouts' AnalysisTemplate (and ClusterAnalysisTemplate).
type AnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AnalysisSpec `json:"spec"`
}

// AnalysisSpec is the spec of a template and of a run.
type AnalysisSpec struct {
	Metrics []Metric      `json:"metrics"`
	Args    []AnalysisArg `json:"args,omitempty"`
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

// MetricProvider: only web is built; the others are refused by name.
type MetricProvider struct {
	Web        *WebMetric     `json:"web,omitempty"`
	Prometheus map[string]any `json:"prometheus,omitempty"`
	Job        map[string]any `json:"job,omitempty"`
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
		switch p := m.Provider; {
		case p.Web != nil:
			if p.Web.URL == "" {
				return nil, errdefs.Invalid(f+".provider.web.url", "", "is required")
			}
		case p.Prometheus != nil:
			return nil, errdefs.Invalid(f+".provider.prometheus", "", "is not supported yet (supported: web)")
		case p.Job != nil:
			return nil, errdefs.Invalid(f+".provider.job", "", "is not supported yet (supported: web)")
		default:
			return nil, errdefs.Invalid(f+".provider", "", "names no supported provider (supported: web)")
		}
	}
	return &at, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// resolveArgs substitutes {{args.NAME}} in the fields of the metrics that take arguments. An
// argument without a value is an error naming it.
func resolveArgs(metrics []Metric, args map[string]string) ([]Metric, error) {
	out := make([]Metric, len(metrics))
	for i, m := range metrics {
		sub := func(field, s string) (string, error) {
			for {
				start := strings.Index(s, "{{")
				if start < 0 {
					return s, nil
				}
				end := strings.Index(s[start:], "}}")
				if end < 0 {
					return s, nil
				}
				ref := strings.TrimSpace(s[start+2 : start+end])
				name, ok := strings.CutPrefix(ref, "args.")
				v, has := args[name]
				if !ok || !has {
					return "", errdefs.Invalid(fmt.Sprintf("metrics[%d].%s", i, field), ref, "names an argument with no value")
				}
				s = s[:start] + v + s[start+end+2:]
			}
		}
		var err error
		c := m
		if c.SuccessCondition, err = sub("successCondition", m.SuccessCondition); err != nil {
			return nil, err
		}
		if c.FailureCondition, err = sub("failureCondition", m.FailureCondition); err != nil {
			return nil, err
		}
		if m.Provider.Web != nil {
			w := *m.Provider.Web
			if w.URL, err = sub("provider.web.url", w.URL); err != nil {
				return nil, err
			}
			if w.JSONPath, err = sub("provider.web.jsonPath", w.JSONPath); err != nil {
				return nil, err
			}
			w.Headers = append([]WebHeader(nil), w.Headers...)
			for j := range w.Headers {
				if w.Headers[j].Value, err = sub(fmt.Sprintf("provider.web.headers[%d].value", j), w.Headers[j].Value); err != nil {
					return nil, err
				}
			}
			c.Provider.Web = &w
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

// step advances run by the measurements due at now and returns when the next one is due (0:
// none, the run is over).
func (r *AnalysisRun) step(ctx context.Context, client *http.Client, now time.Time) time.Duration {
	if r.Status.StartedAt == nil {
		t := metav1.NewTime(now)
		r.Status.StartedAt = &t
	}
	if len(r.Status.MetricResults) != len(r.Spec.Metrics) {
		r.Status.MetricResults = make([]MetricResult, len(r.Spec.Metrics))
		for i, m := range r.Spec.Metrics {
			r.Status.MetricResults[i] = MetricResult{Name: m.Name, Phase: AnalysisPending}
		}
	}
	var next time.Duration
	for i, m := range r.Spec.Metrics {
		res := &r.Status.MetricResults[i]
		if res.Phase == AnalysisSuccessful || res.Phase == AnalysisFailed || res.Phase == AnalysisError || res.Phase == AnalysisInconclusive {
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
			if d := due.Sub(now); next == 0 || d < next {
				next = d
			}
			continue
		}
		start := metav1.NewTime(now)
		phase, value, msg := measureWeb(ctx, client, m)
		end := metav1.NewTime(time.Now())
		res.Measurements = append(res.Measurements, Measurement{Phase: phase, Value: value, Message: msg, StartedAt: &start, FinishedAt: &end})
		if len(res.Measurements) > maxMeasurements {
			res.Measurements = res.Measurements[len(res.Measurements)-maxMeasurements:]
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
		case res.ConsecutiveError > limit(m.ConsecutiveErrorLimit, 4):
			res.Phase = AnalysisError
			res.Message = fmt.Sprintf("%d consecutive errors (consecutiveErrorLimit %d): %s", res.ConsecutiveError, limit(m.ConsecutiveErrorLimit, 4), msg)
		case res.Inconclusive > limit(m.InconclusiveLimit, 0):
			res.Phase, res.Message = AnalysisInconclusive, fmt.Sprintf("%d inconclusive measurements", res.Inconclusive)
		case count > 0 && res.Count >= count:
			res.Phase = AnalysisSuccessful
		default:
			if next == 0 || interval < next {
				next = max(interval, time.Millisecond)
			}
		}
	}
	r.Status.Phase, r.Status.Message = AnalysisSuccessful, ""
	for _, res := range r.Status.MetricResults {
		switch res.Phase {
		case AnalysisFailed, AnalysisError, AnalysisInconclusive:
			r.Status.Phase = res.Phase
			r.Status.Message = fmt.Sprintf("Metric %q assessed %s: %s", res.Name, res.Phase, res.Message)
			return 0
		case AnalysisPending, AnalysisRunning:
			r.Status.Phase = AnalysisRunning
		}
	}
	if r.Status.Phase == AnalysisSuccessful {
		return 0
	}
	return next
}
