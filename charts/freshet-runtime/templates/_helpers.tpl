{{/* The runtime's registered name: .Values.name, else the release name. */}}
{{- define "freshet-runtime.name" -}}
{{- .Values.name | default .Release.Name -}}
{{- end -}}

{{- define "freshet-runtime.labels" -}}
app.kubernetes.io/name: freshet-runtime
app.kubernetes.io/instance: {{ include "freshet-runtime.name" . }}
app.kubernetes.io/managed-by: freshet
{{- end -}}

{{- define "freshet-runtime.selector" -}}
app.kubernetes.io/name: freshet-runtime
app.kubernetes.io/instance: {{ include "freshet-runtime.name" . }}
{{- end -}}

{{/* The image: a repository that carries a tag or digest is used as is; else the tag, else
the chart's appVersion. */}}
{{- define "freshet-runtime.image" -}}
{{- $r := .Values.image.repository -}}
{{- if regexMatch "(@|:[^/]*$)" $r -}}{{ $r }}{{- else -}}{{ $r }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}
{{- end -}}

{{- define "freshet-runtime.secret" -}}
{{- .Values.token.existingSecret | default "freshet-runtime-token" -}}
{{- end -}}
