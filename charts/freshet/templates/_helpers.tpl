{{/* The release's base name: the release name, suffixed with -freshet unless it has it. */}}
{{- define "freshet.fullname" -}}
{{- if contains "freshet" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-freshet" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "freshet.labels" -}}
app.kubernetes.io/name: freshet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "freshet.selector" -}}
app.kubernetes.io/name: freshet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: control-plane
{{- end -}}

{{- define "freshet.image" -}}
{{- $r := .Values.image.repository -}}
{{- if regexMatch "(@|:[^/]*$)" $r -}}{{ $r }}{{- else -}}{{ $r }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}
{{- end -}}

{{/* secretKeyRef for one setting: its existingSecret, else the chart's Secret. Arguments:
list $ <values of the setting> <key in the chart's Secret>. */}}
{{- define "freshet.secretRef" -}}
{{- $root := index . 0 -}}{{- $v := index . 1 -}}{{- $key := index . 2 -}}
{{- if $v.existingSecret -}}
name: {{ $v.existingSecret }}
key: {{ $v.existingSecretKey }}
{{- else -}}
name: {{ include "freshet.fullname" $root }}
key: {{ $key }}
{{- end -}}
{{- end -}}

{{/* The checks of combinations the schema cannot express; each message names the value. */}}
{{- define "freshet.validate" -}}
{{- $db := .Values.database -}}
{{- $n := 0 -}}{{- if $db.url }}{{ $n = add1 $n }}{{ end }}{{- if $db.existingSecret }}{{ $n = add1 $n }}{{ end }}{{- if $db.bundled.enabled }}{{ $n = add1 $n }}{{ end -}}
{{- if ne (int $n) 1 -}}
{{- fail "database: set exactly one of database.url (postgres://…), database.existingSecret or database.bundled.enabled=true: replicas share one PostgreSQL database" -}}
{{- end -}}
{{- if and $db.bundled.enabled (not $db.bundled.password) -}}
{{- fail "database.bundled.password is required with database.bundled.enabled=true" -}}
{{- end -}}
{{- $nats := .Values.nats -}}
{{- $n = 0 -}}{{- if $nats.url }}{{ $n = add1 $n }}{{ end }}{{- if $nats.existingSecret }}{{ $n = add1 $n }}{{ end }}{{- if $nats.bundled.enabled }}{{ $n = add1 $n }}{{ end -}}
{{- if ne (int $n) 1 -}}
{{- fail "nats: set exactly one of nats.url (nats://…), nats.existingSecret or nats.bundled.enabled=true: replicas share one NATS" -}}
{{- end -}}
{{- if and $nats.bundled.enabled (gt (int $nats.replicas) 1) -}}
{{- fail (printf "nats.replicas %d needs an external NATS cluster (nats.url or nats.existingSecret): the bundled NATS is a single node, so nats.replicas must be 1" (int $nats.replicas)) -}}
{{- end -}}
{{- if not (or .Values.masterKey.value .Values.masterKey.existingSecret) -}}
{{- fail "masterKey: set masterKey.value (a key file from 'freshet master-key generate FILE') or masterKey.existingSecret: every replica must use the same master keys" -}}
{{- end -}}
{{- if and (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) (not (or .Values.tunnel.hopSecret .Values.tunnel.existingSecret)) -}}
{{- fail (printf "tunnel.hopSecret (or tunnel.existingSecret) is required with replicaCount %d or autoscaling: replicas forward tunnel requests to each other signed with it" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (lt (int .Values.autoscaling.maxReplicas) (int .Values.autoscaling.minReplicas)) -}}
{{- fail (printf "autoscaling.maxReplicas %d is less than autoscaling.minReplicas %d" (int .Values.autoscaling.maxReplicas) (int .Values.autoscaling.minReplicas)) -}}
{{- end -}}
{{- if and .Values.ingress.enabled .Values.ingress.tls.enabled (not .Values.ingress.tls.secretName) -}}
{{- fail "ingress.tls.secretName is required with ingress.tls.enabled=true" -}}
{{- end -}}
{{- end -}}
