{{/*
Labels of every object: the one deploy/ uses (also the pods' selector), and
Helm's usual ones (tests/chart ignores those when comparing with deploy/).
*/}}
{{- define "stateful-operator.labels" -}}
app.kubernetes.io/name: stateful-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "stateful-operator.selectorLabels" -}}
app.kubernetes.io/name: stateful-operator
{{- end }}

{{/* The scope, checked: cluster or namespace. */}}
{{- define "stateful-operator.scope" -}}
{{- if not (has .Values.scope (list "cluster" "namespace")) -}}
{{- fail (printf "scope must be cluster or namespace, not %q" (toString .Values.scope)) -}}
{{- end -}}
{{- .Values.scope -}}
{{- end }}

{{/* "true" when the replicas elect a leader (leaderElection.enabled: auto|true|false). */}}
{{- define "stateful-operator.leaderElect" -}}
{{- $mode := toString .Values.leaderElection.enabled -}}
{{- if eq $mode "auto" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end -}}
{{- else if eq $mode "true" -}}
true
{{- else if ne $mode "false" -}}
{{- fail (printf "leaderElection.enabled must be auto, true or false, not %q" $mode) -}}
{{- end -}}
{{- end }}

{{/* "true" when /metrics must be reachable from outside the pod. */}}
{{- define "stateful-operator.metricsExposed" -}}
{{- $m := .Values.metrics -}}
{{- if or $m.service.enabled $m.serviceMonitor.enabled $m.podMonitor.enabled }}true{{ end -}}
{{- end }}

{{/* The operator's ServiceAccount as a binding subject. */}}
{{- define "stateful-operator.subject" -}}
- kind: ServiceAccount
  name: stateful-operator
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
The operator's rules: the same in the ClusterRole (scope cluster) and the
Role (scope namespace) but for the cluster-scoped resources a Role cannot
grant, and what only resize by copy (which needs those) uses. Least
privilege, exactly what the code uses; the reasons are in
deploy/rbac/cluster/clusterrole.yaml.
*/}}
{{- define "stateful-operator.rules" -}}
{{- $cluster := eq (include "stateful-operator.scope" .) "cluster" -}}
- apiGroups: ["stateful-operator.io"]
  resources: ["statefulclusters"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["stateful-operator.io"]
  resources: ["statefulclusters/status"]
  verbs: ["update", "patch"]
- apiGroups: ["stateful-operator.io"]
  resources: ["statefulclusters/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["list", "watch", "create", "delete", "patch"]
{{- if $cluster }}
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["list", "watch"]
{{- end }}
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "patch", "create", "delete"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "patch", "create", "delete"]
{{- if $cluster }}
- apiGroups: [""]
  resources: ["persistentvolumes"]
  verbs: ["get", "list", "watch", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list", "watch", "create", "delete"]
{{- end }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete"]
{{- /* patch: the saved StatefulSet's seals and the record of its re-create; a copy's progress on it. */}}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch", "create", "patch", "delete"]
{{- if $cluster }}
- apiGroups: ["storage.k8s.io"]
  resources: ["storageclasses"]
  verbs: ["list", "watch"]
{{- end }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end }}

{{/*
The key that seals the operator's state annotations: one Secret in the
release's namespace (templates/secrets.yaml, installed empty), read and
filled by name. No create: RBAC cannot limit create to a name.
*/}}
{{- define "stateful-operator.stateKeyRules" -}}
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: ["stateful-operator-state-key"]
  verbs: ["get", "update"]
{{- end }}
