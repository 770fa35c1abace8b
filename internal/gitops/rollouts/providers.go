package rollouts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// PrometheusMetric queries a Prometheus server's HTTP API (an instant query) and judges the
// result: a vector becomes a list of numbers (result[0]), a scalar a number.
type PrometheusMetric struct {
	Address        string          `json:"address"`
	Query          string          `json:"query"`
	Timeout        *int64          `json:"timeout,omitempty"` // seconds
	Insecure       bool            `json:"insecure,omitempty"`
	CACert         string          `json:"caCert,omitempty"`
	Headers        []WebHeader     `json:"headers,omitempty"`
	Authentication *PrometheusAuth `json:"authentication,omitempty"`
	RangeQuery     map[string]any  `json:"rangeQuery,omitempty"`
}

// PrometheusAuth is Argo Rollouts' provider.prometheus.authentication: basicAuth, or an OAuth2
// client-credentials flow whose token is sent as a Bearer header. sigv4 is refused.
type PrometheusAuth struct {
	BasicAuth *BasicAuth     `json:"basicAuth,omitempty"`
	OAuth2    *OAuth2Config  `json:"oauth2,omitempty"`
	Sigv4     map[string]any `json:"sigv4,omitempty"`
}

// BasicAuth is a user name and password.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// OAuth2Config is a client-credentials flow (RFC 6749 §4.4).
type OAuth2Config struct {
	TokenURL     string   `json:"tokenUrl"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes,omitempty"`
}

// JobMetric runs a Kubernetes Job: it succeeding is a successful measurement, failing a failed one.
type JobMetric struct {
	Metadata JobMetadata     `json:"metadata,omitempty"`
	Spec     batchv1.JobSpec `json:"spec"`
}

// JobMetadata is the labels and annotations put on the Job.
type JobMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

const defaultPrometheusTimeout = 30 * time.Second

// validatePrometheus checks a template's prometheus provider; errors name the field.
func validatePrometheus(f string, p *PrometheusMetric) error {
	switch {
	case p.Address == "":
		return errdefs.Invalid(f+".address", "", "is required")
	case p.Query == "":
		return errdefs.Invalid(f+".query", "", "is required")
	case p.Timeout != nil && (*p.Timeout < 0 || *p.Timeout > 600):
		return errdefs.Invalid(f+".timeout", strconv.FormatInt(*p.Timeout, 10), "must be 0 to 600 seconds")
	case p.RangeQuery != nil:
		return errdefs.Invalid(f+".rangeQuery", "", "is not supported yet (instant queries only)")
	}
	if !strings.Contains(p.Address, "{{") {
		if u, err := url.Parse(p.Address); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errdefs.Invalid(f+".address", p.Address, "is not an http(s) URL")
		}
	}
	if a := p.Authentication; a != nil {
		switch {
		case a.Sigv4 != nil:
			return errdefs.Invalid(f+".authentication.sigv4", "", "is not supported (supported: basicAuth, oauth2)")
		case a.BasicAuth != nil && a.OAuth2 != nil:
			return errdefs.Invalid(f+".authentication", "basicAuth and oauth2", "must name one method")
		case a.OAuth2 != nil && (a.OAuth2.TokenURL == "" || a.OAuth2.ClientID == ""):
			return errdefs.Invalid(f+".authentication.oauth2", "", "needs tokenUrl and clientId")
		}
	}
	return nil
}

// validateJob checks a template's job provider.
func validateJob(f string, j *JobMetric) error {
	if len(j.Spec.Template.Spec.Containers) == 0 {
		return errdefs.Invalid(f+".spec.template.spec.containers", "", "must name at least one container")
	}
	if rp := j.Spec.Template.Spec.RestartPolicy; rp != "Never" && rp != "OnFailure" {
		return errdefs.Invalid(f+".spec.template.spec.restartPolicy", string(rp), "must be Never or OnFailure (a Job's pods)")
	}
	return nil
}

// measurePrometheus runs the metric's query against its Prometheus server through client.
func measurePrometheus(ctx context.Context, client *http.Client, m Metric) (AnalysisPhase, string, string) {
	p := m.Provider.Prometheus
	const f = "provider.prometheus"
	base, err := url.Parse(p.Address)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return AnalysisError, "", fmt.Sprintf("%s.address %q is not an http(s) URL", f, p.Address)
	}
	timeout := defaultPrometheusTimeout
	if p.Timeout != nil && *p.Timeout > 0 {
		timeout = time.Duration(*p.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.Insecure || p.CACert != "" {
		t, ok := client.Transport.(*http.Transport)
		if !ok {
			return AnalysisError, "", "no TLS settings for this transport"
		}
		t = t.Clone()
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: p.Insecure} //nolint:gosec // the template asks for it (insecure: true)
		if p.CACert != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(p.CACert)) {
				return AnalysisError, "", f + ".caCert holds no PEM certificate"
			}
			t.TLSClientConfig.RootCAs = pool
		}
		client = &http.Client{Timeout: client.Timeout, Transport: t}
	}
	if a := p.Authentication; a != nil && a.OAuth2 != nil {
		cc := clientcredentials.Config{ClientID: a.OAuth2.ClientID, ClientSecret: a.OAuth2.ClientSecret, TokenURL: a.OAuth2.TokenURL, Scopes: a.OAuth2.Scopes}
		client = cc.Client(context.WithValue(ctx, oauth2.HTTPClient, client))
	}
	q := base.JoinPath("api", "v1", "query")
	v := url.Values{"query": {p.Query}, "timeout": {timeout.String()}}
	q.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.String(), nil)
	if err != nil {
		return AnalysisError, "", err.Error()
	}
	for _, h := range p.Headers {
		req.Header.Set(h.Key, h.Value)
	}
	if a := p.Authentication; a != nil && a.BasicAuth != nil {
		req.SetBasicAuth(a.BasicAuth.Username, a.BasicAuth.Password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return AnalysisError, "", "prometheus query: " + err.Error()
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return AnalysisError, "", "prometheus response: " + err.Error()
	}
	result, value, err := parsePrometheusResult(resp.StatusCode, raw)
	if err != nil {
		return AnalysisError, "", err.Error()
	}
	phase, err := judge(m, result)
	if err != nil {
		return AnalysisError, value, err.Error()
	}
	return phase, value, ""
}

// parsePrometheusResult reads a /api/v1/query answer: a vector is a list of its samples'
// values, a scalar one number; the string is the value as recorded in the measurement.
func parsePrometheusResult(status int, raw []byte) (any, string, error) {
	var doc struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, "", fmt.Errorf("prometheus answered HTTP %d, not its API's JSON: %s", status, firstLine(truncate(string(raw), 200)))
	}
	if doc.Status != "success" {
		return nil, "", fmt.Errorf("prometheus query failed (HTTP %d, %s): %s", status, doc.ErrorType, truncate(doc.Error, 500))
	}
	sample := func(v []any) (float64, error) {
		if len(v) != 2 {
			return 0, fmt.Errorf("a sample is not [time, value]")
		}
		s, ok := v[1].(string)
		if !ok {
			return 0, fmt.Errorf("a sample's value is not a string")
		}
		return strconv.ParseFloat(s, 64)
	}
	switch doc.Data.ResultType {
	case "vector":
		var vec []struct {
			Value []any `json:"value"`
		}
		if err := json.Unmarshal(doc.Data.Result, &vec); err != nil {
			return nil, "", fmt.Errorf("prometheus vector does not decode: %v", err)
		}
		out := make([]float64, 0, len(vec))
		parts := make([]string, 0, len(vec))
		for _, s := range vec {
			f, err := sample(s.Value)
			if err != nil {
				return nil, "", fmt.Errorf("prometheus vector: %v", err)
			}
			out = append(out, f)
			parts = append(parts, formatFloat(f))
		}
		return out, "[" + strings.Join(parts, ",") + "]", nil
	case "scalar":
		var s []any
		if err := json.Unmarshal(doc.Data.Result, &s); err != nil {
			return nil, "", fmt.Errorf("prometheus scalar does not decode: %v", err)
		}
		f, err := sample(s)
		if err != nil {
			return nil, "", fmt.Errorf("prometheus scalar: %v", err)
		}
		return f, formatFloat(f), nil
	}
	return nil, "", fmt.Errorf("prometheus result type %q is not supported (supported: vector, scalar)", truncate(doc.Data.ResultType, 40))
}

func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// jobName is the Job of a run's metric's measurement n (1-based), as Argo Rollouts names it:
// RUN-UID.METRIC.N, cut to a valid name.
func jobName(run *AnalysisRun, metric string, n int32) string {
	clean := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(metric))
	name := fmt.Sprintf("%s.%s.%d", run.UID, strings.Trim(clean, "-"), n)
	if len(name) > 63 {
		name = name[:57] + "-" + rand.String(5)
	}
	return name
}

// analysisRunLabel on a Job is the UID of the AnalysisRun it measures for.
const analysisRunLabel = "analysisrun.argoproj.io/uid"

// measureJob starts the measurement's Job, or reads it: Running until it completes.
func (c *Controller) measureJob(ctx context.Context, run *AnalysisRun, m Metric, n int32) (AnalysisPhase, string, string) {
	jm := m.Provider.Job
	jobs := c.kube.BatchV1().Jobs(run.Namespace)
	name := jobName(run, m.Name, n)
	job, err := jobs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		yes := true
		labels := map[string]string{}
		for k, v := range jm.Metadata.Labels {
			labels[k] = v
		}
		labels[analysisRunLabel] = string(run.UID)
		spec := *jm.Spec.DeepCopy()
		job = &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: run.Namespace, Labels: labels, Annotations: jm.Metadata.Annotations,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "AnalysisRun", Name: run.Name, UID: run.UID,
					Controller: &yes, BlockOwnerDeletion: &yes}}},
			Spec: spec,
		}
		if _, err := jobs.Create(ctx, job, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return AnalysisError, "", fmt.Sprintf("create Job %s: %v", name, err)
		}
		return AnalysisRunning, "", ""
	}
	if err != nil {
		return AnalysisError, "", fmt.Sprintf("read Job %s: %v", name, err)
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status != "True" {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return AnalysisSuccessful, "", ""
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return AnalysisFailed, "", fmt.Sprintf("Job %s failed: %s", name, cond.Message)
		}
	}
	return AnalysisRunning, "", ""
}

// deleteRunJobs removes the Jobs of an ended run (and their pods).
func (c *Controller) deleteRunJobs(ctx context.Context, run *AnalysisRun) error {
	bg := metav1.DeletePropagationBackground
	err := c.kube.BatchV1().Jobs(run.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg},
		metav1.ListOptions{LabelSelector: analysisRunLabel + "=" + string(run.UID)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the Jobs of AnalysisRun %s: %w", run.Name, err)
	}
	return nil
}
