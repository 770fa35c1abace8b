// Package workflows is the runtime's Argo Workflows role: a controller that runs Argo
// Workflows' own YAML (argoproj.io/v1alpha1 Workflow, WorkflowTemplate,
// ClusterWorkflowTemplate, CronWorkflow) with no Argo install. It is the workflow engine behind Delivery Pipelines in hybrid runtimes.
//
// It installs the CRDs (EnsureCRDs, at start; `freshet runtime install` applies them too),
// watches Workflows, WorkflowTemplates, ClusterWorkflowTemplates and the pods it makes, and
// runs each Workflow as Argo's operator does: every reconcile walks the template tree from the
// entrypoint (an operation), using status.nodes as its memory, starting what is due and reading
// what ended, then writes the status once. Templates: container and script (one pod each),
// resource (create, apply or delete a manifest, as the workflow's service account), suspend
// (a duration, or until Resume), steps and DAG (dependencies, and depends expressions parsed
// here, never evaluated as code), templateRef and workflowTemplateRef; parameters, the {{…}}
// variables Argo defines, withItems/withParam/withSequence, when (expr-lang with bare words as
// strings, as Argo's govaluate use), retryStrategy, activeDeadlineSeconds, exit handlers
// and lifecycle hooks of the workflow, its steps and tasks (hooks.go), parallelism, serviceAccountName, shutdown, podGC and ttlStrategy (gc.go), volumes and
// volumeClaimTemplates (volumes.go: claims per run, volumeClaimGC), and synchronization's
// mutexes and semaphores (sync.go: held in memory, rebuilt from the statuses at start). Validation is
// `argo lint`'s (ValidateSpec): a Workflow that does not validate ends in phase Error with the
// field named in its message, and nothing runs. What is recognised but not built yet is refused the same way, by name.
//
// CronWorkflows (cron.go) share the work queue: each due time of the schedule creates one
// Workflow named after that time, which makes a schedule idempotent across restarts; the
// concurrency policy, starting deadline, suspend and history limits are Argo's.
//
// The operations Argo's server and CLI offer are the Controller's methods, which the app-proxy
// serves (ops.go, logs.go): Submit (a manifest or a template, linted first: PrepareSubmit),
// List, Get, Logs, Resubmit, Retry, Shutdown (stop, terminate), Suspend, Resume, and the
// templates' ListTemplates and Template. Options.OnFinished hears of every finished Workflow
// (Record), which the runtime reports to the control plane's archive.
//
// A step's pod runs the user's image with the freshet binary copied in by an init container
// (package emissary): the user's command runs under it, and its stdout (the result) and output
// parameter files come back through the container's termination message.
package workflows
