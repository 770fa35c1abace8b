package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// Events is what the app-proxy's sensors and event-sources API needs of the runtime's Argo
// Events controller (internal/gitops/events).
type Events interface {
	ListSensors(ctx context.Context, namespace string) ([]appproxyv1.Sensor, error)
	ListEventSources(ctx context.Context, namespace string) ([]appproxyv1.EventSource, error)
}

var _ Events = (*events.Controller)(nil)

// DefaultPipelinesDir is where CommitDeliveryPipeline writes pipelines in a Git Source's
// repository unless told otherwise.
const DefaultPipelinesDir = "delivery-pipelines"

// maxPipelineName leaves room for the suffix Kubernetes adds to a run's generateName.
const maxPipelineName = 52

// The defaults of a pipeline's event.
const (
	defaultSecretKey   = "secret"
	pipelineDependency = "event"
)

var secretNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

func (h *Host) eventsCtl() (Events, error) {
	if h.opts.Events == nil {
		return nil, fmt.Errorf("this runtime runs no events controller (Sensors and EventSources run on hybrid runtimes with a cluster, not started with --no-events): %w", errdefs.ErrUnavailable)
	}
	return h.opts.Events, nil
}

// pipelineRoutes serves sensors, event-sources and the commit of a Delivery Pipeline.
func (h *Host) pipelineRoutes(handle func(string, func(*http.Request) (int, any, error))) {
	handle("GET "+APIPrefix+"sensors", func(r *http.Request) (int, any, error) {
		ec, err := h.eventsCtl()
		if err != nil {
			return 0, nil, err
		}
		l, err := ec.ListSensors(r.Context(), r.URL.Query().Get("namespace"))
		return http.StatusOK, items(l), err
	})
	handle("GET "+APIPrefix+"event-sources", func(r *http.Request) (int, any, error) {
		ec, err := h.eventsCtl()
		if err != nil {
			return 0, nil, err
		}
		l, err := ec.ListEventSources(r.Context(), r.URL.Query().Get("namespace"))
		return http.StatusOK, items(l), err
	})
	handle("POST "+APIPrefix+"git-sources/{name}/delivery-pipelines", func(r *http.Request) (int, any, error) {
		var req appproxyv1.DeliveryPipelineCommitRequest
		if err := decodeBody(r, &req); err != nil {
			return 0, nil, err
		}
		res, err := h.CommitDeliveryPipeline(r.Context(), callerOf(r), r.PathValue("name"), req)
		return http.StatusCreated, res, err
	})
}

// PipelineManifests are the files of a Delivery Pipeline, YAML.
type PipelineManifests struct {
	EventSource, Sensor []byte
	// Template is the WorkflowTemplate committed with it (nil: one that exists is used).
	Template []byte
	// TemplateName is the template the Sensor's trigger submits.
	TemplateName string
}

// BuildDeliveryPipeline makes a Delivery Pipeline's EventSource, Sensor and WorkflowTemplate
// from req, for namespace ns. The user's values are data: the manifests are encoded from
// objects, never pasted into text, and each is checked by the decoder the controllers use. An
// invalid request is a *errdefs.FieldError naming the request's field.
func BuildDeliveryPipeline(req appproxyv1.DeliveryPipelineCommitRequest) (PipelineManifests, error) {
	var out PipelineManifests
	name := req.Name
	if name == "" {
		return out, errdefs.Invalid("name", "", "is required: the pipeline's name (DNS-1123: lowercase letters, digits and '-')")
	}
	if !dnsLabel.MatchString(name) || len(name) > maxPipelineName {
		return out, errdefs.Invalid("name", name, fmt.Sprintf("is not a DNS-1123 label of at most %d characters: lowercase letters, digits and '-', starting and ending with a letter or digit", maxPipelineName))
	}
	// The template.
	switch {
	case strings.TrimSpace(req.TemplateManifest) != "":
		if len(req.TemplateManifest) > maxBody {
			return out, errdefs.Invalid("templateManifest", fmt.Sprintf("%d bytes", len(req.TemplateManifest)), fmt.Sprintf("is larger than %d bytes", maxBody))
		}
		data, err := yaml.YAMLToJSON([]byte(req.TemplateManifest))
		if err != nil || len(data) == 0 || data[0] != '{' {
			return out, errdefs.Invalid("templateManifest", "", "is not a WorkflowTemplate, YAML or JSON")
		}
		wt, err := workflows.DecodeTemplate(data, "WorkflowTemplate")
		if err != nil {
			var fe *errdefs.FieldError
			if errors.As(err, &fe) {
				return out, errdefs.Invalid("templateManifest."+fe.Field, fe.Value, fe.Reason)
			}
			return out, errdefs.Invalid("templateManifest", "", err.Error())
		}
		if !dnsLabel.MatchString(wt.Name) {
			return out, errdefs.Invalid("templateManifest.metadata.name", wt.Name, "is not a name: 1-63 lowercase letters, digits and '-'")
		}
		if req.WorkflowTemplate != "" && req.WorkflowTemplate != wt.Name {
			return out, errdefs.Invalid("workflowTemplate", req.WorkflowTemplate, fmt.Sprintf("differs from the name of templateManifest (%q): give one or the same", wt.Name))
		}
		if out.Template, err = yaml.JSONToYAML(data); err != nil {
			return out, err
		}
		out.TemplateName = wt.Name
	case req.WorkflowTemplate != "":
		if !dnsLabel.MatchString(req.WorkflowTemplate) {
			return out, errdefs.Invalid("workflowTemplate", req.WorkflowTemplate, "is not a WorkflowTemplate name: 1-63 lowercase letters, digits and '-'")
		}
		out.TemplateName = req.WorkflowTemplate
	default:
		return out, errdefs.Invalid("workflowTemplate", "", "is required: the WorkflowTemplate the pipeline runs (or templateManifest, one to commit with it)")
	}
	// The event.
	ev := req.Event
	if !slices.Contains(appproxyv1.EventTypes, ev.Type) {
		return out, errdefs.Invalid("event.type", ev.Type, "is not an event type: use one of "+strings.Join(appproxyv1.EventTypes, ", "))
	}
	endpoint := ev.Endpoint
	if endpoint == "" {
		endpoint = "/" + name
	}
	var secret map[string]any
	if ev.Type != appproxyv1.EventCalendar {
		if ev.SecretName == "" {
			return out, errdefs.Invalid("event.secretName", "", "is required: the Secret (in the pipeline's namespace) holding the webhook's secret; Freshet serves no unauthenticated webhook")
		}
		if !secretNameRe.MatchString(ev.SecretName) {
			return out, errdefs.Invalid("event.secretName", ev.SecretName, "is not a Secret name: lowercase letters, digits, '-' and '.'")
		}
		key := ev.SecretKey
		if key == "" {
			key = defaultSecretKey
		}
		secret = map[string]any{"name": ev.SecretName, "key": key}
	}
	hook := map[string]any{"endpoint": endpoint, "method": "POST"}
	needRepo := func() error {
		if ev.Owner == "" && ev.Type != appproxyv1.EventGitLab {
			return errdefs.Invalid("event.owner", "", "is required: the owner (user or organization) of the repository the events come from")
		}
		if ev.Repository == "" {
			return errdefs.Invalid("event.repository", "", "is required: the repository the events come from")
		}
		return nil
	}
	evs := func(def string) []string {
		if len(ev.Events) == 0 {
			return []string{def}
		}
		return ev.Events
	}
	var src map[string]any
	switch ev.Type {
	case appproxyv1.EventWebhook:
		src = map[string]any{"endpoint": endpoint, "method": "POST", "authSecret": secret}
	case appproxyv1.EventCalendar:
		switch {
		case ev.Schedule == "" && ev.Interval == "":
			return out, errdefs.Invalid("event.schedule", "", "is required: a cron schedule (as 0 * * * *), or an interval")
		case ev.Schedule != "" && ev.Interval != "":
			return out, errdefs.Invalid("event.interval", ev.Interval, "is given with a schedule: give one")
		case ev.Schedule != "":
			src = map[string]any{"schedule": ev.Schedule}
		default:
			src = map[string]any{"interval": ev.Interval}
		}
	case appproxyv1.EventGitHub, appproxyv1.EventGitea:
		if err := needRepo(); err != nil {
			return out, err
		}
		src = map[string]any{"webhook": hook, "repositories": []any{map[string]any{"owner": ev.Owner, "names": []string{ev.Repository}}},
			"events": evs("push"), "webhookSecret": secret}
	case appproxyv1.EventGitLab:
		if err := needRepo(); err != nil {
			return out, err
		}
		project := ev.Repository
		if ev.Owner != "" && !strings.Contains(project, "/") {
			project = ev.Owner + "/" + project
		}
		src = map[string]any{"webhook": hook, "projects": []string{project}, "events": evs("PushEvents"), "secretToken": secret}
	case appproxyv1.EventBitbucket:
		if err := needRepo(); err != nil {
			return out, err
		}
		src = map[string]any{"webhook": hook, "repositories": []any{map[string]any{"owner": ev.Owner, "repositorySlug": ev.Repository}},
			"events": evs("repo:push"), "webhookSecret": secret}
	}
	es := map[string]any{"apiVersion": events.Group + "/" + events.Version, "kind": "EventSource",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{ev.Type: map[string]any{name: src}}}
	var err error
	if out.EventSource, err = checkedYAML(es, "eventSource", "event", func(b []byte) error { _, err := events.DecodeEventSource(b); return err }); err != nil {
		return out, err
	}
	// The Sensor: the event submits a Workflow from the template.
	var args []any
	for i, p := range req.Parameters {
		if p.Name == "" {
			return out, errdefs.Invalid(fmt.Sprintf("parameters[%d].name", i), "", "is required")
		}
		args = append(args, map[string]any{"name": p.Name, "value": p.Value})
	}
	wfSpec := map[string]any{"workflowTemplateRef": map[string]any{"name": out.TemplateName}}
	if len(args) > 0 {
		wfSpec["arguments"] = map[string]any{"parameters": args}
	}
	wf := map[string]any{"apiVersion": workflows.Group + "/" + workflows.Version, "kind": "Workflow",
		"metadata": map[string]any{"generateName": name + "-"}, "spec": wfSpec}
	sensor := map[string]any{"apiVersion": events.Group + "/" + events.Version, "kind": "Sensor",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"dependencies": []any{map[string]any{"name": pipelineDependency, "eventSourceName": name, "eventName": name}},
			"triggers": []any{map[string]any{"template": map[string]any{"name": name,
				"argoWorkflow": map[string]any{"operation": "submit", "source": map[string]any{"resource": wf}}}}},
		}}
	if out.Sensor, err = checkedYAML(sensor, "sensor", "", func(b []byte) error { _, err := events.DecodeSensor(b); return err }); err != nil {
		return out, err
	}
	return out, nil
}

// checkedYAML encodes obj and checks it with decode; a field it refuses is named under prefix
// (the request's field when reqField is given).
func checkedYAML(obj any, prefix, reqField string, decode func([]byte) error) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := decode(data); err != nil {
		var fe *errdefs.FieldError
		if errors.As(err, &fe) {
			field := prefix + "." + fe.Field
			if reqField != "" {
				field = reqField + " (" + field + ")"
			}
			return nil, errdefs.Invalid(field, fe.Value, fe.Reason)
		}
		return nil, errdefs.Invalid(prefix, "", err.Error())
	}
	return yaml.JSONToYAML(data)
}

// CommitDeliveryPipeline commits a Delivery Pipeline to Git Source source's repository in one
// commit as c: <dir>/<name>-eventsource.yaml, <dir>/<name>-sensor.yaml and, with a template
// manifest, <dir>/<template>-workflow-template.yaml, with the application that deploys dir
// (<source>-delivery-pipelines) when the Git Source has none yet. Nothing is committed when
// the request is refused.
func (h *Host) CommitDeliveryPipeline(ctx context.Context, c Caller, source string, req appproxyv1.DeliveryPipelineCommitRequest) (appproxyv1.DeliveryPipelineCommit, error) {
	var out appproxyv1.DeliveryPipelineCommit
	if err := c.mayWrite(); err != nil {
		return out, err
	}
	g, err := h.GitSource(source)
	if err != nil {
		return out, err
	}
	if h.isRenderedSource(source) {
		return out, errdefs.Invalid("gitSource", source, "renders its applications (a Helm chart or a Kustomization): add the pipeline to its repository in git")
	}
	m, err := BuildDeliveryPipeline(req)
	if err != nil {
		return out, err
	}
	msg := req.Message
	if msg == "" {
		msg = "add delivery pipeline " + req.Name
	}
	cm, err := h.commitBeside(ctx, c, source, g, besideCommit{dir: req.Dir, defaultDir: DefaultPipelinesDir, namespace: req.Namespace,
		appSuffix: "-delivery-pipelines", message: msg,
		files: func(dir string) []git.FileChange {
			fs := []git.FileChange{{Path: dir + "/" + req.Name + "-eventsource.yaml", Content: m.EventSource},
				{Path: dir + "/" + req.Name + "-sensor.yaml", Content: m.Sensor}}
			if m.Template != nil {
				fs = append(fs, git.FileChange{Path: dir + "/" + m.TemplateName + "-workflow-template.yaml", Content: m.Template})
			}
			return fs
		}})
	if err != nil {
		return out, err
	}
	h.log.Info("delivery pipeline committed", "pipeline", req.Name, "gitSource", source, "files", cm.files, "user", c.Email, "account", c.Account)
	return appproxyv1.DeliveryPipelineCommit{Name: req.Name, GitSource: source, RepoURL: g.Spec.RepoURL, Branch: cm.branch, Files: cm.files,
		WorkflowTemplate: m.TemplateName, Application: cm.app, ApplicationCreated: cm.appCreated, Commit: cm.commit, Namespace: cm.namespace}, nil
}
