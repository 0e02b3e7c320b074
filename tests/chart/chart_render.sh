#!/usr/bin/env bash
# Checks charts/stateful-operator without a cluster (ctest label "chart"):
#   - helm lint, in both scopes; bad values refused with a message naming them;
#   - files/crds holds exactly deploy/crds' CRDs, byte for byte (no crds/);
#   - helm template renders the same objects as kubectl kustomize of the
#     matching overlay, for the same settings: the defaults = deploy/overlays/
#     cluster, scope=namespace = deploy/overlays/namespace, and changed values
#     (replicas 1: no --leader-elect; image, resources; webhook off) against
#     a scratch overlay that changes the same fields; webhook.certManager.enabled
#     = either overlay with the component deploy/webhook/cert-manager;
#   - the optional objects: metrics Service, ServiceMonitor, PodMonitor (and
#     /metrics then on all interfaces with a containerPort), PrometheusRule
#     (the groups of files/alerts.rules.yaml, none when that file is absent);
#   - every value: labels (the recommended set on every object), fullnameOverride
#     and nameOverride (the names the operator looks up stay fixed), the
#     ServiceAccount, image.digest, the HA settings (strategy, PodDisruptionBudget
#     when replicaCount > 1), scheduling and pod values, strict security contexts,
#     the operator's flags, extraArgs/extraEnv/volumes, the webhook's failurePolicy
#     and timeoutSeconds, its certificate from cert-manager or a given Secret
#     (mounted for --webhook-cert-dir, the caBundle injected or given, no rights
#     on the Secret or the configuration; inconsistent values refused), the CRDs (kept on uninstall), the helm test Pod,
#     NOTES.txt; the schema refusing bad ones;
#   - the operator's two Secrets, rendered empty (no data, no type) and kept
#     on uninstall; the NetworkPolicies: the probe and webhook ports from
#     anywhere, the metrics port only from metrics.allowFrom (required when
#     /metrics is exposed), none with networkPolicy.enabled=false.
# Compared after this normalisation (jq), and nothing else ignored:
#   - objects sorted by kind/namespace/name (the order of a rendering is not
#     what gets applied);
#   - the labels Helm adds (helm.sh/chart, app.kubernetes.io/managed-by,
#     instance, version, component, part-of) dropped, on objects and pod
#     templates: they describe the release, not the operator; the selectors
#     do not use them (checked on their own below);
#   - helm test hooks left out; the chart's PodDisruptionBudget and Deployment
#     strategy compared only where the overlay has them (checked below);
#   - the annotation helm.sh/resource-policy dropped (it tells Helm, not the
#     cluster, what to do; checked on its own below);
#   - the Namespace object left out of the overlays' side: Helm creates the
#     release's namespace (helm install --create-namespace) and a chart must
#     not own it (uninstalling would delete everything in it).
# helm and kubectl come from the test bed's cache (scripts/testbed-build):
# missing tools fail the test, they do not skip it.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHART=$REPO/charts/stateful-operator
NS=stateful-operator-system
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=../lib/steps.sh
source "$REPO/tests/lib/steps.sh"

step "helm and kubectl from the test bed's cache"
BIN=$("$REPO/scripts/testbed-build") || fail "scripts/testbed-build failed"
HELM=$BIN/helm
KUBECTL=$BIN/kubectl
[ -x "$HELM" ] || fail "no helm in $BIN"
[ -x "$KUBECTL" ] || fail "no kubectl in $BIN"
# Who may scrape /metrics once it is exposed (metrics.allowFrom).
SCRAPER='metrics.allowFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}},"podSelector":{"matchLabels":{"app.kubernetes.io/name":"prometheus"}}}]'
# Nothing here talks to a cluster; helm keeps its state in the scratch dir.
export KUBECONFIG=/dev/null HELM_CACHE_HOME=$TMP/helm HELM_CONFIG_HOME=$TMP/helm HELM_DATA_HOME=$TMP/helm

# YAML stream on stdin -> sorted, normalised JSON array (see the top).
normalise() {
	"$KUBECTL" label --local -f - -o json chart-render-check- |
		jq -S -s 'def helm_labels: del(."helm.sh/chart", ."app.kubernetes.io/managed-by", ."app.kubernetes.io/instance",
				."app.kubernetes.io/version", ."app.kubernetes.io/component", ."app.kubernetes.io/part-of");
			map(if .kind == "List" then .items[] else . end)
			| map(select(.kind != "Namespace" and (.metadata.annotations."helm.sh/hook" // "") == "")
				| if .metadata.labels then .metadata.labels |= helm_labels else . end
				| if .spec.template.metadata.labels then .spec.template.metadata.labels |= helm_labels else . end
				| if .metadata.annotations then .metadata.annotations |= del(."helm.sh/resource-policy")
					| if .metadata.annotations == {} then del(.metadata.annotations) else . end
					else . end)
			| sort_by(.kind, .metadata.namespace // "", .metadata.name)'
}
chart() { # helm template flags... -> normalised JSON on stdout
	"$HELM" template stateful-operator "$CHART" -n "$NS" "$@" | normalise
}
overlay() { # kustomization dir -> normalised JSON on stdout
	"$KUBECTL" kustomize "$1" | normalise
}
same() { # name chart.json overlay.json
	# The chart's HA settings (a PodDisruptionBudget, the Deployment's
	# strategy) are compared only where the overlay has them too; they are
	# checked on their own below.
	jq -S --slurpfile o "$3" '($o[0] | any(.kind == "PodDisruptionBudget")) as $pdb
		| ($o[0] | any(.kind == "Deployment" and (.spec | has("strategy")))) as $strategy
		| map(select($pdb or .kind != "PodDisruptionBudget")
			| if .kind == "Deployment" and ($strategy | not) then del(.spec.strategy) else . end)' "$2" >"$TMP/same.json"
	if ! diff -u "$3" "$TMP/same.json" >"$TMP/diff"; then
		head -80 "$TMP/diff" >&2
		fail "$1: helm template differs from kubectl kustomize (- overlay, + chart)"
	fi
	jq -e 'any(.kind == "Deployment") and any(.kind == "CustomResourceDefinition")' "$2" >/dev/null ||
		fail "$1: no Deployment or no CRD rendered"
}
# A scratch overlay on top of deploy/overlays/$1, with the kustomization
# lines on stdin.
scratch() {
	local dir=$TMP/overlay-$RANDOM
	mkdir "$dir"
	{
		printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\n' \
			"$(realpath --relative-to="$dir" "$REPO/deploy/overlays/$1")"
		cat
	} >"$dir/kustomization.yaml"
	echo "$dir"
}

for scope in cluster namespace; do
	step "helm lint, scope $scope (defaults, and every optional object on)"
	"$HELM" lint --strict "$CHART" --set scope="$scope" >"$TMP/lint" 2>&1 || { cat "$TMP/lint" >&2; fail "helm lint"; }
	"$HELM" lint --strict "$CHART" --set scope="$scope" --set metrics.service.enabled=true \
		--set metrics.serviceMonitor.enabled=true --set metrics.podMonitor.enabled=true --set-json "$SCRAPER" \
		--set prometheusRule.enabled=true --set webhook.enabled=false >"$TMP/lint" 2>&1 || { cat "$TMP/lint" >&2; fail "helm lint"; }
done

refused() { # what --set...: helm template must refuse these values, naming what
	local what=$1
	shift
	if "$HELM" template x "$CHART" "$@" >/dev/null 2>"$TMP/err"; then
		fail "rendered with $*"
	fi
	grep -qF -- "$what" "$TMP/err" || fail "the error for $* does not name $what: $(cat "$TMP/err")"
}
step "helm refuses bad values (schema, and the templates' own checks)"
refused "'/scope'" --set scope=everything
refused 'scope must be cluster or namespace' --set scope=everything --skip-schema-validation
refused "'replica' not allowed" --set replica=3
refused "'replicas' not allowed" --set replicas=3
refused "'/replicaCount'" --set replicaCount=two
refused "'/leaderElection/enabled'" --set leaderElection.enabled=maybe
refused 'leaderElection.enabled must be auto, true or false' --set leaderElection.enabled=maybe --skip-schema-validation

step "files/crds = deploy/crds (templates/crds.yaml renders them); no crds/ (Helm would install those before the templates and never upgrade them)"
crds=$(cd "$REPO/deploy/crds" && ls | grep -v "^kustomization.yaml$")
[ "$(cd "$CHART/files/crds" && ls)" = "$crds" ] || fail "files/crds has $(ls "$CHART/files/crds" | xargs), deploy/crds $(xargs <<<"$crds")"
for f in $crds; do
	cmp "$REPO/deploy/crds/$f" "$CHART/files/crds/$f" || fail "files/crds/$f differs from deploy/crds/$f"
done
[ ! -e "$CHART/crds" ] || fail "the chart has a crds/ directory"

step "the StatefulCluster CRD is what scripts/crd-gen makes; every field of ours described; small enough for kubectl apply"
KUBECTL=$KUBECTL "$REPO/scripts/crd-gen" --check >"$TMP/crd-gen" 2>&1 || { cat "$TMP/crd-gen" >&2; fail "deploy/crds/statefulclusters.yaml"; }
"$KUBECTL" label --local -f "$REPO/deploy/crds/statefulclusters.yaml" -o json x- >"$TMP/crd.json"
# Every property has a description (kubectl explain prints it), ours and the
# Kubernetes ones, but for the root's metadata (the API server's ObjectMeta).
undescribed=$(jq -r '.spec.versions[].schema.openAPIV3Schema | del(.properties.metadata)
	| [paths(objects and has("properties")) as $p | getpath($p).properties | to_entries[]
	   | select((.value.description // "") == "") | .key] | unique | join(" ")' "$TMP/crd.json")
[ -z "$undescribed" ] || fail "CRD properties without a description: $undescribed"
# kubectl apply (client-side) keeps the object as JSON in an annotation of at
# most 256 KiB: the CRD must fit, with room for growth.
size=$(jq -c 'del(.metadata.annotations)' "$TMP/crd.json" | wc -c)
[ "$size" -le 229376 ] || fail "the CRD is $size bytes of JSON: kubectl apply's annotation holds 262144 (keep 32 KiB spare)"
echo "ok: the CRD is $size bytes of JSON"

step "defaults = deploy/overlays/cluster"
chart >"$TMP/c.json"
overlay "$REPO/deploy/overlays/cluster" >"$TMP/o.json"
same "cluster scope" "$TMP/c.json" "$TMP/o.json"

step "scope=namespace = deploy/overlays/namespace"
chart --set scope=namespace >"$TMP/c.json"
overlay "$REPO/deploy/overlays/namespace" >"$TMP/o.json"
same "namespace scope" "$TMP/c.json" "$TMP/o.json"

for scope in cluster namespace; do
	step "webhook.certManager.enabled=true, scope $scope = deploy/overlays/$scope with the component deploy/webhook/cert-manager"
	chart --set scope="$scope" --set webhook.certManager.enabled=true >"$TMP/c.json"
	dir=$(scratch "$scope" </dev/null)
	printf 'components:\n- %s\n' "$(realpath --relative-to="$dir" "$REPO/deploy/webhook/cert-manager")" >>"$dir/kustomization.yaml"
	overlay "$dir" >"$TMP/o.json"
	same "cert-manager, scope $scope" "$TMP/c.json" "$TMP/o.json"
done

step "replicas 1, another image and resources = the cluster overlay with those changed, no --leader-elect"
# deploy/base keeps its PodDisruptionBudget (maxUnavailable 1 blocks no drain
# of one replica); the chart's "auto" leaves it out with one replica: forced here.
chart --set replicaCount=1 --set podDisruptionBudget.enabled=true --set image.repository=registry.example/sop --set image.tag=9.9.9 \
	--set image.pullPolicy=Always --set resources.requests.cpu=200m --set resources.limits.memory=1Gi \
	>"$TMP/c.json"
dir=$(scratch cluster <<'EOF'
replicas:
- name: stateful-operator
  count: 1
images:
- name: stateful-operator
  newName: registry.example/sop
  newTag: 9.9.9
patches:
- target: {kind: Deployment, name: stateful-operator}
  patch: |-
    - {op: test, path: /spec/template/spec/containers/0/args/0, value: --leader-elect}
    - {op: remove, path: /spec/template/spec/containers/0/args/0}
    - {op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: Always}
    - {op: replace, path: /spec/template/spec/containers/0/resources/requests/cpu, value: 200m}
    - {op: replace, path: /spec/template/spec/containers/0/resources/limits/memory, value: 1Gi}
    - {op: add, path: /spec/template/spec/containers/0/args/-, value: "--copy-image=registry.example/sop:9.9.9"}
EOF
)
overlay "$dir" >"$TMP/o.json"
same "replicas 1, image, resources" "$TMP/c.json" "$TMP/o.json"

args() { jq -c '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args' "$1"; }
step "leaderElection.enabled=true with replicas 1 keeps --leader-elect; false drops it with 2"
chart --set replicaCount=1 --set leaderElection.enabled=true >"$TMP/c.json"
grep -qF '"--leader-elect"' <<<"$(args "$TMP/c.json")" || fail "no --leader-elect: $(args "$TMP/c.json")"
chart --set leaderElection.enabled=false >"$TMP/c.json"
if grep -qF '"--leader-elect"' <<<"$(args "$TMP/c.json")"; then fail "--leader-elect though disabled"; fi

step "webhook.enabled=false, namespace scope = base, namespace RBAC and CRDs, without the webhook's flag and port"
chart --set scope=namespace --set webhook.enabled=false >"$TMP/c.json"
dir=$TMP/no-webhook
mkdir "$dir"
cat >"$dir/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$dir" "$REPO/deploy/base")
- $(realpath --relative-to="$dir" "$REPO/deploy/rbac/namespace")
- $(realpath --relative-to="$dir" "$REPO/deploy/crds")
patches:
- target: {kind: Deployment, name: stateful-operator}
  patch: |-
    - {op: test, path: /spec/template/spec/containers/0/args/3, value: "--webhook-bind-address=:9443"}
    - {op: remove, path: /spec/template/spec/containers/0/args/3}
    - {op: test, path: /spec/template/spec/containers/0/ports/1/name, value: webhook}
    - {op: remove, path: /spec/template/spec/containers/0/ports/1}
    - {op: add, path: /spec/template/spec/containers/0/args/-, value: "--namespace=\$(POD_NAMESPACE)"}
EOF
overlay "$dir" >"$TMP/o.json"
same "no webhook" "$TMP/c.json" "$TMP/o.json"

obj() { jq -c --arg k "$1" --arg n "$2" '.[] | select(.kind == $k and .metadata.name == $n)' "$TMP/c.json"; }
step "metrics: none by default, /metrics on loopback"
chart >"$TMP/c.json"
[ "$(jq '[.[] | select(.kind | test("Monitor$|PrometheusRule"))] | length' "$TMP/c.json")" = 0 ] ||
	fail "a monitoring object rendered by default"
[ -z "$(obj Service stateful-operator-metrics)" ] || fail "a metrics Service by default"
grep -qF '"--metrics-bind-address=127.0.0.1:8080"' <<<"$(args "$TMP/c.json")" || fail "metrics not on loopback"

step "no Service publishes not-ready addresses (every replica that can serve is Ready, the standby too)"
chart --set metrics.service.enabled=true --set-json "$SCRAPER" >"$TMP/c.json"
jq -e '.spec | has("publishNotReadyAddresses") | not' <<<"$(obj Service stateful-operator-webhook)" >/dev/null ||
	fail "webhook Service: $(obj Service stateful-operator-webhook)"
jq -e '.spec | has("publishNotReadyAddresses") | not' <<<"$(obj Service stateful-operator-metrics)" >/dev/null ||
	fail "metrics Service: $(obj Service stateful-operator-metrics)"
for scope in cluster namespace; do
	jq -e '.[] | select(.kind == "Service" and .metadata.name == "stateful-operator-webhook")
		| .spec | has("publishNotReadyAddresses") | not' <(overlay "$REPO/deploy/overlays/$scope") >/dev/null ||
		fail "deploy/overlays/$scope: the webhook Service publishes not-ready addresses"
done

step "metrics: ServiceMonitor and PodMonitor, the Service, /metrics on all interfaces with a port"
chart --set metrics.serviceMonitor.enabled=true --set metrics.podMonitor.enabled=true \
	--set metrics.serviceMonitor.labels.release=prom --set-json "$SCRAPER" >"$TMP/c.json"
svc=$(obj Service stateful-operator-metrics)
[ -n "$svc" ] || fail "no metrics Service"
jq -e '.spec.ports == [{"name":"metrics","port":8080,"protocol":"TCP","targetPort":"metrics"}]
	and .spec.selector == {"app.kubernetes.io/name":"stateful-operator"}' <<<"$svc" >/dev/null ||
	fail "metrics Service: $svc"
sm=$(obj ServiceMonitor stateful-operator)
jq -e '.apiVersion == "monitoring.coreos.com/v1" and .metadata.labels.release == "prom"
	and .spec.endpoints[0].port == "metrics" and .spec.endpoints[0].path == "/metrics"
	and .spec.namespaceSelector.matchNames == ["stateful-operator-system"]' <<<"$sm" >/dev/null ||
	fail "ServiceMonitor: $sm"
# The ServiceMonitor's selector must select the Service: their labels as
# rendered, before normalisation.
"$HELM" template stateful-operator "$CHART" -n "$NS" --set metrics.serviceMonitor.enabled=true --set-json "$SCRAPER" |
	"$KUBECTL" label --local -f - -o json x- >"$TMP/raw.json"
jq -s -e 'map(if .kind == "List" then .items[] else . end) as $o | ($o[] | select(.kind == "ServiceMonitor") | .spec.selector.matchLabels) as $sel
	| ($o[] | select(.kind == "Service" and .metadata.name == "stateful-operator-metrics") | .metadata.labels) as $l
	| $sel | to_entries | all(.value == $l[.key])' "$TMP/raw.json" >/dev/null ||
	fail "the ServiceMonitor does not select the metrics Service"
pm=$(obj PodMonitor stateful-operator)
jq -e '.apiVersion == "monitoring.coreos.com/v1" and .spec.podMetricsEndpoints[0].port == "metrics"
	and .spec.selector.matchLabels == {"app.kubernetes.io/name":"stateful-operator"}' <<<"$pm" >/dev/null ||
	fail "PodMonitor: $pm"
dep=$(obj Deployment stateful-operator)
jq -e '.spec.template.spec.containers[0]
	| (.args | index("--metrics-bind-address=:8080")) and (.ports | any(.name == "metrics" and .containerPort == 8080))' \
	<<<"$dep" >/dev/null || fail "the Deployment does not expose /metrics on :8080"
chart --set metrics.podMonitor.enabled=true --set-json "$SCRAPER" >"$TMP/c.json"
[ -z "$(obj Service stateful-operator-metrics)" ] || fail "a PodMonitor alone does not need the Service"
[ -n "$(obj PodMonitor stateful-operator)" ] || fail "no PodMonitor"

step "the operator's Secrets: rendered empty (no data, no type: an upgrade keeps what the operator wrote), kept on uninstall"
chart >"$TMP/c.json"
for name in stateful-operator-state-key stateful-operator-webhook-cert; do
	[ -n "$(obj Secret "$name")" ] || fail "no Secret $name"
done
[ "$(jq '[.[] | select(.kind == "Secret")] | length' "$TMP/c.json")" = 2 ] || fail "Secrets other than the operator's two"
# Before normalisation: the annotation it drops.
"$HELM" template stateful-operator "$CHART" -n "$NS" | "$KUBECTL" label --local -f - -o json x- >"$TMP/raw.json"
jq -s -e 'map(if .kind == "List" then .items[] else . end | select(.kind == "Secret"))
	| length == 2 and all(has("data") == false and has("stringData") == false and has("type") == false
		and .metadata.annotations == {"helm.sh/resource-policy": "keep"})' "$TMP/raw.json" >/dev/null ||
	fail "a Secret with data, a type, or without resource-policy keep: $(jq -s -c 'map(if .kind == "List" then .items[] else . end | select(.kind == "Secret"))' "$TMP/raw.json")"
chart --set webhook.enabled=false >"$TMP/c.json"
[ -n "$(obj Secret stateful-operator-state-key)" ] && [ -z "$(obj Secret stateful-operator-webhook-cert)" ] ||
	fail "webhook off: not the state key's Secret alone"
# The RBAC on them: get and update by name, nothing on any other Secret.
for scope in cluster namespace; do
	chart --set scope="$scope" >"$TMP/c.json"
	rules=$(jq -c '[.[] | select(.kind == "Role" or .kind == "ClusterRole") | .rules[] | select(.resources | index("secrets"))]' "$TMP/c.json")
	[ "$rules" = '[{"apiGroups":[""],"resourceNames":["stateful-operator-state-key"],"resources":["secrets"],"verbs":["get","update"]},{"apiGroups":[""],"resourceNames":["stateful-operator-webhook-cert"],"resources":["secrets"],"verbs":["get","update"]}]' ] ||
		fail "scope $scope: rules on secrets: $rules"
done

step "NetworkPolicies: probe and webhook ports from anywhere, nothing else by default; metrics only from metrics.allowFrom"
policy() { jq -c --arg n "$1" '.[] | select(.kind == "NetworkPolicy" and .metadata.name == $n) | .spec' "$TMP/c.json"; }
open_port() { # policy port: it admits port from anywhere, to the operator's pods
	jq -e --argjson p "$2" '.podSelector == {"matchLabels":{"app.kubernetes.io/name":"stateful-operator"}}
		and .policyTypes == ["Ingress"] and .ingress == [{"ports":[{"port":$p,"protocol":"TCP"}]}]' <<<"$(policy "$1")" >/dev/null ||
		fail "NetworkPolicy $1 does not admit exactly port $2 from anywhere: $(policy "$1")"
}
chart >"$TMP/c.json"
[ "$(jq '[.[] | select(.kind == "NetworkPolicy")] | length' "$TMP/c.json")" = 2 ] || fail "not two NetworkPolicies by default"
open_port stateful-operator 8081
open_port stateful-operator-webhook 9443
chart --set webhook.enabled=false >"$TMP/c.json"
[ "$(jq -c '[.[] | select(.kind == "NetworkPolicy") | .metadata.name]' "$TMP/c.json")" = '["stateful-operator"]' ] ||
	fail "webhook off: the webhook port still open"
chart --set metrics.podMonitor.enabled=true --set-json "$SCRAPER" >"$TMP/c.json"
jq -e '.podSelector == {"matchLabels":{"app.kubernetes.io/name":"stateful-operator"}} and .policyTypes == ["Ingress"]
	and .ingress == [{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}},
		"podSelector":{"matchLabels":{"app.kubernetes.io/name":"prometheus"}}}],"ports":[{"port":8080,"protocol":"TCP"}]}]' \
	<<<"$(policy stateful-operator-metrics)" >/dev/null || fail "metrics policy: $(policy stateful-operator-metrics)"
chart --set metrics.service.enabled=true --set metrics.port=9100 --set-json "$SCRAPER" >"$TMP/c.json"
[ "$(jq -c '.ingress[0].ports' <<<"$(policy stateful-operator-metrics)")" = '[{"port":9100,"protocol":"TCP"}]' ] ||
	fail "metrics policy not on metrics.port: $(policy stateful-operator-metrics)"
chart --set networkPolicy.enabled=false --set metrics.service.enabled=true >"$TMP/c.json"
[ "$(jq '[.[] | select(.kind == "NetworkPolicy")] | length' "$TMP/c.json")" = 0 ] || fail "NetworkPolicies though disabled"
refused 'metrics.allowFrom' --set metrics.service.enabled=true
refused 'metrics.allowFrom' --set metrics.podMonitor.enabled=true
refused "'/metrics/allowFrom/0'" --set-json 'metrics.allowFrom=[{"podselector":{}}]'

step "PrometheusRule: the groups of files/alerts.rules.yaml, or nothing without that file"
rule_groups() { # rule file -> its groups as JSON (read as an extra field of a scratch object)
	{ printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rules}\n'; cat "$1"; } |
		"$KUBECTL" label --local -f - -o json x- | jq -S .groups
}
chart --set prometheusRule.enabled=true --set prometheusRule.labels.release=prom >"$TMP/c.json"
rule=$(obj PrometheusRule stateful-operator)
if [ -f "$CHART/files/alerts.rules.yaml" ]; then
	[ -n "$rule" ] || fail "no PrometheusRule though files/alerts.rules.yaml exists"
	jq -e '.metadata.labels.release == "prom" and (.spec.groups | length > 0)' <<<"$rule" >/dev/null ||
		fail "PrometheusRule: $rule"
	[ "$(jq -S .spec.groups <<<"$rule")" = "$(rule_groups "$CHART/files/alerts.rules.yaml")" ] ||
		fail "the PrometheusRule's groups are not those of files/alerts.rules.yaml"
else
	[ -z "$rule" ] || fail "a PrometheusRule without files/alerts.rules.yaml: $rule"
fi
# With a rule file of our own (a copy of the chart): exactly its groups.
rm -rf "$TMP/chart"
cp -r "$CHART" "$TMP/chart"
mkdir -p "$TMP/chart/files"
printf 'groups:\n- name: probe\n  rules:\n  - alert: Probe\n    expr: up == 0\n    for: 5m\n' >"$TMP/chart/files/alerts.rules.yaml"
CHART=$TMP/chart chart --set prometheusRule.enabled=true >"$TMP/c.json"
rule=$(obj PrometheusRule stateful-operator)
[ -n "$rule" ] || fail "no PrometheusRule from a chart with a rule file"
[ "$(jq -S .spec.groups <<<"$rule")" = "$(rule_groups "$TMP/chart/files/alerts.rules.yaml")" ] ||
	fail "PrometheusRule from a rule file: $rule"
CHART=$TMP/chart chart >"$TMP/c.json"
[ -z "$(obj PrometheusRule stateful-operator)" ] || fail "a PrometheusRule though prometheusRule.enabled is false"

step "autoresize values become the operator's flags; none by default; bad ones refused"
autoresize_args() { jq -c '[.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args[] | select(startswith("--autoresize") or startswith("--prometheus") or startswith("--kubelet"))]'; }
[ "$(chart | autoresize_args)" = "[]" ] || fail "autoresize flags rendered by default: $(chart | autoresize_args)"
got=$(chart --set autoresize.source=prometheus --set autoresize.prometheusUrl=http://prometheus.monitoring:9090 \
	--set autoresize.interval=2m --set autoresize.recommendOnly=true --set autoresize.kubeletInsecureTLS=true | autoresize_args)
want='["--autoresize-source=prometheus","--autoresize-interval=2m","--autoresize-recommend-only","--prometheus-url=http://prometheus.monitoring:9090","--kubelet-insecure-tls"]'
[ "$got" = "$want" ] || fail "autoresize values rendered $got, want $want"
refused "'/autoresize/source'" --set autoresize.source=cadvisor
refused 'autoresize.source=kubelet needs scope=cluster' --set scope=namespace --set autoresize.source=kubelet

step "the kubelet source's ServiceAccount (get nodes/stats only): with the kubelet source in cluster scope, and only then"
reader() { jq -c '[.[] | select(.metadata.name | startswith("stateful-operator-usage-")) | .kind] | sort' "$TMP/c.json"; }
all='["ClusterRole","ClusterRoleBinding","Role","RoleBinding","ServiceAccount"]'
chart >"$TMP/c.json"
[ "$(reader)" = "$all" ] || fail "defaults: the usage reader's objects are $(reader)"
chart --set autoresize.source=kubelet >"$TMP/c.json"
[ "$(reader)" = "$all" ] || fail "source kubelet: the usage reader's objects are $(reader)"
for values in "--set autoresize.source=prometheus --set autoresize.prometheusUrl=http://p:9090" \
	"--set autoresize.source=none" "--set scope=namespace"; do
	# shellcheck disable=SC2086 # the values are words
	chart $values >"$TMP/c.json"
	[ "$(reader)" = "[]" ] || fail "$values: the usage reader's objects rendered: $(reader)"
done
chart >"$TMP/c.json"
if obj ClusterRole stateful-operator | grep -qF 'nodes/stats'; then
	fail "the operator's ClusterRole grants nodes/stats"
fi
refused "'/autoresize/prometheusUrl'" --set autoresize.prometheusUrl=prometheus:9090


# Rendered as is (no normalisation): labels, names, hooks.
raw() { # helm template flags... -> JSON array of every object (hooks too)
	"$HELM" template "${REL:-stateful-operator}" "$CHART" -n "$NS" "$@" |
		"$KUBECTL" label --local -f - -o json x- | jq -s 'map(if .kind == "List" then .items[] else . end)'
}
dep() { jq -c '.[] | select(.kind == "Deployment")' "$TMP/c.json"; }
FIXED='["stateful-operator","stateful-operator-webhook","stateful-operator-state-key","stateful-operator-webhook-cert"]'

step "labels: the recommended set and helm.sh/chart on every object (with every optional object on), the release as instance"
REL=rel-x raw --set metrics.serviceMonitor.enabled=true --set metrics.podMonitor.enabled=true --set-json "$SCRAPER" \
	--set prometheusRule.enabled=true >"$TMP/c.json"
version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART/Chart.yaml")
chartv=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART/Chart.yaml")
bad=$(jq -c --arg v "$version" --arg c "stateful-operator-$chartv" '[.[] | select(.metadata.labels as $l
	| ($l."app.kubernetes.io/name" | test("^stateful-operator(-test)?$")) and $l."app.kubernetes.io/instance" == "rel-x"
	and $l."app.kubernetes.io/version" == $v and ($l."app.kubernetes.io/component" | length > 0)
	and $l."app.kubernetes.io/managed-by" == "Helm" and $l."helm.sh/chart" == $c | not) | .kind + "/" + .metadata.name]' "$TMP/c.json")
[ "$bad" = "[]" ] || fail "objects without the recommended labels: $bad"
[ "$(jq '[.[] | select(.kind == "CustomResourceDefinition" or .kind == "PodMonitor" or .kind == "PrometheusRule" or .kind == "Pod")] | length' "$TMP/c.json")" = 4 ] ||
	fail "not every optional object rendered for the label check"
jq -e '.[] | select(.kind == "Deployment") | .spec.template.metadata.labels."app.kubernetes.io/instance" == "rel-x"
	and .spec.selector.matchLabels == {"app.kubernetes.io/name":"stateful-operator"}' "$TMP/c.json" >/dev/null ||
	fail "the pods do not carry the labels, or the selector changed: $(dep)"

step "fullnameOverride names every object but those the operator finds by name; nameOverride the name label"
raw --set fullnameOverride=sop --set metrics.serviceMonitor.enabled=true --set-json "$SCRAPER" \
	--set prometheusRule.enabled=true >"$TMP/c.json"
bad=$(jq -c --argjson fixed "$FIXED" '[.[] | select(.kind != "CustomResourceDefinition") | .metadata.name
	| select((. as $n | $fixed | index($n)) == null and (test("^sop(-|$)") | not))]' "$TMP/c.json")
[ "$bad" = "[]" ] || fail "objects not named by fullnameOverride: $bad"
[ "$(jq -c '[.[] | .metadata.name | select(startswith("stateful-operator"))] | unique' "$TMP/c.json")" = \
	'["stateful-operator","stateful-operator-state-key","stateful-operator-webhook","stateful-operator-webhook-cert"]' ] ||
	fail "fixed names: $(jq -c '[.[] | .kind + "/" + .metadata.name | select(contains("/stateful-operator"))]' "$TMP/c.json")"
jq -e '[.[] | .subjects? // empty | .[] | select(.name | startswith("stateful-operator"))] | length == 0' "$TMP/c.json" >/dev/null ||
	fail "a binding still names a stateful-operator ServiceAccount"
jq -e '.[] | select(.kind == "Deployment") | .spec.template.spec.serviceAccountName == "sop"
	and (.spec.template.spec.containers[0].args | index("--kubelet-service-account=sop-usage-reader"))' "$TMP/c.json" >/dev/null ||
	fail "the Deployment's ServiceAccount or kubelet ServiceAccount: $(dep)"
jq -e '.[] | select(.kind == "Role" and .metadata.name == "sop-usage-token") | .rules[0].resourceNames == ["sop-usage-reader"]' "$TMP/c.json" >/dev/null ||
	fail "the usage token Role does not name sop-usage-reader"
raw --set nameOverride=sop2 >"$TMP/c.json"
jq -e 'all(.[]; .metadata.labels."app.kubernetes.io/name" | test("^sop2(-test)?$"))
	and (.[] | select(.kind == "Deployment") | .metadata.name == "sop2" and .spec.selector.matchLabels == {"app.kubernetes.io/name":"sop2"})' \
	"$TMP/c.json" >/dev/null || fail "nameOverride: $(dep)"

step "serviceAccount: create false uses the named one (no ServiceAccount rendered, bindings to it); annotations"
raw --set serviceAccount.create=false --set serviceAccount.name=mine >"$TMP/c.json"
[ "$(jq -c '[.[] | select(.kind == "ServiceAccount") | .metadata.name]' "$TMP/c.json")" = '["stateful-operator-usage-reader"]' ] ||
	fail "ServiceAccounts rendered: $(jq -c '[.[] | select(.kind == "ServiceAccount") | .metadata.name]' "$TMP/c.json")"
jq -e '(.[] | select(.kind == "Deployment") | .spec.template.spec.serviceAccountName == "mine")
	and ([.[] | select(.kind | endswith("Binding")) | .subjects[] | select(.name != "stateful-operator-usage-reader") | .name] | unique == ["mine"])' \
	"$TMP/c.json" >/dev/null || fail "not bound to ServiceAccount mine"
raw --set serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:x >"$TMP/c.json"
jq -e '.[] | select(.kind == "ServiceAccount" and .metadata.name == "stateful-operator") | .metadata.annotations == {"eks.amazonaws.com/role-arn":"arn:x"}' \
	"$TMP/c.json" >/dev/null || fail "ServiceAccount annotations"

step "image.digest wins over the tag (operator, copy Jobs, helm test); imagePullSecrets"
digest=sha256:$(printf '%064d' 7)
raw --set image.repository=reg.example/sop --set image.tag=1.2.3 --set image.digest="$digest" \
	--set 'imagePullSecrets[0].name=regcred' >"$TMP/c.json"
jq -e --arg ref "reg.example/sop@$digest" '(.[] | select(.kind == "Deployment") | .spec.template.spec
	| .containers[0].image == $ref and (.containers[0].args | index("--copy-image=" + $ref)) and .imagePullSecrets == [{"name":"regcred"}])
	and (.[] | select(.kind == "Pod") | .spec.containers[0].image == $ref)' "$TMP/c.json" >/dev/null ||
	fail "digest: $(dep)"
refused "'/image/digest'" --set image.digest=latest
raw --set copyImage=reg.example/rsync:1 >"$TMP/c.json"
jq -e '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args | index("--copy-image=reg.example/rsync:1")' \
	"$TMP/c.json" >/dev/null || fail "copyImage: $(dep)"

step "HA: RollingUpdate maxUnavailable 0 maxSurge 1; a PodDisruptionBudget (maxUnavailable 1, AlwaysAllow) when replicaCount > 1, or when forced"
pdb() { jq -c '[.[] | select(.kind == "PodDisruptionBudget") | .spec]' "$TMP/c.json"; }
raw >"$TMP/c.json"
jq -e '.[] | select(.kind == "Deployment") | .spec.strategy == {"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":1}}' \
	"$TMP/c.json" >/dev/null || fail "strategy: $(dep)"
[ "$(pdb)" = '[{"maxUnavailable":1,"selector":{"matchLabels":{"app.kubernetes.io/name":"stateful-operator"}},"unhealthyPodEvictionPolicy":"AlwaysAllow"}]' ] || fail "PDB: $(pdb)"
raw --set replicaCount=1 >"$TMP/c.json"
[ "$(pdb)" = '[]' ] || fail "a PDB with one replica: $(pdb)"
raw --set replicaCount=1 --set podDisruptionBudget.enabled=true >"$TMP/c.json"
[ "$(pdb)" != '[]' ] || fail "no PDB though enabled"
raw --set replicaCount=3 --set podDisruptionBudget.enabled=false >"$TMP/c.json"
[ "$(pdb)" = '[]' ] || fail "a PDB though disabled: $(pdb)"
raw --set replicaCount=3 --set podDisruptionBudget.maxUnavailable=2 >"$TMP/c.json"
[ "$(jq -c '.[0].maxUnavailable' <<<"$(pdb)")" = 2 ] || fail "PDB maxUnavailable: $(pdb)"
refused "'/podDisruptionBudget/maxUnavailable'" --set podDisruptionBudget.maxUnavailable=0
refused "'/podDisruptionBudget/enabled'" --set podDisruptionBudget.enabled=maybe
raw --set strategy.type=Recreate >"$TMP/c.json"
jq -e '.[] | select(.kind == "Deployment") | .spec.strategy == {"type":"Recreate"}' "$TMP/c.json" >/dev/null ||
	fail "strategy.type=Recreate: $(dep)"
if "$HELM" lint --strict "$CHART" --set webhook.failurePolicy=Sometimes >"$TMP/lint" 2>&1; then
	fail "helm lint --strict accepted webhook.failurePolicy=Sometimes"
fi

step "scheduling and pod values reach the pod spec; affinity replaces the default anti-affinity"
raw --set priorityClassName=system-cluster-critical --set podAnnotations.a=b --set podLabels.team=storage \
	--set nodeSelector.disk=ssd --set-json 'tolerations=[{"key":"k","operator":"Exists"}]' \
	--set-json 'affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}' \
	--set-json 'topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app.kubernetes.io/name":"stateful-operator"}}}]' \
	>"$TMP/c.json"
jq -e '.[] | select(.kind == "Deployment") | .spec.selector.matchLabels == {"app.kubernetes.io/name":"stateful-operator"}
	and (.spec.template | .metadata.annotations == {"a":"b"} and .metadata.labels.team == "storage"
	and (.spec | .priorityClassName == "system-cluster-critical" and .nodeSelector == {"disk":"ssd"}
		and .tolerations == [{"key":"k","operator":"Exists"}] and (.affinity | keys) == ["nodeAffinity"]
		and .topologySpreadConstraints[0].topologyKey == "topology.kubernetes.io/zone"))' "$TMP/c.json" >/dev/null ||
	fail "pod values: $(dep)"

step "strict security contexts by default (restricted Pod Security Standard)"
raw >"$TMP/c.json"
jq -e 'all(.[] | select(.kind == "Deployment" or .kind == "Pod") | if .kind == "Deployment" then .spec.template.spec else .spec end;
	.securityContext.runAsNonRoot == true and .securityContext.seccompProfile.type == "RuntimeDefault"
	and (.containers | all(.securityContext | .allowPrivilegeEscalation == false and .capabilities.drop == ["ALL"]
		and .readOnlyRootFilesystem == true and .runAsNonRoot == true)))' "$TMP/c.json" >/dev/null ||
	fail "a pod or container not restricted"

step "the operator's flags as values; extraArgs appended last, extraEnv and extra volumes added"
raw --set logLevel=debug --set logFormat=text --set workers=8 --set 'controllers={resize,scaledown}' \
	--set autoresize.kubeletCAFile=/ca/kubelet.crt --set autoresize.kubeletPort=10255 \
	--set autoresize.source=prometheus --set autoresize.prometheusUrl=https://prom:9090 \
	--set autoresize.prometheusCAFile=/ca/prom.crt --set autoresize.prometheusBearerTokenFile=/t/token \
	--set 'extraArgs={--dry-run}' --set-json 'extraEnv=[{"name":"TZ","value":"UTC"}]' \
	--set-json 'extraVolumes=[{"name":"ca","configMap":{"name":"ca"}}]' \
	--set-json 'extraVolumeMounts=[{"name":"ca","mountPath":"/ca","readOnly":true}]' >"$TMP/c.json"
got=$(jq -c '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args' "$TMP/c.json")
want='["--leader-elect","--metrics-bind-address=127.0.0.1:8080","--health-probe-bind-address=:8081","--webhook-bind-address=:9443","--log-format=text","--log-level=debug","--workers=8","--controllers=resize,scaledown","--autoresize-source=prometheus","--prometheus-url=https://prom:9090","--prometheus-ca-file=/ca/prom.crt","--prometheus-bearer-token-file=/t/token","--kubelet-ca-file=/ca/kubelet.crt","--kubelet-port=10255","--dry-run"]'
[ "$got" = "$want" ] || fail "args $got, want $want"
jq -e '.[] | select(.kind == "Deployment") | .spec.template.spec | (.containers[0].env | map(.name)) == ["POD_NAMESPACE","POD_NAME","TZ"]
	and .volumes == [{"name":"ca","configMap":{"name":"ca"}}] and .containers[0].volumeMounts[0].mountPath == "/ca"' "$TMP/c.json" >/dev/null ||
	fail "extraEnv or volumes: $(dep)"
refused "'/logLevel'" --set logLevel=verbose
refused "'/workers'" --set workers=65
refused "'/controllers/1'" --set 'controllers={resize,backup}'
refused "'/extraArgs/0'" --set 'extraArgs={dry-run}'

step "webhook: failurePolicy and timeoutSeconds on both webhooks; bad ones refused"
raw --set webhook.failurePolicy=Fail --set webhook.timeoutSeconds=10 >"$TMP/c.json"
[ "$(jq -c '[.[] | select(.kind == "MutatingWebhookConfiguration") | .webhooks[] | [.failurePolicy, .timeoutSeconds]]' "$TMP/c.json")" = '[["Fail",10],["Fail",10]]' ] ||
	fail "webhooks: $(jq -c '.[] | select(.kind == "MutatingWebhookConfiguration") | .webhooks' "$TMP/c.json")"
raw >"$TMP/c.json"
[ "$(jq -c '[.[] | select(.kind == "MutatingWebhookConfiguration") | .webhooks[] | [.failurePolicy, .timeoutSeconds]]' "$TMP/c.json")" = '[["Ignore",5],["Ignore",5]]' ] ||
	fail "webhook defaults are not Ignore, 5 s"
refused "'/webhook/failurePolicy'" --set webhook.failurePolicy=Sometimes
refused "'/webhook/timeoutSeconds'" --set webhook.timeoutSeconds=60

step "webhook certificate from cert-manager or a given Secret: mounted for --webhook-cert-dir, caBundle by the CA injector or the value, no rights on the Secret or the configuration"
mwc() { jq -c '.[] | select(.kind == "MutatingWebhookConfiguration")' "$TMP/c.json"; }
narrowed() { # mode: the operator gets no rights on its webhook Secret nor on the configuration, keeps the rest
	local rules
	rules=$(jq -c '[.[] | select(.kind == "Role" or .kind == "ClusterRole") | .rules[] | select(.resources | index("secrets"))]' "$TMP/c.json")
	[ "$rules" = '[{"apiGroups":[""],"resourceNames":["stateful-operator-state-key"],"resources":["secrets"],"verbs":["get","update"]}]' ] ||
		fail "$1: rules on secrets: $rules"
	[ "$(jq '[.[] | select(.kind | test("Role")) | .rules[]? | select(.resources | index("mutatingwebhookconfigurations"))] | length' "$TMP/c.json")" = 0 ] ||
		fail "$1: a rule on mutatingwebhookconfigurations"
	[ "$(jq -c '[.[] | select(.kind | test("Role")) | .metadata.name | select(test("webhook-cert"))]' "$TMP/c.json")" = '[]' ] ||
		fail "$1: the webhook-cert Role or RoleBinding rendered"
	jq -e '.[] | select(.kind == "ClusterRole" and .metadata.name == "stateful-operator-webhook") | .rules == [{"apiGroups":["storage.k8s.io"],"resources":["volumeattributesclasses"],"verbs":["list","watch"]}]' \
		"$TMP/c.json" >/dev/null || fail "$1: the webhook's ClusterRole: $(obj ClusterRole stateful-operator-webhook)"
	[ -z "$(obj Secret stateful-operator-webhook-cert)" ] || fail "$1: the operator's empty webhook Secret rendered"
}
mounted() { # mode secret: the Deployment mounts secret read-only at the dir of --webhook-cert-dir, beside extraVolumes
	jq -e --arg s "$2" '.[] | select(.kind == "Deployment") | .spec.template.spec
		| (.containers[0].args | index("--webhook-cert-dir=/etc/stateful-operator/webhook-cert"))
		and .volumes == [{"name":"webhook-cert","secret":{"secretName":$s}},{"name":"ca","configMap":{"name":"ca"}}]
		and .containers[0].volumeMounts == [{"name":"webhook-cert","mountPath":"/etc/stateful-operator/webhook-cert","readOnly":true},{"name":"ca","mountPath":"/ca"}]' \
		"$TMP/c.json" >/dev/null || fail "$1: the Secret $2 is not mounted for --webhook-cert-dir: $(dep)"
}
EXTRA_VOLUME=(--set-json 'extraVolumes=[{"name":"ca","configMap":{"name":"ca"}}]' --set-json 'extraVolumeMounts=[{"name":"ca","mountPath":"/ca"}]')
for scope in cluster namespace; do
	raw --set scope="$scope" --set webhook.certManager.enabled=true "${EXTRA_VOLUME[@]}" >"$TMP/c.json"
	jq -e --arg ns "$NS" '.spec == {"secretName":"stateful-operator-webhook-tls",
		"dnsNames":["stateful-operator-webhook.\($ns).svc","stateful-operator-webhook.\($ns).svc.cluster.local"],
		"privateKey":{"algorithm":"ECDSA","size":256,"rotationPolicy":"Always"},"usages":["digital signature","server auth"],
		"issuerRef":{"name":"stateful-operator-webhook-selfsigned","kind":"Issuer","group":"cert-manager.io"}}
		and .metadata.namespace == $ns' <<<"$(obj Certificate stateful-operator-webhook)" >/dev/null ||
		fail "cert-manager, scope $scope: Certificate: $(obj Certificate stateful-operator-webhook)"
	jq -e '.spec == {"selfSigned":{}}' <<<"$(obj Issuer stateful-operator-webhook-selfsigned)" >/dev/null ||
		fail "cert-manager, scope $scope: no self-signed Issuer: $(obj Issuer stateful-operator-webhook-selfsigned)"
	mounted "cert-manager, scope $scope" stateful-operator-webhook-tls
	jq -e --arg ns "$NS" '.metadata.annotations == {"cert-manager.io/inject-ca-from": "\($ns)/stateful-operator-webhook"}
		and (.webhooks | length == 2 and all(.clientConfig | has("caBundle") | not))' <<<"$(mwc)" >/dev/null ||
		fail "cert-manager, scope $scope: configuration: $(mwc)"
	narrowed "cert-manager, scope $scope"

	raw --set scope="$scope" --set webhook.existingSecret=my-tls --set webhook.caBundle=Q0E= "${EXTRA_VOLUME[@]}" >"$TMP/c.json"
	[ "$(jq '[.[] | select(.apiVersion | startswith("cert-manager.io/"))] | length' "$TMP/c.json")" = 0 ] ||
		fail "existingSecret, scope $scope: cert-manager objects rendered"
	mounted "existingSecret, scope $scope" my-tls
	jq -e '(.metadata | has("annotations") | not) and (.webhooks | length == 2 and all(.clientConfig.caBundle == "Q0E="))' <<<"$(mwc)" >/dev/null ||
		fail "existingSecret, scope $scope: configuration: $(mwc)"
	narrowed "existingSecret, scope $scope"
done
raw --set webhook.certManager.enabled=true --set webhook.certManager.issuerRef.name=corp-ca \
	--set webhook.certManager.issuerRef.kind=ClusterIssuer --set webhook.certManager.duration=2160h >"$TMP/c.json"
[ -z "$(obj Issuer stateful-operator-webhook-selfsigned)" ] || fail "a self-signed Issuer though issuerRef names one"
jq -e '.spec.issuerRef == {"name":"corp-ca","kind":"ClusterIssuer","group":"cert-manager.io"} and .spec.duration == "2160h"' \
	<<<"$(obj Certificate stateful-operator-webhook)" >/dev/null || fail "issuerRef: $(obj Certificate stateful-operator-webhook)"
raw --set webhook.enabled=false --set webhook.certManager.enabled=true >"$TMP/c.json"
[ "$(jq '[.[] | select(.apiVersion | startswith("cert-manager.io/"))] | length' "$TMP/c.json")" = 0 ] ||
	fail "webhook off: cert-manager objects rendered"
jq -e '.[] | select(.kind == "Deployment") | .spec.template.spec | has("volumes") | not' "$TMP/c.json" >/dev/null ||
	fail "webhook off: a certificate mounted: $(dep)"
raw >"$TMP/c.json"
[ "$(jq '[.[] | select(.apiVersion | startswith("cert-manager.io/"))] | length' "$TMP/c.json")" = 0 ] &&
	! grep -qF -- '--webhook-cert-dir' <<<"$(args "$TMP/c.json")" && [ -n "$(obj Secret stateful-operator-webhook-cert)" ] ||
	fail "defaults: not the operator's own certificate"
for set in "webhook.certManager.enabled=true webhook.existingSecret=my-tls" "webhook.existingSecret=my-tls" \
	"webhook.caBundle=Q0E=" "webhook.certManager.enabled=true webhook.caBundle=Q0E=" \
	"webhook.certManager.enabled=true webhook.certManager.issuerRef.kind=ClusterIssuer"; do
	# shellcheck disable=SC2086 # word-split on purpose: one --set each
	if "$HELM" lint --strict "$CHART" $(printf -- '--set %s ' $set) >"$TMP/lint" 2>&1; then
		fail "helm lint --strict accepted $set"
	fi
done
# The schema refuses them (what helm lint --strict sees: it does not stop at a template's fail), the templates say why.
refused "'/webhook/existingSecret'" --set webhook.certManager.enabled=true --set webhook.existingSecret=my-tls
refused "'/webhook/caBundle'" --set webhook.existingSecret=my-tls
refused "'/webhook/caBundle'" --set webhook.caBundle=Q0E=
refused "'/webhook/certManager/issuerRef/name'" --set webhook.certManager.enabled=true --set webhook.certManager.issuerRef.kind=ClusterIssuer
NOSCHEMA=--skip-schema-validation
refused 'set one of them' $NOSCHEMA --set webhook.certManager.enabled=true --set webhook.existingSecret=my-tls
refused 'webhook.existingSecret needs webhook.caBundle' $NOSCHEMA --set webhook.existingSecret=my-tls
refused 'webhook.caBundle needs webhook.existingSecret' $NOSCHEMA --set webhook.caBundle=Q0E=
refused "cert-manager's CA injector writes the caBundle" $NOSCHEMA --set webhook.certManager.enabled=true --set webhook.caBundle=Q0E=
refused 'ClusterIssuer needs webhook.certManager.issuerRef.name' $NOSCHEMA --set webhook.certManager.enabled=true \
	--set webhook.certManager.issuerRef.kind=ClusterIssuer
refused "'/webhook/caBundle'" --set webhook.existingSecret=my-tls --set 'webhook.caBundle=-----BEGIN CERTIFICATE-----'
refused "'/webhook/existingSecret'" --set webhook.existingSecret=My_Secret --set webhook.caBundle=Q0E=
refused "'/webhook/certManager/issuerRef/kind'" --set webhook.certManager.enabled=true --set webhook.certManager.issuerRef.kind=Vault

step "CRDs: rendered from files/crds with resource-policy keep; crds.keep=false without it; crds.enabled=false none"
crd() { jq -c '[.[] | select(.kind == "CustomResourceDefinition") | .metadata.annotations."helm.sh/resource-policy"]' "$TMP/c.json"; }
raw >"$TMP/c.json"
[ "$(crd)" = '["keep"]' ] || fail "CRD annotations: $(crd)"
raw --set crds.keep=false >"$TMP/c.json"
[ "$(crd)" = '[null]' ] || fail "crds.keep=false: $(crd)"
raw --set crds.enabled=false >"$TMP/c.json"
[ "$(crd)" = '[]' ] || fail "crds.enabled=false: $(crd)"

step "helm test: a hook Pod of the operator's image, not selected by the Deployment; none without the webhook"
raw >"$TMP/c.json"
jq -e '[.[] | select(.kind == "Pod")] | length == 1 and (.[0] | .metadata.annotations."helm.sh/hook" == "test"
	and .metadata.labels."app.kubernetes.io/name" != "stateful-operator" and .spec.restartPolicy == "Never"
	and .spec.automountServiceAccountToken == false and (.spec.containers[0].args[0] | contains("/dev/tcp/")))' \
	"$TMP/c.json" >/dev/null || fail "test Pod: $(jq -c '.[] | select(.kind == "Pod")' "$TMP/c.json")"
raw --set webhook.enabled=false >"$TMP/c.json"
[ "$(jq '[.[] | select(.kind == "Pod")] | length' "$TMP/c.json")" = 0 ] || fail "a test Pod without the webhook"

step "NOTES.txt: what was installed and how to check it"
notes=$("$HELM" install rel-x "$CHART" -n "$NS" --dry-run=client 2>&1) || fail "helm install --dry-run: $notes"
for want in "kubectl rollout status -n $NS deployment/stateful-operator" "PodDisruptionBudget stateful-operator" \
	"kubectl stateful status" "helm test -n $NS rel-x" "statefulclusters.stateful-operator.io (kept on helm uninstall)"; do
	grep -qF -- "$want" <<<"$notes" || fail "NOTES.txt lacks '$want': $notes"
done


step "every value has a described schema entry and a default in values.yaml, and back; README.md's table is what scripts/chart-readme writes"
values=$({ printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: values}\n'; cat "$CHART/values.yaml"; } |
	"$KUBECTL" label --local -f - -o json x- | jq -c 'del(.apiVersion, .kind, .metadata)')
faults=$(jq -r --argjson values "$values" --arg mode check -f "$REPO/scripts/chart-values.jq" "$CHART/values.schema.json")
[ -z "$faults" ] || fail "values and schema disagree: $faults"
KUBECTL=$KUBECTL "$REPO/scripts/chart-readme" --check >"$TMP/readme" 2>&1 || { head -40 "$TMP/readme" >&2; fail "charts/stateful-operator/README.md"; }

echo "PASS: chart render"
