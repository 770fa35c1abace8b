package events

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Event sources that connect out (resource, nats, minio): their validation, compiled form and
// URL checks. Their runs are in listen.go.

var (
	resourceRe   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	versionRe    = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
	natsTokenRe  = regexp.MustCompile(`^[^\s.*>]+$|^\*$`)
	bucketRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	s3EventRe    = regexp.MustCompile(`^s3:[A-Za-z]+(:[A-Za-z*]+)?$`)
	resourceEvts = map[string]bool{"ADD": true, "UPDATE": true, "DELETE": true}
)

// serviceAccountOf is the EventSource's spec.template.serviceAccountName ("default" when not
// given): who a resource source watches as, as Argo's EventSource pod runs as it.
func serviceAccountOf(s *EventSourceSpec) (string, error) {
	var t struct {
		ServiceAccountName string `json:"serviceAccountName"`
	}
	if len(s.Template) > 0 {
		_ = json.Unmarshal(s.Template, &t)
	}
	if t.ServiceAccountName == "" {
		return "default", nil
	}
	if !dnsSubdomain(t.ServiceAccountName) {
		return "", errdefs.Invalid("spec.template.serviceAccountName", t.ServiceAccountName, "is not a service account name")
	}
	return t.ServiceAccountName, nil
}

// validateListeners checks the resource, nats and minio sources of s.
func validateListeners(s *EventSourceSpec, addName func(typ, name string) error) error {
	for _, name := range sortedKeys(s.Resource) {
		if err := addName("resource", name); err != nil {
			return err
		}
		if _, err := compileResource("spec.resource."+name, s.Resource[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.NATS) {
		if err := addName("nats", name); err != nil {
			return err
		}
		if err := validateNATS("spec.nats."+name, s.NATS[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.Minio) {
		if err := addName("minio", name); err != nil {
			return err
		}
		if err := validateMinio("spec.minio."+name, s.Minio[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.MQTT) {
		if err := addName("mqtt", name); err != nil {
			return err
		}
		if err := validateMQTT("spec.mqtt."+name, s.MQTT[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.Redis) {
		if err := addName("redis", name); err != nil {
			return err
		}
		if err := validateRedis("spec.redis."+name, s.Redis[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.AMQP) {
		if err := addName("amqp", name); err != nil {
			return err
		}
		if err := validateAMQP("spec.amqp."+name, s.AMQP[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.RedisStream) {
		if err := addName("redisStream", name); err != nil {
			return err
		}
		if err := validateRedisStream("spec.redisStream."+name, s.RedisStream[name]); err != nil {
			return err
		}
	}
	return nil
}

func validateMQTT(f string, m MQTTSource) error {
	if _, err := compileBackoff(f+".connectionBackoff", m.ConnectionBackoff); err != nil {
		return err
	}
	if m.URL == "" {
		return errdefs.Invalid(f+".url", "", "is required (tcp://host:1883, or ssl://host:8883)")
	}
	if _, err := mqttURL(f+".url", m.URL); err != nil {
		return err
	}
	switch {
	case m.Topic == "" || len(m.Topic) > 1000 || strings.ContainsRune(m.Topic, 0):
		return errdefs.Invalid(f+".topic", m.Topic, "is required: the topic to subscribe to, e.g. sensors/+/temperature or sensors/#")
	case strings.Contains(strings.TrimSuffix(m.Topic, "#"), "#") || strings.HasSuffix(m.Topic, "#") && m.Topic != "#" && !strings.HasSuffix(m.Topic, "/#"):
		return errdefs.Invalid(f+".topic", m.Topic, "is not a topic filter: '#' only as the last level")
	case m.ClientID == "" || len(m.ClientID) > 200:
		return errdefs.Invalid(f+".clientId", m.ClientID, "is required: the client id the source connects with (unique on the broker)")
	}
	for _, l := range strings.Split(m.Topic, "/") {
		if strings.Contains(l, "+") && l != "+" {
			return errdefs.Invalid(f+".topic", m.Topic, "is not a topic filter: '+' only as a whole level")
		}
	}
	if a := m.Auth; a != nil {
		if a.Username == nil || a.Password == nil {
			return errdefs.Invalid(f+".auth", "", "needs username and password (Secret keys)")
		}
		if err := checkSecretRef(f+".auth.username", a.Username); err != nil {
			return err
		}
		if err := checkSecretRef(f+".auth.password", a.Password); err != nil {
			return err
		}
	}
	if err := checkTLS(f+".tls", m.TLS); err != nil {
		return err
	}
	return checkSourceFilter(f+".filter", m.Filter)
}

// mqttURL parses a broker URL: tcp://, mqtt://, ssl://, tls:// or mqtts:// with a host.
func mqttURL(f, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, errdefs.Invalid(f, redact(raw), "is not a broker URL: tcp://host:1883 or ssl://host:8883")
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts":
		return u, nil
	}
	return nil, errdefs.Invalid(f, redact(raw), "is not a broker URL: use tcp://, mqtt://, ssl://, tls:// or mqtts:// (websockets are not supported)")
}

func validateRedis(f string, r RedisSource) error {
	switch {
	case r.HostAddress == "":
		return errdefs.Invalid(f+".hostAddress", "", "is required: the server's host:port, e.g. redis.example.com:6379")
	case strings.Contains(r.HostAddress, "://") || strings.ContainsAny(r.HostAddress, "/?#@ ") || len(r.HostAddress) > 300:
		return errdefs.Invalid(f+".hostAddress", r.HostAddress, "is not host:port: give no scheme, credentials or path")
	case r.DB < 0:
		return errdefs.Invalid(f+".db", fmt.Sprint(r.DB), "is not a database number (0 or more)")
	case len(r.Channels) == 0:
		return errdefs.Invalid(f+".channels", "", "is required: one or more channels to subscribe to")
	case len(r.Username) > 200 || strings.ContainsAny(r.Username, " \t\r\n"):
		return errdefs.Invalid(f+".username", r.Username, "is not a user name")
	}
	if _, _, err := net.SplitHostPort(r.HostAddress); err != nil {
		return errdefs.Invalid(f+".hostAddress", r.HostAddress, "is not host:port")
	}
	for i, c := range r.Channels {
		if c == "" || len(c) > 1000 {
			return errdefs.Invalid(fmt.Sprintf("%s.channels[%d]", f, i), c, "is not a channel name")
		}
	}
	if r.Password != nil {
		if err := checkSecretRef(f+".password", r.Password); err != nil {
			return err
		}
	}
	if err := checkTLS(f+".tls", r.TLS); err != nil {
		return err
	}
	return checkSourceFilter(f+".filter", r.Filter)
}

// resourceWatch is a compiled resource source.
type resourceWatch struct {
	gvr       schema.GroupVersionResource
	namespace string
	types     map[string]bool
	labels    string // a label selector, "" for all
	fields    []fieldMatch
	prefix    string
	createdBy time.Time
	after     bool
	metadata  map[string]string
}

type fieldMatch struct {
	path   string
	re     *regexp.Regexp
	negate bool
}

func compileResource(f string, r ResourceSource) (*resourceWatch, error) {
	w := &resourceWatch{gvr: schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource},
		namespace: r.Namespace, types: map[string]bool{}, metadata: r.Metadata}
	switch {
	case r.Version == "":
		return nil, errdefs.Invalid(f+".version", "", "is required: the resource's API version, e.g. v1")
	case !versionRe.MatchString(r.Version):
		return nil, errdefs.Invalid(f+".version", r.Version, "is not an API version (v1, v1beta1, v2alpha1, …)")
	case r.Resource == "":
		return nil, errdefs.Invalid(f+".resource", "", "is required: the resource's plural name, e.g. configmaps")
	case !resourceRe.MatchString(r.Resource) || len(r.Resource) > 63:
		return nil, errdefs.Invalid(f+".resource", r.Resource, "is not a resource name: its plural in lower case, e.g. configmaps, deployments")
	case r.Group != "" && !dnsSubdomain(r.Group):
		return nil, errdefs.Invalid(f+".group", r.Group, "is not an API group (empty for the core group, e.g. apps, argoproj.io)")
	case r.Namespace != "" && (!dnsLabelRe.MatchString(r.Namespace) || len(r.Namespace) > 63):
		return nil, errdefs.Invalid(f+".namespace", r.Namespace, "is not a namespace name (empty: every namespace)")
	case len(r.EventTypes) == 0:
		return nil, errdefs.Invalid(f+".eventTypes", "", "is required: one or more of ADD, UPDATE and DELETE")
	}
	for i, t := range r.EventTypes {
		if !resourceEvts[t] {
			return nil, errdefs.Invalid(fmt.Sprintf("%s.eventTypes[%d]", f, i), t, "is not an event type: use ADD, UPDATE or DELETE")
		}
		w.types[t] = true
	}
	flt := r.Filter
	if flt == nil {
		return w, nil
	}
	w.prefix, w.after = flt.Prefix, flt.AfterStart
	if flt.CreatedBy != "" {
		t, err := time.Parse(time.RFC3339, flt.CreatedBy)
		if err != nil {
			return nil, errdefs.Invalid(f+".filter.createdBy", flt.CreatedBy, "is not an RFC 3339 time (2006-01-02T15:04:05Z)")
		}
		w.createdBy = t
	}
	sel := labels.NewSelector()
	for i, l := range flt.Labels {
		lf := fmt.Sprintf("%s.filter.labels[%d]", f, i)
		req, err := labelRequirement(l)
		if err != nil {
			return nil, errdefs.Invalid(lf, l.Key+" "+l.Operation+" "+l.Value, "is not a label requirement: "+err.Error())
		}
		sel = sel.Add(*req)
	}
	if len(flt.Labels) > 0 {
		w.labels = sel.String()
	}
	for i, s := range flt.Fields {
		ff := fmt.Sprintf("%s.filter.fields[%d]", f, i)
		if s.Key == "" || len(s.Key) > 1000 {
			return nil, errdefs.Invalid(ff+".key", s.Key, "is required: a path into the object, e.g. metadata.name or data.mode")
		}
		m := fieldMatch{path: s.Key}
		switch s.Operation {
		case "", "=", "==":
		case "!=":
			m.negate = true
		default:
			return nil, errdefs.Invalid(ff+".operation", s.Operation, "is not an operation of a field filter: use =, == or !=")
		}
		if len(s.Value) > maxExprLen {
			return nil, errdefs.Invalid(ff+".value", "", fmt.Sprintf("is longer than %d characters", maxExprLen))
		}
		re, err := regexp.Compile(s.Value)
		if err != nil {
			return nil, errdefs.Invalid(ff+".value", s.Value, "is not a regular expression: "+err.Error())
		}
		m.re = re
		w.fields = append(w.fields, m)
	}
	return w, nil
}

// labelRequirement is a label selector's requirement, as Argo reads a Selector: the operation
// is =, ==, !=, in, notin, exists, !, gt or lt (default =); in and notin take
// comma-separated values.
func labelRequirement(s Selector) (*labels.Requirement, error) {
	op := selection.Equals
	if s.Operation != "" {
		op = selection.Operator(s.Operation)
	}
	var vals []string
	switch {
	case (op == selection.Exists || op == selection.DoesNotExist) && s.Value == "":
	case op == selection.In || op == selection.NotIn:
		vals = strings.Split(s.Value, ",")
	default:
		vals = []string{s.Value}
	}
	return labels.NewRequirement(s.Key, op, vals)
}

func validateNATS(f string, n NATSSource) error {
	if _, err := compileBackoff(f+".connectionBackoff", n.ConnectionBackoff); err != nil {
		return err
	}
	if n.URL == "" {
		return errdefs.Invalid(f+".url", "", "is required (nats://host:4222)")
	}
	if _, err := natsURLs(f+".url", n.URL); err != nil {
		return err
	}
	if err := checkNATSSubject(f+".subject", n.Subject); err != nil {
		return err
	}
	if n.Queue != nil && (*n.Queue == "" || strings.ContainsAny(*n.Queue, " \t\r\n") || len(*n.Queue) > 200) {
		return errdefs.Invalid(f+".queue", *n.Queue, "is not a queue group name (no spaces; omit queue for none)")
	}
	if err := checkTLS(f+".tls", n.TLS); err != nil {
		return err
	}
	if err := checkNATSAuth(f+".auth", n.Auth); err != nil {
		return err
	}
	return checkSourceFilter(f+".filter", n.Filter)
}

// checkNATSAuth checks a NATS source's or trigger's auth (nil: none): exactly one way, its
// Secret keys named.
func checkNATSAuth(f string, a *NATSAuth) error {
	if a == nil {
		return nil
	}
	set := 0
	for _, b := range []bool{a.Basic != nil, a.Token != nil, a.NKey != nil, a.Credential != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return errdefs.Invalid(f, "", "must set exactly one of basic, token, nkey and credential")
	}
	switch {
	case a.Basic != nil:
		if a.Basic.Username == nil || a.Basic.Password == nil {
			return errdefs.Invalid(f+".basic", "", "needs username and password (Secret keys)")
		}
		if err := checkSecretRef(f+".basic.username", a.Basic.Username); err != nil {
			return err
		}
		return checkSecretRef(f+".basic.password", a.Basic.Password)
	case a.Token != nil:
		return checkSecretRef(f+".token", a.Token)
	case a.NKey != nil:
		return checkSecretRef(f+".nkey", a.NKey)
	default:
		return checkSecretRef(f+".credential", a.Credential)
	}
}

// natsURLs splits a NATS URL list (comma-separated nats://, tls://, ws:// or wss:// URLs).
func natsURLs(f, raw string) ([]string, error) {
	var out []string
	for one := range strings.SplitSeq(raw, ",") {
		one = strings.TrimSpace(one)
		p, err := url.Parse(one)
		if err != nil || (p.Scheme != "nats" && p.Scheme != "tls" && p.Scheme != "ws" && p.Scheme != "wss") || p.Host == "" || p.Opaque != "" {
			return nil, errdefs.Invalid(f, redact(raw), "is not a NATS URL: use nats://host:port or tls://host:port, comma-separated")
		}
		out = append(out, one)
	}
	return out, nil
}

func checkNATSSubject(f, s string) error {
	if s == "" {
		return errdefs.Invalid(f, "", "is required: the subject to subscribe to, e.g. orders.created or orders.>")
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if t == ">" && i == len(toks)-1 {
			continue
		}
		if !natsTokenRe.MatchString(t) || len(s) > 1000 {
			return errdefs.Invalid(f, s, "is not a NATS subject: tokens separated by '.', no spaces, '*' a whole token, '>' the last one")
		}
	}
	return nil
}

func checkTLS(f string, t *TLSConfig) error {
	if t == nil {
		return nil
	}
	for _, r := range []struct {
		name string
		ref  *SecretKeySelector
	}{{"caCertSecret", t.CACertSecret}, {"clientCertSecret", t.ClientCertSecret}, {"clientKeySecret", t.ClientKeySecret}} {
		if r.ref != nil {
			if err := checkSecretRef(f+"."+r.name, r.ref); err != nil {
				return err
			}
		}
	}
	if (t.ClientCertSecret == nil) != (t.ClientKeySecret == nil) {
		return errdefs.Invalid(f, "", "gives one of clientCertSecret and clientKeySecret: give both, or neither")
	}
	return nil
}

func validateMinio(f string, m MinioSource) error {
	switch {
	case m.Endpoint == "":
		return errdefs.Invalid(f+".endpoint", "", "is required: the server's host:port, e.g. minio.example.com:9000")
	case strings.Contains(m.Endpoint, "://") || strings.ContainsAny(m.Endpoint, "/?#@ ") || len(m.Endpoint) > 300:
		return errdefs.Invalid(f+".endpoint", m.Endpoint, "is not host:port: give no scheme or path (insecure: true for plain HTTP)")
	case m.Bucket == nil || m.Bucket.Name == "":
		return errdefs.Invalid(f+".bucket.name", "", "is required: the bucket whose notifications are listened to")
	case !bucketRe.MatchString(m.Bucket.Name) || strings.Contains(m.Bucket.Name, ".."):
		return errdefs.Invalid(f+".bucket.name", m.Bucket.Name, "is not a bucket name: 3 to 63 lower-case letters, digits, '.' and '-'")
	case m.AccessKey == nil:
		return errdefs.Invalid(f+".accessKey", "", "is required (a Secret key)")
	case m.SecretKey == nil:
		return errdefs.Invalid(f+".secretKey", "", "is required (a Secret key)")
	}
	if _, err := url.Parse("http://" + m.Endpoint); err != nil {
		return errdefs.Invalid(f+".endpoint", m.Endpoint, "is not host:port")
	}
	for _, r := range []struct {
		name string
		ref  *SecretKeySelector
	}{{"accessKey", m.AccessKey}, {"secretKey", m.SecretKey}, {"caCertificate", m.CACertificate}} {
		if r.ref != nil {
			if err := checkSecretRef(f+"."+r.name, r.ref); err != nil {
				return err
			}
		}
	}
	for i, e := range m.Events {
		if !s3EventRe.MatchString(e) {
			return errdefs.Invalid(fmt.Sprintf("%s.events[%d]", f, i), e, "is not a bucket event: e.g. s3:ObjectCreated:*, s3:ObjectCreated:Put, s3:ObjectRemoved:*")
		}
	}
	if m.Filter != nil && (len(m.Filter.Prefix) > 1024 || len(m.Filter.Suffix) > 1024) {
		return errdefs.Invalid(f+".filter", "", "has a prefix or suffix longer than 1024 characters")
	}
	return nil
}

// minioURL is the URL a minio source's endpoint is reached at.
func minioURL(m MinioSource) string {
	if m.Insecure {
		return "http://" + m.Endpoint
	}
	return "https://" + m.Endpoint
}

// checkPolicy checks the servers a valid EventSource connects to against the operator's
// policy for tenants' URLs; names are checked again when dialed.
func checkPolicy(p *netpolicy.Policy, s *EventSourceSpec) error {
	for _, name := range sortedKeys(s.NATS) {
		f := "spec.nats." + name + ".url"
		urls, err := natsURLs(f, s.NATS[name].URL)
		if err != nil {
			return err
		}
		for _, u := range urls {
			if err := p.CheckServerURL(f, redact(u)); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(s.Minio) {
		if err := p.CheckServerURL("spec.minio."+name+".endpoint", minioURL(s.Minio[name])); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.MQTT) {
		if err := p.CheckServerURL("spec.mqtt."+name+".url", redact(s.MQTT[name].URL)); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.Redis) {
		if err := p.CheckServerURL("spec.redis."+name+".hostAddress", "redis://"+s.Redis[name].HostAddress); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.AMQP) {
		if u := s.AMQP[name].URL; u != "" {
			if err := p.CheckServerURL("spec.amqp."+name+".url", redact(u)); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(s.RedisStream) {
		if err := p.CheckServerURL("spec.redisStream."+name+".hostAddress", "redis://"+s.RedisStream[name].HostAddress); err != nil {
			return err
		}
	}
	return nil
}
