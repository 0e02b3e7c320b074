{{/*
Names. The objects the operator finds by a fixed name keep it whatever the
values say (src/webhook/webhook.h, state_seal.h, main.c): the Lease
(stateful-operator), the Secrets stateful-operator-state-key and
stateful-operator-webhook-cert, the MutatingWebhookConfiguration
stateful-operator and its Service stateful-operator-webhook. Every other
object is named by fullname: fullnameOverride, else nameOverride, else the
chart's name. The release name is not put in front as many charts do: those
fixed names (some cluster-scoped) allow one release per cluster anyway, and
the defaults then name everything as deploy/ does.
*/}}
{{- define "stateful-operator.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "stateful-operator.fullname" -}}
{{- .Values.fullnameOverride | default (include "stateful-operator.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* The operator's ServiceAccount: serviceAccount.name, else fullname (made only with serviceAccount.create). */}}
{{- define "stateful-operator.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "stateful-operator.fullname" .) -}}
{{- end }}

{{/*
The image reference: repository@digest when image.digest is set (the tag is
then ignored: a digest names one image), else repository:tag (tag empty:
the chart's appVersion).
*/}}
{{- define "stateful-operator.image" -}}
{{- with .Values.image -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository (.tag | default $.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
Labels of every object: the recommended app.kubernetes.io set and
helm.sh/chart. Called with (list $ "component"). tests/chart ignores all
but app.kubernetes.io/name when comparing with deploy/.
*/}}
{{- define "stateful-operator.labels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "stateful-operator.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ index . 1 }}
app.kubernetes.io/part-of: stateful-operator
app.kubernetes.io/managed-by: {{ $.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $.Chart.Name $.Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The pods' selector: app.kubernetes.io/name alone, as deploy/ (a
Deployment's selector cannot change, so adding the instance label would
break upgrades of existing releases).
*/}}
{{- define "stateful-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stateful-operator.name" . }}
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
{{- if gt (int .Values.replicaCount) 1 }}true{{ end -}}
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
  name: {{ include "stateful-operator.serviceAccountName" . }}
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
- apiGroups: [""]
  resources: ["namespaces"]
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

{{/* "true" when the PodDisruptionBudget is rendered (podDisruptionBudget.enabled: auto = replicaCount > 1). */}}
{{- define "stateful-operator.pdb" -}}
{{- $mode := toString .Values.podDisruptionBudget.enabled -}}
{{- if eq $mode "auto" -}}
{{- if gt (int .Values.replicaCount) 1 }}true{{ end -}}
{{- else if eq $mode "true" -}}
true
{{- end -}}
{{- end }}

{{/*
(list $ apiVersion kind name): "true" when the chart may render this object
kept on uninstall (helm.sh/resource-policy: keep): it is not there, or it is
this release's. One that is there but not this release's (kept from a
release of another name, applied from deploy/, made before 0.2) is left out
of the release, since Helm would refuse to take it over; it is used as it
is. helm template (no cluster) renders it.
*/}}
{{- define "stateful-operator.mayOwn" -}}
{{- $ := index . 0 -}}
{{- $kind := index . 2 -}}
{{- $ns := ternary "" $.Release.Namespace (eq $kind "CustomResourceDefinition") -}}
{{- $live := lookup (index . 1) $kind $ns (index . 3) -}}
{{- $ann := dig "metadata" "annotations" dict $live -}}
{{- if or (not $live) (and (eq (get $ann "meta.helm.sh/release-name") $.Release.Name) (eq (get $ann "meta.helm.sh/release-namespace") $.Release.Namespace)) -}}
true
{{- end -}}
{{- end }}

{{/*
Where the webhook's certificate comes from: "operator" (the default: made
and renewed by the operator in Secret stateful-operator-webhook-cert, the CA
written into the caBundle), "cert-manager" (webhook.certManager.enabled) or
"secret" (webhook.existingSecret). In the last two the Secret is mounted at
--webhook-cert-dir and the operator writes neither. Inconsistent values are
refused here, with what to change.
*/}}
{{- define "stateful-operator.webhookCert" -}}
{{- with .Values.webhook -}}
{{- if and .certManager.enabled .existingSecret -}}
{{- fail "webhook.certManager.enabled and webhook.existingSecret are two ways to give the webhook's certificate: set one of them" -}}
{{- else if .certManager.enabled -}}
{{- if .caBundle -}}
{{- fail "webhook.caBundle goes with webhook.existingSecret: with webhook.certManager.enabled, cert-manager's CA injector writes the caBundle" -}}
{{- end -}}
{{- if and (eq .certManager.issuerRef.kind "ClusterIssuer") (not .certManager.issuerRef.name) -}}
{{- fail "webhook.certManager.issuerRef.kind ClusterIssuer needs webhook.certManager.issuerRef.name (empty name: the chart's self-signed Issuer)" -}}
{{- end -}}
cert-manager
{{- else if .existingSecret -}}
{{- if not .caBundle -}}
{{- fail "webhook.existingSecret needs webhook.caBundle: the base64 of the PEM CA certificate that signed it (the API server checks the webhook's certificate against it)" -}}
{{- end -}}
secret
{{- else -}}
{{- if .caBundle -}}
{{- fail "webhook.caBundle needs webhook.existingSecret (or drop it: by default the operator makes its certificate and writes the caBundle itself)" -}}
{{- end -}}
operator
{{- end -}}
{{- end -}}
{{- end }}

{{/* The Secret mounted at --webhook-cert-dir when the certificate is not the operator's own. */}}
{{- define "stateful-operator.webhookCertSecret" -}}
{{- .Values.webhook.existingSecret | default (printf "%s-webhook-tls" (include "stateful-operator.fullname" .)) -}}
{{- end }}
