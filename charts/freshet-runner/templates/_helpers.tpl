{{/* The runner's registered name: .Values.name, else the release name. */}}
{{- define "freshet-runner.name" -}}
{{- .Values.name | default .Release.Name -}}
{{- end -}}

{{- define "freshet-runner.labels" -}}
app.kubernetes.io/name: freshet-runner
app.kubernetes.io/instance: {{ include "freshet-runner.name" . }}
app.kubernetes.io/managed-by: freshet
{{- end -}}

{{- define "freshet-runner.selector" -}}
app.kubernetes.io/name: freshet-runner
app.kubernetes.io/instance: {{ include "freshet-runner.name" . }}
{{- end -}}

{{- define "freshet-runner.image" -}}
{{- $r := .Values.image.repository -}}
{{- if regexMatch "(@|:[^/]*$)" $r -}}{{ $r }}{{- else -}}{{ $r }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}
{{- end -}}
