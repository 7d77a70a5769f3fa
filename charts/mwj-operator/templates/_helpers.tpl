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

{{/* The status endpoint's Service, which the chiefs of jobs dial by its
in-cluster name: the operator gets that name as --status-url and puts it in
the SANs of the serving certificate it issues itself, so the two must be
one string, written here once. <svc>.<ns>.svc, with no cluster domain:
it resolves through the pod's DNS search path on any cluster. */}}
{{- define "mwj-operator.statusService" -}}
{{- printf "%s-status" (include "mwj-operator.fullname" .) -}}
{{- end -}}

{{- define "mwj-operator.statusURL" -}}
{{- printf "https://%s.%s.svc:%d" (include "mwj-operator.statusService" .) .Release.Namespace (int .Values.status.port) -}}
{{- end -}}

{{/* The Secret holding the status CA: the one named in status.ca.secretName,
else the chart's own (status-ca.yaml). */}}
{{- define "mwj-operator.statusCASecret" -}}
{{- default (printf "%s-status-ca" (include "mwj-operator.fullname" .)) .Values.status.ca.secretName -}}
{{- end -}}

{{/* Where the Deployment mounts that Secret, as --status-ca-dir. */}}
{{- define "mwj-operator.statusCADir" -}}
/etc/mwj/status-ca
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
{{- if .Values.status.enabled -}}
{{- if or (eq (int .Values.status.port) (int .Values.health.port)) (and .Values.metrics.enabled (eq (int .Values.status.port) (int .Values.metrics.port))) -}}
{{- fail "status.port must differ from metrics.port and health.port" -}}
{{- end -}}
{{- end -}}
{{- range .Values.extraArgs -}}
{{- /* Flags the chart sets from its values: the RBAC, the probes and the
status Service follow them. */ -}}
{{- if regexMatch "^--(namespace|leader-elect|leader-election-namespace|leader-election-id|metrics-addr|health-addr|status-url|status-addr|status-audience|status-ca-dir|kubeconfig|context)(=|$)" . -}}
{{- fail (printf "extraArgs: %s is set from the chart's values (watchNamespace, leaderElection, metrics, health, status), not here" .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- end -}}
