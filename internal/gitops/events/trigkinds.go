package events

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/sjson"
	"golang.org/x/net/http/httpguts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Bounds and defaults of the http, log and nats triggers.
const (
	defaultHTTPTimeout = 60 * time.Second // Argo's
	maxHTTPTimeout     = 3600             // seconds
	maxPayloadBytes    = 5 << 20
	maxResponseDrain   = 1 << 20
	maxLoggedData      = 64 << 10
)

// argoWorkflowOps are the operations of an argoWorkflow trigger, for messages.
const argoWorkflowOps = "submit, submit-from, resubmit, retry, resume, suspend, terminate or stop"

var httpMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

func validateArgoWorkflow(f string, a *ArgoWorkflowTrigger, deps map[string]bool, tparams bool) error {
	if err := checkParameters(f+".parameters", a.Parameters, deps); err != nil {
		return err
	}
	if len(a.Args) > 0 {
		return errdefs.Invalid(f+".args", strings.Join(a.Args, " "), "is not supported: no argo CLI runs here; set in the resource what the flags would")
	}
	switch a.Operation {
	case "", "submit":
		_, err := checkSource(f+".source", a.Source, true)
		return err
	case "submit-from":
		return checkWorkflowRef(f, a, "CronWorkflow", "WorkflowTemplate", len(a.Parameters) > 0 || tparams)
	case "resubmit", "retry", "resume", "suspend", "terminate", "stop":
		return checkWorkflowRef(f, a, "Workflow", "", len(a.Parameters) > 0 || tparams)
	}
	return errdefs.Invalid(f+".operation", a.Operation, "is not an operation: use "+argoWorkflowOps)
}

// checkWorkflowRef checks the source of an operation acting on an object by name: an
// argoproj.io/v1alpha1 kind (or kind2) with metadata.name, unless parameters may set it.
func checkWorkflowRef(f string, a *ArgoWorkflowTrigger, kind, kind2 string, params bool) error {
	obj, _, err := sourceObject(f+".source", a.Source)
	if err != nil {
		return err
	}
	_, _, err = workflowRef(f+".source.resource", a.Operation, obj, kind, kind2, params)
	return err
}

// workflowRef is the kind and name of the object an operation acts on (name empty only when
// parameters may still set it).
func workflowRef(rf, op string, obj map[string]any, kind, kind2 string, params bool) (string, string, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	want := kind
	if kind2 != "" {
		want += " or " + kind2
	}
	if apiVersion != Group+"/"+Version || (k != kind && (kind2 == "" || k != kind2)) {
		return "", "", errdefs.Invalid(rf+".kind", apiVersion+" "+k, "is not "+Group+"/"+Version+" "+want+": operation "+op+" acts on a "+want+" by name")
	}
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	switch {
	case name == "" && !params:
		return "", "", errdefs.Invalid(rf+".metadata.name", "", "is required: operation "+op+" acts on the "+want+" of that name (a parameter may set it)")
	case name != "" && !dnsSubdomain(name):
		return "", "", errdefs.Invalid(rf+".metadata.name", name, "is not a "+want+" name")
	}
	return k, name, nil
}

// checkHTTPURL checks that raw is an http(s) URL with a host.
func checkHTTPURL(f, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 4096 {
		return errdefs.Invalid(f, shownURL(raw), "is not an http or https URL with a host")
	}
	return nil
}

// shownURL is a URL as messages and logs show it: without its user information and query,
// which may carry credentials.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

func checkMethod(f, m string) error {
	if m != "" && !slices.Contains(httpMethods, m) {
		return errdefs.Invalid(f, m, "is not an HTTP method: use "+strings.Join(httpMethods, ", "))
	}
	return nil
}

func checkHeader(f, name, value string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return errdefs.Invalid(f, name, "is not an HTTP header name")
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return errdefs.Invalid(f, name, "has a value that is not a valid header value (control characters or line breaks)")
	}
	return nil
}

func validateHTTP(f string, h *HTTPTrigger, deps map[string]bool) error {
	if h.URL == "" {
		return errdefs.Invalid(f+".url", "", "is required: the http or https URL the request goes to")
	}
	if err := checkHTTPURL(f+".url", h.URL); err != nil {
		return err
	}
	if err := checkMethod(f+".method", h.Method); err != nil {
		return err
	}
	if h.Timeout < 0 || h.Timeout > maxHTTPTimeout {
		return errdefs.Invalid(f+".timeout", strconv.FormatInt(h.Timeout, 10), fmt.Sprintf("is not a timeout in seconds: 1 to %d (0 or none: 60)", maxHTTPTimeout))
	}
	for _, k := range sortedKeys(h.Headers) {
		if err := checkHeader(f+".headers."+k, k, h.Headers[k]); err != nil {
			return err
		}
	}
	if h.Host != "" && !httpguts.ValidHostHeader(h.Host) {
		return errdefs.Invalid(f+".host", h.Host, "is not a host name (for the Host header)")
	}
	for i, sh := range h.SecureHeaders {
		sf := fmt.Sprintf("%s.secureHeaders[%d]", f, i)
		if sh == nil {
			return errdefs.Invalid(sf, "", "is empty: give name and valueFrom")
		}
		if err := checkHeader(sf+".name", sh.Name, ""); err != nil {
			return err
		}
		if err := checkValueFrom(sf+".valueFrom", sh.ValueFrom); err != nil {
			return err
		}
	}
	if b := h.BasicAuth; b != nil {
		if err := checkBasicAuth(f+".basicAuth", b); err != nil {
			return err
		}
	}
	if err := checkTLS(f+".tls", h.TLS); err != nil {
		return err
	}
	if err := checkParams(f+".payload", h.Payload, deps, false); err != nil {
		return err
	}
	if err := checkParameters(f+".parameters", h.Parameters, deps); err != nil {
		return err
	}
	if err := checkParameters(f+".dynamicHeaders", h.DynamicHeaders, deps); err != nil {
		return err
	}
	for i, p := range h.DynamicHeaders {
		if !httpguts.ValidHeaderFieldName(p.Dest) {
			return errdefs.Invalid(fmt.Sprintf("%s.dynamicHeaders[%d].dest", f, i), p.Dest, "is not an HTTP header name")
		}
	}
	return nil
}

func checkValueFrom(f string, v *ValueFromSource) error {
	switch {
	case v == nil || (v.SecretKeyRef == nil && v.ConfigMapKeyRef == nil):
		return errdefs.Invalid(f, "", "is required: give secretKeyRef or configMapKeyRef")
	case v.SecretKeyRef != nil && v.ConfigMapKeyRef != nil:
		return errdefs.Invalid(f, "", "sets both secretKeyRef and configMapKeyRef: give one")
	case v.SecretKeyRef != nil:
		return checkSecretRef(f+".secretKeyRef", v.SecretKeyRef)
	}
	ref := SecretKeySelector(*v.ConfigMapKeyRef)
	if ref.Name == "" || !nameRe.MatchString(ref.Name) {
		return errdefs.Invalid(f+".configMapKeyRef.name", ref.Name, "is not a ConfigMap name")
	}
	if ref.Key == "" {
		return errdefs.Invalid(f+".configMapKeyRef.key", "", "is required (the ConfigMap's key)")
	}
	return nil
}

func checkBasicAuth(f string, b *BasicAuth) error {
	if b.Username == nil && b.Password == nil {
		return errdefs.Invalid(f, "", "needs username or password (Secret keys)")
	}
	for _, r := range []struct {
		name string
		ref  *SecretKeySelector
	}{{"username", b.Username}, {"password", b.Password}} {
		if r.ref != nil {
			if err := checkSecretRef(f+"."+r.name, r.ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildPayload makes a request's body from the events, as Argo's ConstructPayload: each
// parameter's value set at its dest (an sjson path) in a JSON object — as JSON when
// useRawData takes a JSON value, else as a string; a parameter without dest is the whole body.
func buildPayload(f string, ps []TriggerParameter, evs map[string]*Event) ([]byte, error) {
	var doc []byte
	for i, p := range ps {
		pf := fmt.Sprintf("%s[%d]", f, i)
		if p.Src == nil {
			return nil, fmt.Errorf("%s.src: is required", pf)
		}
		val, raw, err := resolveParam(p.Src, evs)
		if err != nil {
			return nil, fmt.Errorf("%s.src: %w", pf, err)
		}
		if len(val) > maxParamBytes {
			return nil, fmt.Errorf("%s: the value is larger than %d bytes", pf, maxParamBytes)
		}
		if p.Dest == "" {
			return []byte(val), nil
		}
		if raw && json.Valid([]byte(val)) {
			doc, err = sjson.SetRawBytes(doc, p.Dest, []byte(val))
		} else {
			doc, err = sjson.SetBytes(doc, p.Dest, val)
		}
		if err != nil {
			return nil, fmt.Errorf("%s.dest %q: %w", pf, p.Dest, err)
		}
		if len(doc) > maxPayloadBytes {
			return nil, fmt.Errorf("%s: the payload is larger than %d bytes", pf, maxPayloadBytes)
		}
	}
	return doc, nil
}

// withParams applies a trigger kind's own parameters to it (Argo's ApplyResourceParameters
// for http and nats): v marshalled, the parameters set, decoded again into out.
func withParams(field string, v any, ps []TriggerParameter, evs map[string]*Event, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b, err = applyParams(field, b, ps, evs)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: the trigger does not decode once set: %v", field, err)
	}
	return nil
}

// readConfigMap reads a ConfigMap's key in ns.
func (c *Controller) readConfigMap(ctx context.Context, ns string, ref ConfigMapKeySelector) (string, error) {
	cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("configmap %s: %w", ref.Name, err)
	}
	v, ok := cm.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("configmap %s has no key %s", ref.Name, ref.Key)
	}
	return v, nil
}

// tlsConfig is a trigger's TLS client configuration, its certificates read from the
// Sensor's namespace.
func (c *Controller) tlsConfig(ctx context.Context, ns, f string, t *TLSConfig) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.InsecureSkipVerify {
		cfg.InsecureSkipVerify = true
	}
	if t.CACertSecret != nil {
		pem, err := c.readSecret(ctx, ns, *t.CACertSecret)
		if err != nil {
			return nil, fmt.Errorf("%s.caCertSecret: %w", f, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return nil, permanentError{fmt.Errorf("%s.caCertSecret: secret %s key %s holds no PEM certificate", f, t.CACertSecret.Name, t.CACertSecret.Key)}
		}
		cfg.RootCAs = pool
	}
	if t.ClientCertSecret != nil && t.ClientKeySecret != nil {
		certPEM, err := c.readSecret(ctx, ns, *t.ClientCertSecret)
		if err != nil {
			return nil, fmt.Errorf("%s.clientCertSecret: %w", f, err)
		}
		keyPEM, err := c.readSecret(ctx, ns, *t.ClientKeySecret)
		if err != nil {
			return nil, fmt.Errorf("%s.clientKeySecret: %w", f, err)
		}
		cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
		if err != nil {
			return nil, permanentError{fmt.Errorf("%s: the client certificate and key do not make a pair: %v", f, err)}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// fireHTTP sends a trigger's HTTP request: its parameters set, its URL checked against the
// runtime's network policy (and every connection, redirects included), its body built from the
// events. Any response succeeds unless policy.status.allow lists the codes that do.
func (c *Controller) fireHTTP(ctx context.Context, cs *compiledSensor, t *compiledTrigger, h *HTTPTrigger) (string, error) {
	if len(h.Parameters) > 0 {
		var nh HTTPTrigger
		if err := withParams("http.parameters", h, h.Parameters, t.have, &nh); err != nil {
			return "", permanentError{err}
		}
		h = &nh
		if err := validateHTTPOnce(h); err != nil {
			return "", permanentError{fmt.Errorf("once the parameters are set: %w", err)}
		}
	}
	if err := c.opts.Policy.CheckServerURL("http.url", shownURL(h.URL)); err != nil {
		return "", permanentError{err}
	}
	method := h.Method
	if method == "" {
		method = http.MethodPost
	}
	shown := method + " " + shownURL(h.URL)
	var body []byte
	if len(h.Payload) > 0 {
		b, err := buildPayload("http.payload", h.Payload, t.have)
		if err != nil {
			return "", permanentError{err}
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL, bytes.NewReader(body))
	if err != nil {
		return "", permanentError{fmt.Errorf("http: %s: %v", shown, err)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, k := range sortedKeys(h.Headers) {
		req.Header.Set(k, h.Headers[k])
	}
	for i, p := range h.DynamicHeaders {
		val, _, err := resolveParam(p.Src, t.have)
		if err != nil {
			return "", permanentError{fmt.Errorf("http.dynamicHeaders[%d].src: %w", i, err)}
		}
		if !httpguts.ValidHeaderFieldValue(val) {
			return "", permanentError{fmt.Errorf("http.dynamicHeaders[%d]: the value of %s from the event is not a valid header value", i, p.Dest)}
		}
		req.Header.Set(p.Dest, val)
	}
	for i, sh := range h.SecureHeaders {
		var v string
		var err error
		if sh.ValueFrom.SecretKeyRef != nil {
			v, err = c.readSecret(ctx, cs.ns, *sh.ValueFrom.SecretKeyRef)
		} else {
			v, err = c.readConfigMap(ctx, cs.ns, *sh.ValueFrom.ConfigMapKeyRef)
		}
		if err != nil {
			return "", fmt.Errorf("http.secureHeaders[%d] (%s): %w", i, sh.Name, err)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return "", permanentError{fmt.Errorf("http.secureHeaders[%d] (%s): the value is not a valid header value", i, sh.Name)}
		}
		req.Header.Set(sh.Name, v)
	}
	if b := h.BasicAuth; b != nil {
		var user, pass string
		if b.Username != nil {
			if user, err = c.readSecret(ctx, cs.ns, *b.Username); err != nil {
				return "", fmt.Errorf("http.basicAuth.username: %w", err)
			}
		}
		if b.Password != nil {
			if pass, err = c.readSecret(ctx, cs.ns, *b.Password); err != nil {
				return "", fmt.Errorf("http.basicAuth.password: %w", err)
			}
		}
		req.SetBasicAuth(user, pass)
	}
	if h.Host != "" {
		req.Host = h.Host
	}
	timeout := defaultHTTPTimeout
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout) * time.Second
	}
	client := c.opts.Policy.HTTPClient(timeout)
	// A transport of its own per request (no TLS settings shared between Sensors): close its
	// connection once answered rather than leave it idle until the transport's timeout.
	defer client.CloseIdleConnections()
	if h.TLS != nil {
		cfg, err := c.tlsConfig(ctx, cs.ns, "http.tls", h.TLS)
		if err != nil {
			return "", err
		}
		if tr, ok := client.Transport.(*http.Transport); ok {
			tr.TLSClientConfig = cfg
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		if netpolicy.IsRefused(err) {
			return "", permanentError{fmt.Errorf("http: %s: %s", shown, netpolicy.Describe(err))}
		}
		return "", fmt.Errorf("http: %s: %s", shown, netpolicy.Describe(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseDrain))
	_ = resp.Body.Close()
	what := fmt.Sprintf("%s: %d", shown, resp.StatusCode)
	if allow := t.run.allow; allow != nil && !slices.Contains(allow, resp.StatusCode) {
		err := fmt.Errorf("policy.status: %s answered %d, not one of %s", shown, resp.StatusCode, codes(allow))
		switch resp.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests:
			return "", err
		}
		if resp.StatusCode >= 500 {
			return "", err // the server's trouble: the event is delivered again
		}
		return "", permanentError{err}
	}
	return what, nil
}

// validateHTTPOnce checks what parameters may have changed in an http trigger.
func validateHTTPOnce(h *HTTPTrigger) error {
	if err := checkHTTPURL("http.url", h.URL); err != nil {
		return err
	}
	if err := checkMethod("http.method", h.Method); err != nil {
		return err
	}
	for _, k := range sortedKeys(h.Headers) {
		if err := checkHeader("http.headers."+k, k, h.Headers[k]); err != nil {
			return err
		}
	}
	if h.Host != "" && !httpguts.ValidHostHeader(h.Host) {
		return errdefs.Invalid("http.host", h.Host, "is not a host name (for the Host header)")
	}
	for i, sh := range h.SecureHeaders {
		if sh == nil || checkValueFrom(fmt.Sprintf("http.secureHeaders[%d].valueFrom", i), sh.ValueFrom) != nil {
			return errdefs.Invalid(fmt.Sprintf("http.secureHeaders[%d]", i), "", "needs a name and one of secretKeyRef, configMapKeyRef")
		}
		if err := checkHeader(fmt.Sprintf("http.secureHeaders[%d].name", i), sh.Name, ""); err != nil {
			return err
		}
	}
	if h.Timeout < 0 || h.Timeout > maxHTTPTimeout {
		return errdefs.Invalid("http.timeout", strconv.FormatInt(h.Timeout, 10), fmt.Sprintf("is not a timeout in seconds: 1 to %d", maxHTTPTimeout))
	}
	return nil
}

func codes(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}

// fireLog writes the trigger's events in the runtime's log, at most once per interval.
func (c *Controller) fireLog(cs *compiledSensor, t *compiledTrigger, l *LogTrigger) (string, error) {
	now := c.opts.Now()
	if l.IntervalSeconds > 0 && !t.lastLog.IsZero() && now.Before(t.lastLog.Add(time.Duration(min(l.IntervalSeconds, 1<<30))*time.Second)) {
		return "not logged: within intervalSeconds of the last", nil
	}
	t.lastLog = now
	for _, dep := range sortedKeys(t.have) {
		ev := t.have[dep]
		data := string(ev.Data)
		if len(data) > maxLoggedData {
			data = data[:maxLoggedData] + "…(clipped)"
		}
		c.log.Info("sensor: event (log trigger)", logKey, cs.ns+"/"+cs.name, "trigger", t.t.Template.Name, "dependency", dep,
			"id", ev.Context.ID, "source", ev.Context.Source, "type", ev.Context.Type, "subject", ev.Context.Subject,
			"time", ev.Context.Time.UTC().Format(time.RFC3339), "data", data)
	}
	return fmt.Sprintf("logged %d event(s)", len(t.have)), nil
}

// fireWorkflowOp runs an argoWorkflow operation other than submit, with the workflow
// engine's own operations acting as the Sensor's service account, on the object the source
// names once the parameters are set.
func (c *Controller) fireWorkflowOp(ctx context.Context, cs *compiledSensor, t *compiledTrigger, a *ArgoWorkflowTrigger, wait waitFunc) (string, error) {
	obj, raw, err := sourceObject("argoWorkflow.source", a.Source)
	if err != nil {
		return "", permanentError{err}
	}
	if len(a.Parameters) > 0 {
		raw, err = applyParams("argoWorkflow.parameters", raw, a.Parameters, t.have)
		if err != nil {
			return "", permanentError{err}
		}
		obj = nil
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return "", permanentError{errors.New("argoWorkflow.source.resource: not an object once the parameters are set")}
		}
	}
	kind, kind2 := "Workflow", ""
	if a.Operation == "submit-from" {
		kind, kind2 = "CronWorkflow", "WorkflowTemplate"
	}
	k, name, err := workflowRef("argoWorkflow.source.resource", a.Operation, obj, kind, kind2, false)
	if err != nil {
		return "", permanentError{err}
	}
	ns := cs.ns
	if md, _ := obj["metadata"].(map[string]any); md != nil {
		if n, _ := md["namespace"].(string); n != "" {
			ns = n
		}
	}
	ops, err := c.opsAs(cs.ns, cs.sa)
	if err != nil {
		return "", err
	}
	what := "workflow/" + name
	target := name // the Workflow policy.k8s reads
	switch a.Operation {
	case "submit-from":
		from := "workflowtemplate/" + name
		if k == "CronWorkflow" {
			from = "cronworkflow/" + name
		}
		d, err := ops.Submit(ctx, workflows.SubmitOptions{Namespace: ns, From: from})
		if err != nil {
			return "", opErr(fmt.Errorf("submit from %s: %w", strings.ToLower(k)+"/"+name, err))
		}
		target, what = d.Name, "submitted workflow/"+d.Name+" from "+strings.ToLower(k)+"/"+name
	case "resubmit":
		d, err := ops.Resubmit(ctx, ns, name, workflows.Submitter{})
		if err != nil {
			return "", opErr(fmt.Errorf("resubmit %s: %w", what, err))
		}
		target, what = d.Name, "resubmitted "+what+" as workflow/"+d.Name
	case "retry":
		err = ops.Retry(ctx, ns, name)
		what = "retried " + what
	case "resume":
		err = ops.Resume(ctx, ns, name)
		what = "resumed " + what
	case "suspend":
		err = ops.Suspend(ctx, ns, name)
		what = "suspended " + what
	case "terminate":
		err = ops.Shutdown(ctx, ns, name, "Terminate")
		what = "terminated " + what
	case "stop":
		err = ops.Shutdown(ctx, ns, name, "Stop")
		what = "stopped " + what
	default:
		return "", permanentError{fmt.Errorf("argoWorkflow.operation %q is not supported", a.Operation)}
	}
	if err != nil {
		return "", opErr(fmt.Errorf("%s %s: %w", a.Operation, "workflow/"+name, err))
	}
	if t.run.policy != nil {
		dyn, err := c.clientAs(cs.ns, cs.sa)
		if err != nil {
			return "", err
		}
		ri := dyn.Resource(workflows.WorkflowsResource).Namespace(ns)
		if err := c.applyPolicy(ctx, t.run.policy, ri, target, "workflow/"+target, wait); err != nil {
			return "", err
		}
	}
	return what, nil
}

// opErr tells the workflow operations' refusals (retrying changes nothing: not found, a
// finished workflow, forbidden, invalid) from the rest.
func opErr(err error) error {
	for _, k := range []error{errdefs.ErrNotFound, errdefs.ErrConflict, errdefs.ErrForbidden, errdefs.ErrInvalid} {
		if errors.Is(err, k) {
			return permanentError{err}
		}
	}
	return classify(err)
}
