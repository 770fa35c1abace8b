package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// ListSensors returns the Sensors of namespace ns (every namespace the controller watches when
// empty), by namespace and name. A Sensor that does not decode is listed with its name and a
// condition saying why.
func (c *Controller) ListSensors(ctx context.Context, ns string) ([]appproxyv1.Sensor, error) {
	items, err := c.list(ctx, SensorsResource.Resource, ns)
	if err != nil {
		return nil, err
	}
	out := make([]appproxyv1.Sensor, 0, len(items))
	for i := range items {
		out = append(out, SensorSummary(&items[i]))
	}
	return out, nil
}

// ListEventSources returns the EventSources of namespace ns (every namespace the controller
// watches when empty), by namespace and name.
func (c *Controller) ListEventSources(ctx context.Context, ns string) ([]appproxyv1.EventSource, error) {
	items, err := c.list(ctx, EventSourcesResource.Resource, ns)
	if err != nil {
		return nil, err
	}
	out := make([]appproxyv1.EventSource, 0, len(items))
	for i := range items {
		out = append(out, EventSourceSummary(&items[i]))
	}
	return out, nil
}

func (c *Controller) list(ctx context.Context, resource, ns string) ([]unstructured.Unstructured, error) {
	if ns == "" {
		ns = c.opts.Namespace
	}
	gvr := SensorsResource
	if resource == EventSourcesResource.Resource {
		gvr = EventSourcesResource
	}
	l, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s: %v: %w", resource, err, errdefs.ErrUnavailable)
	}
	sort.Slice(l.Items, func(i, j int) bool {
		if l.Items[i].GetNamespace() != l.Items[j].GetNamespace() {
			return l.Items[i].GetNamespace() < l.Items[j].GetNamespace()
		}
		return l.Items[i].GetName() < l.Items[j].GetName()
	})
	return l.Items, nil
}

func conditionsOf(st Status) []appproxyv1.EventCondition {
	out := make([]appproxyv1.EventCondition, 0, len(st.Conditions))
	for _, c := range st.Conditions {
		out = append(out, appproxyv1.EventCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return out
}

// SensorSummary is a Sensor as the app-proxy lists it. One that does not decode keeps its name
// and gets a condition (Configured False, InvalidSpec) saying why.
func SensorSummary(u *unstructured.Unstructured) appproxyv1.Sensor {
	out := appproxyv1.Sensor{Name: u.GetName(), Namespace: u.GetNamespace(), CreatedAt: u.GetCreationTimestamp().UTC(),
		Dependencies: []appproxyv1.SensorDependency{}, Triggers: []appproxyv1.SensorTrigger{}, Conditions: []appproxyv1.EventCondition{}}
	data, err := u.MarshalJSON()
	if err != nil {
		return out
	}
	s, err := DecodeSensor(data)
	if s == nil {
		out.Conditions = append(out.Conditions, appproxyv1.EventCondition{Type: CondConfigured, Status: "False", Reason: ReasonInvalidSpec, Message: err.Error()})
		return out
	}
	out.Conditions = conditionsOf(s.Status)
	if err != nil && !hasCondition(out.Conditions, CondConfigured) {
		out.Conditions = append(out.Conditions, appproxyv1.EventCondition{Type: CondConfigured, Status: "False", Reason: ReasonInvalidSpec, Message: err.Error()})
	}
	for _, d := range s.Spec.Dependencies {
		out.Dependencies = append(out.Dependencies, appproxyv1.SensorDependency{Name: d.Name, EventSourceName: d.EventSourceName, EventName: d.EventName})
	}
	for _, t := range s.Spec.Triggers {
		if t.Template == nil {
			continue
		}
		st := appproxyv1.SensorTrigger{Name: t.Template.Name}
		var src *ArtifactLocation
		switch {
		case t.Template.ArgoWorkflow != nil:
			st.Type, src = "argoWorkflow", t.Template.ArgoWorkflow.Source
		case t.Template.K8s != nil:
			st.Type, src = "k8s", t.Template.K8s.Source
		case t.Template.HTTP != nil:
			st.Type = "http"
		case t.Template.Log != nil:
			st.Type = "log"
		case t.Template.NATS != nil:
			st.Type = "nats"
		case t.Template.Slack != nil:
			st.Type = "slack"
		}
		if src != nil && len(src.Resource) > 0 {
			var res struct {
				Kind string `json:"kind"`
				Spec struct {
					WorkflowTemplateRef *struct {
						Name         string `json:"name"`
						ClusterScope bool   `json:"clusterScope"`
					} `json:"workflowTemplateRef"`
				} `json:"spec"`
			}
			if json.Unmarshal(src.Resource, &res) == nil {
				st.Kind = res.Kind
				if ref := res.Spec.WorkflowTemplateRef; res.Kind == "Workflow" && ref != nil {
					st.WorkflowTemplate = ref.Name
					if ref.ClusterScope {
						st.WorkflowTemplate = "cluster/" + ref.Name
					}
				}
			}
		}
		out.Triggers = append(out.Triggers, st)
	}
	return out
}

func hasCondition(cs []appproxyv1.EventCondition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return true
		}
	}
	return false
}

// EventSourceSummary is an EventSource as the app-proxy lists it.
func EventSourceSummary(u *unstructured.Unstructured) appproxyv1.EventSource {
	out := appproxyv1.EventSource{Name: u.GetName(), Namespace: u.GetNamespace(), CreatedAt: u.GetCreationTimestamp().UTC(),
		Events: []appproxyv1.EventSourceEvent{}, Conditions: []appproxyv1.EventCondition{}}
	data, err := u.MarshalJSON()
	if err != nil {
		return out
	}
	es, err := DecodeEventSource(data)
	if es == nil {
		out.Conditions = append(out.Conditions, appproxyv1.EventCondition{Type: CondConfigured, Status: "False", Reason: ReasonInvalidSpec, Message: err.Error()})
		return out
	}
	out.Conditions = conditionsOf(es.Status)
	if err != nil && !hasCondition(out.Conditions, CondConfigured) {
		out.Conditions = append(out.Conditions, appproxyv1.EventCondition{Type: CondConfigured, Status: "False", Reason: ReasonInvalidSpec, Message: err.Error()})
	}
	s := es.Spec
	for _, n := range sortedKeys(s.AMQP) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventAMQP})
	}
	for _, n := range sortedKeys(s.Bitbucket) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventBitbucket, Endpoint: endpointOf(s.Bitbucket[n].Webhook)})
	}
	for _, n := range sortedKeys(s.Calendar) {
		c := s.Calendar[n]
		sched := c.Schedule
		if sched == "" {
			sched = "every " + c.Interval
		}
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventCalendar, Schedule: sched})
	}
	for _, n := range sortedKeys(s.GitHub) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventGitHub, Endpoint: endpointOf(s.GitHub[n].Webhook)})
	}
	for _, n := range sortedKeys(s.Gitea) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventGitea, Endpoint: endpointOf(s.Gitea[n].Webhook)})
	}
	for _, n := range sortedKeys(s.GitLab) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventGitLab, Endpoint: endpointOf(s.GitLab[n].Webhook)})
	}
	for _, n := range sortedKeys(s.Minio) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventMinio})
	}
	for _, n := range sortedKeys(s.MQTT) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventMQTT})
	}
	for _, n := range sortedKeys(s.NATS) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventNATS})
	}
	for _, n := range sortedKeys(s.Redis) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventRedis})
	}
	for _, n := range sortedKeys(s.RedisStream) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventRedisStream})
	}
	for _, n := range sortedKeys(s.Resource) {
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventResource})
	}
	for _, n := range sortedKeys(s.Webhook) {
		w := s.Webhook[n]
		out.Events = append(out.Events, appproxyv1.EventSourceEvent{Name: n, Type: appproxyv1.EventWebhook, Endpoint: endpointOf(&w.WebhookContext)})
	}
	return out
}

func endpointOf(w *WebhookContext) string {
	if w == nil {
		return ""
	}
	return w.Endpoint
}
