{{/* The chart's name, or nameOverride. */}}
{{- define "gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name, the prefix of every object's name: fullnameOverride,
or the release name with the chart's name unless it already holds it.
*/}}
{{- define "gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* name-version, for the helm.sh/chart label. */}}
{{- define "gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "gateway.labels" -}}
helm.sh/chart: {{ include "gateway.chart" . }}
{{ include "gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ai-job-gateway
{{- end }}

{{/* The labels that select the release's objects. */}}
{{- define "gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of one component (serve, worker, migrate): dict "root" $ "component" "serve". */}}
{{- define "gateway.componentLabels" -}}
{{ include "gateway.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The selector of one component's pods. */}}
{{- define "gateway.componentSelectorLabels" -}}
{{ include "gateway.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image, tagged with image.tag or the chart's appVersion. */}}
{{- define "gateway.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The service account of serve and worker. */}}
{{- define "gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The ConfigMap holding providers.yaml. */}}
{{- define "gateway.providersConfigMap" -}}
{{- default (printf "%s-providers" (include "gateway.fullname" .)) .Values.providers.existingConfigMap }}
{{- end }}

{{/*
An environment variable read from a Secret: dict "name" "ENV" "ref" <value
with secretName and secretKey> "root" $. Nothing when secretKey is empty.
The Secret is existingSecret unless ref.secretName names another.
*/}}
{{- define "gateway.secretEnv" -}}
{{- if .ref.secretKey }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ default .root.Values.existingSecret .ref.secretName | required (printf "%s needs a Secret: set existingSecret or its secretName" .name) }}
      key: {{ .ref.secretKey }}
{{- end }}
{{- end }}

{{/*
The connection to Temporal and the database, which every command reads
(docs/operations.md, Configuration and Temporal connection).
*/}}
{{- define "gateway.connectionEnv" -}}
{{- include "gateway.secretEnv" (dict "name" "DATABASE_URL" "ref" .Values.database "root" .) }}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | required "temporal.address is required" | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
{{- include "gateway.secretEnv" (dict "name" "TEMPORAL_API_KEY" "ref" .Values.temporal.apiKey "root" .) }}
{{- with .Values.temporal.tls }}
{{- if .enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- end }}
{{- if .secretName }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/temporal-tls/{{ .certKey }}
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/temporal-tls/{{ .keyKey }}
{{- if .caKey }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/temporal-tls/{{ .caKey }}
{{- end }}
{{- end }}
{{- if .serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ .serverName | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment of serve and worker: the connection, the shared secrets and env, then the component's own env. */}}
{{- define "gateway.processEnv" -}}
{{- $root := .root }}
{{- include "gateway.connectionEnv" $root }}
- name: GATEWAY_DATABASE_MAX_CONNS
  value: {{ $root.Values.database.maxConns | quote }}
{{- include "gateway.secretEnv" (dict "name" "GATEWAY_PAYLOAD_KEYS" "ref" $root.Values.payloadKeys "root" $root) }}
{{- include "gateway.secretEnv" (dict "name" "GATEWAY_WEBHOOK_SIGNING_KEY" "ref" $root.Values.webhookSigningKey "root" $root) }}
{{- range $name, $value := merge (deepCopy .env) $root.Values.env }}
- name: {{ $name }}
  value: {{ include "gateway.envValue" $value }}
{{- end }}
{{- end }}

{{/* envFrom of serve and worker: the whole existingSecret, when asked. */}}
{{- define "gateway.envFrom" -}}
{{- if and .Values.envFromExistingSecret .Values.existingSecret }}
envFrom:
  - secretRef:
      name: {{ .Values.existingSecret }}
{{- end }}
{{- end }}

{{/* The volume of Temporal's client certificate, when there is one. */}}
{{- define "gateway.temporalTLSVolume" -}}
{{- with .Values.temporal.tls }}
{{- if .secretName }}
- name: temporal-tls
  secret:
    secretName: {{ .secretName }}
    items:
      - {key: {{ .certKey }}, path: {{ .certKey }}}
      - {key: {{ .keyKey }}, path: {{ .keyKey }}}
      {{- if .caKey }}
      - {key: {{ .caKey }}, path: {{ .caKey }}}
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gateway.temporalTLSVolumeMount" -}}
{{- if .Values.temporal.tls.secretName }}
- {name: temporal-tls, mountPath: /etc/temporal-tls, readOnly: true}
{{- end }}
{{- end }}

{{/* The pod-level settings every pod shares. */}}
{{- define "gateway.podSpecCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}

{{/* An env value as a quoted string: a whole number from the values (which
Helm reads as a float) as digits, not 1e+06. */}}
{{- define "gateway.envValue" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{ int64 . | toString | quote }}
{{- else -}}
{{ toString . | quote }}
{{- end -}}
{{- end }}
