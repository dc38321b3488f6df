{{/* Names: <release>-sluice unless the release name already says sluice; DNS labels stay under 63. */}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "sluice.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: include "sluice.selector" (list . "dataplane") */}}
{{- define "sluice.selector" -}}
{{- $ctx := index . 0 -}}
app.kubernetes.io/name: {{ include "sluice.name" $ctx }}
app.kubernetes.io/instance: {{ $ctx.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "sluice.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "sluice.standalone" -}}
{{- if eq .Values.mode "standalone" }}true{{ end -}}
{{- end -}}

{{/* The admin token Secret: the one named in values, else the chart's generated one. */}}
{{- define "sluice.adminTokenSecret" -}}
{{- default (printf "%s-admin-token" (include "sluice.fullname" .)) .Values.admin.existingSecret -}}
{{- end -}}

{{/* The Secret holding the Redis URL: the one named in values, else the bundled Redis's. */}}
{{- define "sluice.redisSecret" -}}
{{- if .Values.redis.existingSecret -}}
{{- .Values.redis.existingSecret -}}
{{- else if .Values.redis.bundled.enabled -}}
{{- printf "%s-redis-url" (include "sluice.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "sluice.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}url{{ end -}}
{{- end -}}

{{/*
Watched namespaces as a JSON list; [] means every namespace (ClusterRoles then).
Unset: the release namespace only.
*/}}
{{- define "sluice.watchNamespaces" -}}
{{- if hasKey .Values "watchNamespaces" -}}
{{- .Values.watchNamespaces | default list | uniq | toJson -}}
{{- else -}}
{{- list .Release.Namespace | toJson -}}
{{- end -}}
{{- end -}}

{{/*
A memory quantity in MiB: "512Mi", "1Gi", "1G", "500M", or bytes. Fails on anything else,
so a limit the heap cannot be sized from is an install-time error, not an OOM-kill later.
*/}}
{{- define "sluice.mebibytes" -}}
{{- $q := toString . -}}
{{- if hasSuffix "Gi" $q -}}{{ mul (trimSuffix "Gi" $q | atoi) 1024 }}
{{- else if hasSuffix "Mi" $q -}}{{ trimSuffix "Mi" $q | atoi }}
{{- else if hasSuffix "G" $q -}}{{ div (mul (trimSuffix "G" $q | atoi) 1000000000) 1048576 }}
{{- else if hasSuffix "M" $q -}}{{ div (mul (trimSuffix "M" $q | atoi) 1000000) 1048576 }}
{{- else if regexMatch "^[0-9]+$" $q -}}{{ div ($q | atoi) 1048576 }}
{{- else -}}{{ fail (printf "resources.limits.memory %q: use Mi, Gi, M, G or bytes" $q) }}
{{- end -}}
{{- end -}}

{{/*
NODE_OPTIONS for a container: the old-generation heap at heapPercent of the memory limit
(the rest is for new space, code, buffers and sockets outside the heap), split across
--workers processes, which each have their own heap. Args: list $resources $heapPercent $workers $extra.
*/}}
{{- define "sluice.nodeOptions" -}}
{{- $limit := dig "limits" "memory" "" (index . 0) -}}
{{- $opts := list -}}
{{- if $limit -}}
{{- $heap := div (mul (include "sluice.mebibytes" $limit | atoi) (index . 1)) (mul 100 (index . 2)) -}}
{{- $opts = append $opts (printf "--max-old-space-size=%d" $heap) -}}
{{- end -}}
{{- $opts = concat $opts (index . 3) -}}
{{- join " " $opts -}}
{{- end -}}

{{/*
The controller's NODE_OPTIONS: the old generation gets what the memory limit leaves after
heapReserveMiB (the Node binary's resident pages, ~52 MiB; the young generation; buffers and
native memory), not a share of the limit: a cap the pod can reach before the kernel kills it.
V8 sets each collection's next limit at most halfway from the live heap to the cap, and within
an eighth of the cap collects in memory-saving mode, so a reachable cap keeps the peak under
the limit. 5,000 routes in 192Mi on a quiet machine: a 144 MB cap (75 % of it) peaked at
192-194 MiB RSS, 96 MB (the default reserve) at 173, 80 MB at 159-163, each collecting more
often (a one-route edit's median: 836-913, 906, 1,021-1,144 ms). Arg: the controller's values.
*/}}
{{- define "sluice.controllerHeap" -}}
{{- $limit := dig "limits" "memory" "" .resources -}}
{{- if $limit -}}
{{- $mib := include "sluice.mebibytes" $limit | atoi -}}
{{- $heap := sub $mib (int .heapReserveMiB) -}}
{{- if lt $heap 48 -}}
{{- fail (printf "controller.resources.limits.memory %s leaves %d MiB of heap after controller.heapReserveMiB (%d); at least 48 are needed: raise the limit" $limit $heap (int .heapReserveMiB)) -}}
{{- end -}}
{{- printf "--max-old-space-size=%d" $heap -}}
{{- end -}}
{{- end -}}

{{/* The hardened container securityContext (restricted Pod Security Standard). */}}
{{- define "sluice.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "sluice.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.podSecurity.runAsUser }}
runAsGroup: {{ .Values.podSecurity.runAsGroup }}
fsGroup: {{ .Values.podSecurity.runAsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The rules of the watched namespaces (see controller/source/api-access.ts). */}}
{{- define "sluice.watchedRules" -}}
- apiGroups: [sluice.dev]
  resources: [gatewayroutes, gatewayplugins]
  verbs: [list, watch]
# Conditions (Accepted, ResolvedRefs, Programmed): written by the leader.
- apiGroups: [sluice.dev]
  resources: [gatewayroutes/status, gatewayplugins/status]
  verbs: [patch]
# Secrets plugins reference (secretKeyRef), Services routes send to (backendRefs).
- apiGroups: [""]
  resources: [secrets, services]
  verbs: [list, watch]
# The ready endpoints of those Services, which the data plane balances over.
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
# An Event on a route or plugin (and a Gateway, HTTPRoute or GRPCRoute, an Ingress) when one of
# its conditions changes; patch raises the count
# of the same Event seen again (client-go's correlator does the same).
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- if .Values.ingress.enabled }}
# Ingresses (networking.k8s.io/v1) of Sluice's classes, and their status.loadBalancer (the leader).
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [list, watch]
- apiGroups: [networking.k8s.io]
  resources: [ingresses/status]
  verbs: [patch]
{{- end }}
{{- if .Values.gatewayAPI.enabled }}
# Gateway API: the Gateways, HTTPRoutes and ReferenceGrants of the watched namespaces, their
# status (written by the leader; an HTTPRoute's with update, so that the parents other
# controllers wrote are kept), and each Gateway's own Service (its address; the leader).
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways, httproutes, grpcroutes, referencegrants]
  verbs: [list, watch]
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways/status]
  verbs: [patch]
- apiGroups: [gateway.networking.k8s.io]
  resources: [httproutes/status, grpcroutes/status]
  verbs: [update]
- apiGroups: [""]
  resources: [services]
  verbs: [create, update, delete]
# The CA bundles (ca.crt) Gateways validate client certificates with (spec.tls.frontend):
# watched, so a rotated CA is served at once; only the ConfigMaps a Gateway names are read.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [list, watch]
{{- end }}
{{- end -}}

{{/* Pod annotations: prometheus.io/* for the metrics port (metrics.podAnnotations), then the extra ones. Args: list $ $port $extra [$scheme] */}}
{{- define "sluice.podAnnotations" -}}
{{- $ctx := index . 0 -}}
{{- $out := dict -}}
{{- if $ctx.Values.metrics.podAnnotations -}}
{{- $out = dict "prometheus.io/scrape" "true" "prometheus.io/port" (toString (index . 1)) "prometheus.io/path" "/metrics" -}}
{{- if gt (len .) 3 -}}{{- if eq (index . 3) "https" -}}
{{- $_ := set $out "prometheus.io/scheme" "https" -}}
{{- end -}}{{- end -}}
{{- end -}}
{{- $out = merge (deepCopy (index . 2)) $out -}}
{{- if $out }}{{ toYaml $out }}{{ end -}}
{{- end -}}

{{/* A component's ServiceAccount: serviceAccount.name, else <fullname>-<component>. Args: list $ "controller" */}}
{{- define "sluice.serviceAccountName" -}}
{{- $ctx := index . 0 -}}
{{- $sa := (index $ctx.Values (index . 1)).serviceAccount -}}
{{- default (printf "%s-%s" (include "sluice.fullname" $ctx) (index . 1)) $sa.name -}}
{{- end -}}

{{/*
A component's topologySpreadConstraints, when its values give some: each entry without a
labelSelector gets the component's pods. Args: list $ "dataplane"
*/}}
{{- define "sluice.topologySpreadConstraints" -}}
{{- $ctx := index . 0 -}}
{{- $component := index . 1 -}}
{{- $selector := include "sluice.selector" (list $ctx $component) | fromYaml -}}
{{- $out := list -}}
{{- range (index $ctx.Values $component).topologySpreadConstraints -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* startupProbe of a component on /healthz of its port (liveness waits for it). Args: list $values-of-component $port $scheme */}}
{{- define "sluice.startupProbe" -}}
{{- $p := (index . 0).startupProbe -}}
{{- if $p.enabled -}}
startupProbe:
  httpGet: { path: /healthz, port: {{ index . 1 }}, scheme: {{ index . 2 }} }
  periodSeconds: {{ $p.periodSeconds }}
  failureThreshold: {{ $p.failureThreshold }}
{{- end -}}
{{- end -}}

{{/*
The NetworkPolicy peers that may scrape the metrics ports: the pods of
networkPolicy.metricsNamespace (narrowed to metricsPodLabels), then metricsFrom. A YAML list.
*/}}
{{- define "sluice.metricsPeers" -}}
{{- $np := .Values.networkPolicy -}}
{{- $peers := list -}}
{{- if $np.metricsNamespace -}}
{{- $peer := dict "namespaceSelector" (dict "matchLabels" (dict "kubernetes.io/metadata.name" $np.metricsNamespace)) -}}
{{- with $np.metricsPodLabels -}}
{{- $_ := set $peer "podSelector" (dict "matchLabels" .) -}}
{{- end -}}
{{- $peers = append $peers $peer -}}
{{- end -}}
{{- toYaml (concat $peers $np.metricsFrom) -}}
{{- end -}}

{{/* Admin TLS: the Secret with tls.crt, tls.key and ca.crt ("" when off), and the name the certificate is for. */}}
{{- define "sluice.adminTlsSecret" -}}
{{- $t := .Values.admin.tls -}}
{{- if $t.enabled -}}
{{- if eq $t.source "existingSecret" -}}
{{- required "admin.tls.existingSecret: name the Secret (tls.crt, tls.key, ca.crt) when admin.tls.source is existingSecret" $t.existingSecret -}}
{{- else -}}
{{- printf "%s-admin-tls" (include "sluice.fullname" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The scrape endpoint's TLS for the data plane's admin port (ServiceMonitor, PodMonitor): the chart's CA, the certificate's name. */}}
{{- define "sluice.adminScrapeTls" -}}
{{- with include "sluice.adminTlsSecret" . -}}
scheme: https
tlsConfig:
  ca:
    secret: { name: {{ . }}, key: ca.crt }
  serverName: {{ include "sluice.adminServerName" $ | quote }}
{{- end -}}
{{- end -}}

{{- define "sluice.adminServerName" -}}
{{- default (printf "%s-admin.%s.svc" (include "sluice.fullname" .) .Release.Namespace) .Values.admin.tls.serverName -}}
{{- end -}}
