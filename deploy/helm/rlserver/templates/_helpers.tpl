{{/* rlserver.name is the chart's name, or nameOverride. */}}
{{- define "rlserver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* rlserver.fullname names the objects: fullnameOverride, else release-name (the
release's name alone when it already contains the chart's). Kept to 52 characters:
the Sentinels' StatefulSet adds "-sentinel" and its pods an ordinal. */}}
{{- define "rlserver.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "rlserver.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* rlserver.selectorLabels select rlserver's pods (component server); the
Sentinels' are the same with component sentinel. */}}
{{- define "rlserver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rlserver.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rlserver.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rlserver.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "rlserver.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "rlserver.limitsConfigMap" -}}
{{- .Values.existingLimitsConfigMap | default (printf "%s-limits" (include "rlserver.fullname" .)) -}}
{{- end -}}

{{/* rlserver.validate fails the render on values the schema cannot rule out. */}}
{{- define "rlserver.validate" -}}
{{- $modes := list "standalone" "sentinel" "rls" "envoyGateway" -}}
{{- if not (has .Values.mode $modes) -}}
{{- fail (printf "mode %q: want one of standalone, sentinel, rls, envoyGateway" (toString .Values.mode)) -}}
{{- end -}}
{{- if lt (int .Values.replicas) 1 -}}
{{- fail (printf "replicas %v: sentinel mode needs at least one replica of the primary" .Values.replicas) -}}
{{- end -}}
{{- if and (ne .Values.mode "envoyGateway") (not .Values.existingLimitsConfigMap) (not .Values.limits) -}}
{{- fail (printf "mode %s: no policies: set limits or existingLimitsConfigMap" .Values.mode) -}}
{{- end -}}
{{- if and .Values.tracing.enabled (not .Values.tracing.endpoint) -}}
{{- fail "tracing.enabled needs tracing.endpoint, the OTLP collector's URL" -}}
{{- end -}}
{{- $rate := float64 .Values.tracing.samplingRate -}}
{{- if or (lt $rate 0.0) (gt $rate 1.0) -}}
{{- fail (printf "tracing.samplingRate %v: want 0 to 1" .Values.tracing.samplingRate) -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "serviceMonitor.enabled needs metrics.enabled: there is no /metrics to scrape" -}}
{{- end -}}
{{- end -}}

{{/* rlserver.http reports "true" when the HTTP front listens: always in rls and
envoyGateway modes (their probes ask /healthcheck), else as http.enabled says. */}}
{{- define "rlserver.http" -}}
{{- if or (eq .Values.mode "rls") (eq .Values.mode "envoyGateway") .Values.http.enabled -}}true{{- end -}}
{{- end -}}

{{/* rlserver.podSecurityContext: the image's user, 65532 (Containerfile's USER). */}}
{{- define "rlserver.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "rlserver.securityContext" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* rlserver.command is the rlserver container's command in every mode but
envoyGateway: the image's entrypoint with the chart's listeners (a config file first
in sentinel mode, which Sentinel's CONFIG REWRITE keeps the role in). */}}
{{- define "rlserver.command" -}}
- /bin/rlserver
{{- if eq .Values.mode "sentinel" }}
- /var/lib/rlserver/rlserver.conf
{{- end }}
- -addr
- {{ if eq .Values.mode "rls" }}127.0.0.1:6380{{ else }}0.0.0.0:6380{{ end }}
- -rls-addr
- 0.0.0.0:8081
{{- if include "rlserver.http" . }}
- -http-addr
- 0.0.0.0:8080
{{- end }}
{{- if .Values.metrics.enabled }}
- -metrics-addr
- 0.0.0.0:9090
{{- end }}
- -limits
- /etc/rlserver/limits
{{- if or .Values.snapshot.enabled (eq .Values.mode "sentinel") }}
- -snapshot
- /var/lib/rlserver/rlserver.snap
{{- end }}
- -loglevel
- {{ .Values.logLevel }}
{{- if .Values.rls.responseHeaders }}
- -rls-headers
- "true"
{{- end }}
{{- if .Values.rls.shadowMode }}
- -rls-shadow-mode
- "true"
{{- end }}
{{- end -}}

{{/* rlserver.envoyGatewayEnv is the environment Envoy Gateway gives its rate limit
container, less what rlserver ignores (REDIS_*, RUNTIME_*, USE_STATSD): docs/gateway.md
lists these names and the chart's test holds the two equal. */}}
{{- define "rlserver.envoyGatewayEnv" -}}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: CONFIG_TYPE
  value: GRPC_XDS_SOTW
- name: CONFIG_GRPC_XDS_SERVER_URL
  value: {{ .Values.envoyGateway.xdsServer | quote }}
- name: CONFIG_GRPC_XDS_NODE_ID
  value: {{ .Values.envoyGateway.nodeId | quote }}
- name: CONFIG_GRPC_XDS_SERVER_USE_TLS
  value: "true"
- name: CONFIG_GRPC_XDS_CLIENT_TLS_CERT
  value: /certs/tls.crt
- name: CONFIG_GRPC_XDS_CLIENT_TLS_KEY
  value: /certs/tls.key
- name: CONFIG_GRPC_XDS_SERVER_TLS_CACERT
  value: /certs/ca.crt
- name: GRPC_SERVER_USE_TLS
  value: "true"
- name: GRPC_SERVER_TLS_CERT
  value: /certs/tls.crt
- name: GRPC_SERVER_TLS_KEY
  value: /certs/tls.key
- name: GRPC_SERVER_TLS_CA_CERT
  value: /certs/ca.crt
- name: FORCE_START_WITHOUT_INITIAL_CONFIG
  value: {{ .Values.envoyGateway.forceStart | quote }}
- name: USE_PROMETHEUS
  value: {{ .Values.metrics.enabled | quote }}
- name: PROMETHEUS_ADDR
  value: ":19001"
{{- end -}}

{{/* rlserver.tracingEnv is the environment of tracing, when enabled: envoyproxy/ratelimit's
TRACING_* variables, which rlserver reads in every mode, and the SDK's endpoint. */}}
{{- define "rlserver.tracingEnv" -}}
{{- if .Values.tracing.enabled }}
- name: TRACING_ENABLED
  value: "true"
- name: TRACING_EXPORTER_PROTOCOL
  value: {{ .Values.tracing.protocol | quote }}
- name: TRACING_SAMPLING_RATE
  value: {{ .Values.tracing.samplingRate | quote }}
- name: TRACING_SERVICE_NAME
  value: {{ .Values.tracing.serviceName | quote }}
{{- with .Values.tracing.serviceNamespace }}
- name: TRACING_SERVICE_NAMESPACE
  value: {{ . | quote }}
{{- end }}
- name: TRACING_SERVICE_INSTANCE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .Values.tracing.endpoint | quote }}
{{- end }}
{{- end -}}

{{/* rlserver.ports are the rlserver container's ports: those it listens on. */}}
{{- define "rlserver.ports" -}}
{{- if ne .Values.mode "envoyGateway" -}}
{{- if ne .Values.mode "rls" }}
- name: resp
  containerPort: 6380
{{- end }}
- name: grpc
  containerPort: 8081
{{- if include "rlserver.http" . }}
- name: http
  containerPort: 8080
{{- end }}
{{- if .Values.metrics.enabled }}
- name: metrics
  containerPort: 9090
{{- end }}
{{- else }}
- name: grpc
  containerPort: 8081
- name: http
  containerPort: 8080
{{- if .Values.metrics.enabled }}
- name: metrics
  containerPort: 19001
{{- end }}
{{- end }}
{{- end -}}

{{/* rlserver.probes: readiness on /healthcheck when the HTTP front is on (OK on a
primary only, so a Service follows the primary), else on the RESP port; liveness on
the RESP port where there is one (a replica is alive though never ready), else on
/healthcheck; envoyGateway adds Envoy Gateway's startup probe, for the wait for the
first policy. */}}
{{- define "rlserver.probes" -}}
{{- $http := include "rlserver.http" . -}}
{{- $resp := and (ne .Values.mode "rls") (ne .Values.mode "envoyGateway") -}}
{{- if eq .Values.mode "envoyGateway" }}
startupProbe:
  httpGet:
    path: /healthcheck
    port: http
  periodSeconds: 5
  failureThreshold: 24
{{- end }}
readinessProbe:
{{- if $http }}
  httpGet:
    path: /healthcheck
    port: http
{{- else }}
  tcpSocket:
    port: resp
{{- end }}
  periodSeconds: {{ if eq .Values.mode "sentinel" }}1{{ else }}2{{ end }}
  failureThreshold: {{ if eq .Values.mode "sentinel" }}1{{ else }}2{{ end }}
livenessProbe:
{{- if $resp }}
  tcpSocket:
    port: resp
{{- else }}
  httpGet:
    path: /healthcheck
    port: http
{{- end }}
  initialDelaySeconds: 5
  periodSeconds: 10
  failureThreshold: 3
{{- end -}}

{{/* rlserver.podExtras: the scheduling values, as given. */}}
{{- define "rlserver.podExtras" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
