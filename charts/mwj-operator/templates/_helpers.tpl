{{/* The release's objects are named after it: "mwj-operator" for a release
of that name, "<release>-mwj-operator" otherwise, cut to 63 characters. */}}
{{- define "mwj-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mwj-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mwj-operator.labels" -}}
{{ include "mwj-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "mwj-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mwj-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* "true": the replicas always elect a leader through the Lease, however
many there are, because only the Lease keeps two operators from acting at
once: during a rollout, when a replica is added, or when a pod on a node cut
off from the cluster is replaced while it still runs. "auto" (the default)
and true both mean on; false was removed, and fails with the reason. */}}
{{- define "mwj-operator.leaderElect" -}}
{{- $e := toString .Values.leaderElection.enabled -}}
{{- if or (eq $e "auto") (eq $e "true") -}}
true
{{- else if eq $e "false" -}}
{{- fail "leaderElection.enabled=false is no longer possible: the operator always elects a leader in a cluster, so that two replicas never act at once (during an upgrade, a scale-up, or while a pod on an unreachable node still runs); remove the value" -}}
{{- else -}}
{{- fail (printf "leaderElection.enabled: %q is not auto or true" $e) -}}
{{- end -}}
{{- end -}}

{{/* Checks of values no schema can express; included by the Deployment. */}}
{{- define "mwj-operator.validate" -}}
{{- if and .Values.pdb.enabled (not .Values.pdb.maxUnavailable) (ge (int .Values.pdb.minAvailable) (int .Values.replicas)) -}}
{{- fail (printf "pdb.minAvailable %d with %d replica(s) would block every node drain: raise replicas, or set pdb.maxUnavailable" (int .Values.pdb.minAvailable) (int .Values.replicas)) -}}
{{- end -}}
{{- if and .Values.metrics.enabled (eq (int .Values.metrics.port) (int .Values.health.port)) -}}
{{- fail "metrics.port and health.port must differ" -}}
{{- end -}}
{{- range .Values.extraArgs -}}
{{- /* Flags the chart sets from its values: the RBAC and the probes follow them. */ -}}
{{- if regexMatch "^--(namespace|leader-elect|leader-election-namespace|leader-election-id|metrics-addr|health-addr|kubeconfig|context)(=|$)" . -}}
{{- fail (printf "extraArgs: %s is set from the chart's values (watchNamespace, leaderElection, metrics, health), not here" .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- end -}}
