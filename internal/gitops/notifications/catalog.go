package notifications

// catalog is Argo CD's catalog of triggers and templates (what its install puts in
// argocd-notifications-cm): the base a ConfigMap's key of the same name replaces. The
// triggers are Argo CD's, so their conditions and state keys mean the same; the templates say
// the same things in Freshet's words.
var catalog = map[string]string{
	"trigger.on-created": `- description: "Application is created."
  oncePer: app.metadata.name
  send:
  - app-created
  when: "true"
`,
	"trigger.on-deleted": `- description: "Application is deleted."
  oncePer: app.metadata.name
  send:
  - app-deleted
  when: "app.metadata.deletionTimestamp != nil"
`,
	"trigger.on-deployed": `- description: "Application is synced and healthy. Triggered once per commit."
  oncePer: app.status.operationState?.syncResult?.revision
  send:
  - app-deployed
  when: "app.status.operationState != nil and app.status.operationState.phase in ['Succeeded'] and app.status.health.status == 'Healthy' and (!time.Parse(app.status.health.lastTransitionTime).Add(1 * time.Minute).Before(time.Parse(app.status.operationState.finishedAt)) or time.Parse(app.status.health.lastTransitionTime).Before(time.Parse(app.status.operationState.startedAt)))"
`,
	"trigger.on-health-degraded": `- description: "Application has degraded"
  oncePer: app.status.operationState?.syncResult?.revision
  send:
  - app-health-degraded
  when: "app.status.health.status == 'Degraded'"
`,
	"trigger.on-sync-failed": `- description: "Application syncing has failed"
  oncePer: app.status.operationState?.syncResult?.revision
  send:
  - app-sync-failed
  when: "app.status.operationState != nil and app.status.operationState.phase in ['Error', 'Failed']"
`,
	"trigger.on-sync-running": `- description: "Application is being synced"
  oncePer: app.status.operationState?.syncResult?.revision
  send:
  - app-sync-running
  when: "app.status.operationState != nil and app.status.operationState.phase in ['Running']"
`,
	"trigger.on-sync-status-unknown": `- description: "Application status is 'Unknown'"
  oncePer: app.status.operationState?.syncResult?.revision
  send:
  - app-sync-status-unknown
  when: "app.status.sync.status == 'Unknown'"
`,
	"trigger.on-sync-succeeded": `- description: "Application syncing has succeeded"
  oncePer: app.status.operationState?.syncResult?.revision
  send:
  - app-sync-succeeded
  when: "app.status.operationState != nil and app.status.operationState.phase in ['Succeeded']"
`,
	"template.app-created": `message: |
  Application {{.app.metadata.name}} has been created.
email:
  subject: "Application {{.app.metadata.name}} has been created."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#18be52"}]
`,
	"template.app-deleted": `message: |
  Application {{.app.metadata.name}} has been deleted.
email:
  subject: "Application {{.app.metadata.name}} has been deleted."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#f4c030"}]
`,
	"template.app-deployed": `message: |
  {{if eq .serviceType "slack"}}:white_check_mark:{{end}} Application {{.app.metadata.name}} is now running new version of deployments manifests.
email:
  subject: "New version of an application {{.app.metadata.name}} is up and running."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#18be52", "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true},
     {"title": "Repository", "value": "{{if .app.spec.source}}{{.app.spec.source.repoURL}}{{else}}{{range $i, $s := .app.spec.sources}}{{if $i}}, {{end}}{{$s.repoURL}}{{end}}{{end}}", "short": true}
     {{range $c := .app.status.conditions}}, {"title": "{{$c.type}}", "value": {{toJson $c.message}}, "short": true}{{end}}]}]
`,
	"template.app-health-degraded": `message: |
  {{if eq .serviceType "slack"}}:exclamation:{{end}} Application {{.app.metadata.name}} has degraded.
  Application details: {{.context.argocdUrl}}/applications/{{.app.metadata.name}}.
email:
  subject: "Application {{.app.metadata.name}} has degraded."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#f4c030", "fields": [{"title": "Health Status", "value": "{{.app.status.health.status}}", "short": true},
     {"title": "Repository", "value": "{{if .app.spec.source}}{{.app.spec.source.repoURL}}{{else}}{{range $i, $s := .app.spec.sources}}{{if $i}}, {{end}}{{$s.repoURL}}{{end}}{{end}}", "short": true}
     {{range $c := .app.status.conditions}}, {"title": "{{$c.type}}", "value": {{toJson $c.message}}, "short": true}{{end}}]}]
`,
	"template.app-sync-failed": `message: |
  {{if eq .serviceType "slack"}}:exclamation:{{end}} The sync operation of application {{.app.metadata.name}} has failed at {{.app.status.operationState.finishedAt}} with the following error: {{.app.status.operationState.message}}
  Sync operation details are available at: {{.context.argocdUrl}}/applications/{{.app.metadata.name}}?operation=true .
email:
  subject: "Failed to sync application {{.app.metadata.name}}."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#E96D76", "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true},
     {"title": "Repository", "value": "{{if .app.spec.source}}{{.app.spec.source.repoURL}}{{else}}{{range $i, $s := .app.spec.sources}}{{if $i}}, {{end}}{{$s.repoURL}}{{end}}{{end}}", "short": true}
     {{range $c := .app.status.conditions}}, {"title": "{{$c.type}}", "value": {{toJson $c.message}}, "short": true}{{end}}]}]
`,
	"template.app-sync-running": `message: |
  The sync operation of application {{.app.metadata.name}} has started at {{.app.status.operationState.startedAt}}.
  Sync operation details are available at: {{.context.argocdUrl}}/applications/{{.app.metadata.name}}?operation=true .
email:
  subject: "Start syncing application {{.app.metadata.name}}."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#0DADEA", "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true},
     {"title": "Repository", "value": "{{if .app.spec.source}}{{.app.spec.source.repoURL}}{{else}}{{range $i, $s := .app.spec.sources}}{{if $i}}, {{end}}{{$s.repoURL}}{{end}}{{end}}", "short": true}
     {{range $c := .app.status.conditions}}, {"title": "{{$c.type}}", "value": {{toJson $c.message}}, "short": true}{{end}}]}]
`,
	"template.app-sync-status-unknown": `message: |
  {{if eq .serviceType "slack"}}:exclamation:{{end}} Application {{.app.metadata.name}} sync is 'Unknown'.
  Application details: {{.context.argocdUrl}}/applications/{{.app.metadata.name}}.
email:
  subject: "Application {{.app.metadata.name}} sync status is 'Unknown'"
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#E96D76", "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true},
     {"title": "Repository", "value": "{{if .app.spec.source}}{{.app.spec.source.repoURL}}{{else}}{{range $i, $s := .app.spec.sources}}{{if $i}}, {{end}}{{$s.repoURL}}{{end}}{{end}}", "short": true}
     {{range $c := .app.status.conditions}}, {"title": "{{$c.type}}", "value": {{toJson $c.message}}, "short": true}{{end}}]}]
`,
	"template.app-sync-succeeded": `message: |
  {{if eq .serviceType "slack"}}:white_check_mark:{{end}} Application {{.app.metadata.name}} has been successfully synced at {{.app.status.operationState.finishedAt}}.
  Sync operation details are available at: {{.context.argocdUrl}}/applications/{{.app.metadata.name}}?operation=true .
email:
  subject: "Application {{.app.metadata.name}} has been successfully synced."
slack:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}", "color": "#18be52", "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true},
     {"title": "Repository", "value": "{{if .app.spec.source}}{{.app.spec.source.repoURL}}{{else}}{{range $i, $s := .app.spec.sources}}{{if $i}}, {{end}}{{$s.repoURL}}{{end}}{{end}}", "short": true}
     {{range $c := .app.status.conditions}}, {"title": "{{$c.type}}", "value": {{toJson $c.message}}, "short": true}{{end}}]}]
`,
}
