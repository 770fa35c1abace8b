// Package events is the runtime's Argo Events role: a controller that runs Argo Events' own
// YAML (argoproj.io/v1alpha1 EventSource, Sensor, EventBus) with no Argo install. It is what
// triggers Delivery Pipelines in hybrid runtimes.
//
// It installs the CRDs (EnsureCRDs, at start), watches the three kinds and runs them in the
// runtime's process:
//
//   - an EventBus of type jetstream names the NATS JetStream the namespace's events go through
//     (jetstreamExotic.url, or the runtime's own NATS for a native jetstream bus); each bus has
//     one stream, and an event is one JSON message (Argo's CloudEvent context and data) on
//     argo-events.<namespace>.<bus>.<event source>.<event>, published with its id as
//     Nats-Msg-Id;
//   - an EventSource's webhook and git provider events (GitHub, GitLab, Gitea, Bitbucket) are
//     served by Handler at /app-proxy/events/<namespace>/<event source><endpoint>: every
//     delivery is verified before it is read — the git providers' signatures by
//     internal/webhook, a plain webhook's bearer authSecret in constant time — and a source
//     without a secret is refused; calendar events (schedule with timezone, or interval) fire
//     from the controller's timers, keeping the last tick in a ConfigMap and catching up the
//     missed ones on start when asked to (persistence, calpersist.go);
//   - resource, nats, minio, redis, redisStream, mqtt and amqp events come from connections
//     the runtime makes (listen*.go): a watch of Kubernetes objects as the EventSource's
//     service account (impersonated), a NATS subscription, a MinIO bucket notification
//     stream, a Redis or MQTT subscription, a Redis stream consumer group, an AMQP queue bound
//     to an exchange — their servers checked against the operator's netpolicy.Policy and
//     dialed through it, connected again with backoff (an amqp, nats or mqtt source's connectionBackoff)
//     when they go away, closed when the EventSource changes or is deleted; the state of each
//     connection is the EventSource's SourcesConnected condition;
//   - a Sensor is a durable JetStream consumer of its dependencies' subjects; an event passes
//     its dependency's filters (data, exprs, time, context), and once a trigger's conditions
//     (a boolean expression over dependency names, parsed here, never evaluated as code) hold,
//     the trigger creates its resource — a Workflow (inline, or one with a
//     workflowTemplateRef) or any Kubernetes object — with the trigger's parameters taken from
//     the events, as the Sensor's service account (impersonated); an argoWorkflow trigger's
//     other operations (submit-from, resubmit, retry, resume, suspend, terminate, stop) run
//     the workflow engine's own operations as that account; an http trigger sends a request
//     (its URL checked against the runtime's network policy before every request, its body
//     built from the events, policy.status deciding success), a nats trigger publishes a
//     message, a log trigger writes the events in the runtime's log.
//
// Bad input is refused before anything runs: the resource's status gets a condition whose
// message names the field, the value and what is valid, and nothing of it is started.
package events
