#!/usr/bin/env bash
# The Helm chart (charts/stateful-operator) on the local control plane: a
# release installed, upgraded and uninstalled, and its objects there, changed
# and gone. Assumes `scripts/local-cluster up` ran (helm comes with its PATH).
#
# The release uses namespace scope with the webhook off, in a scratch
# namespace: then it owns no cluster-scoped object, so it cannot collide with
# what `up` applied from deploy/ (the cluster RBAC, not Helm's) nor disturb
# other tests. Its pods are pinned to the simulated node kwok-node-0: no
# operator really runs. The CRDs are in place already (`up`, kubectl apply):
# the chart leaves a CRD that is not its release's alone and its notes say so.
#   - install: Deployment (1 replica, no --leader-elect, --namespace), its
#     ServiceAccount, Role and RoleBinding (the ServiceAccount may act in the
#     namespace and not elsewhere), the metrics Service, the NetworkPolicies
#     (probe port; metrics port from metrics.allowFrom), the state key's
#     Secret, empty; all Helm's. The ServiceAccount may get and update that
#     Secret, not create Secrets nor read others; it fills the Secret as the
#     operator does;
#   - upgrade to 2 replicas without the metrics Service: the Deployment has 2
#     replicas, --leader-elect, RollingUpdate 0/1, a PodDisruptionBudget, and its ReplicaSet 2 pods; the Service and
#     the metrics NetworkPolicy are gone; the Secret holds the same key; the
#     release is at revision 2;
#   - uninstall: every object of the release gone but the Secret (resource
#     policy keep), which holds the same key; the CRD still there;
#   - install again under the same name: the release takes the Secret back,
#     key unchanged; under another name (after uninstalling): the Secret,
#     another release's, is left out of it and unchanged.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
eval "$("$REPO/scripts/local-cluster" env)"
kubectl version >/dev/null 2>&1 || { echo "FAIL: no API server; run scripts/local-cluster up" >&2; exit 1; }
command -v helm >/dev/null || { echo "FAIL: no helm on PATH (scripts/testbed-build builds it)" >&2; exit 1; }

NS=chart-release-$$
REL=sop-chart-it
TMP=$(mktemp -d)
export HELM_CACHE_HOME=$TMP/helm HELM_CONFIG_HOME=$TMP/helm HELM_DATA_HOME=$TMP/helm
INSTALLED=0
# shellcheck source=../lib/steps.sh
source "$REPO/tests/lib/steps.sh"

cleanup() {
	local rc=$?
	if [ "$INSTALLED" = 1 ]; then
		helm uninstall "$REL" -n "$NS" --wait --timeout 120s >/dev/null 2>&1 ||
			{ echo "cleanup: release $REL not uninstalled" >&2; rc=1; }
	fi
	delete_namespace "$NS" || rc=1
	rm -rf "$TMP"
	verdict "chart release" $rc
}
trap cleanup EXIT

# The release's objects (kind/name), but the Secret it keeps.
OBJECTS="deployment/stateful-operator serviceaccount/stateful-operator role/stateful-operator
rolebinding/stateful-operator service/stateful-operator-metrics networkpolicy/stateful-operator
networkpolicy/stateful-operator-metrics"
KEY=secret/stateful-operator-state-key
# Who may scrape /metrics once it is exposed (metrics.allowFrom).
SCRAPER='metrics.allowFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]'

jsonpath() { # object jsonpath: prints the field ('' when the object is missing)
	kubectl get -n "$NS" "$1" --ignore-not-found -o jsonpath="$2" || fail "cannot read $1"
}
wait_for() { # what command...: polls the command for up to 60 s
	local what=$1
	shift
	for _ in $(seq 120); do
		"$@" && return 0
		sleep 0.5
	done
	fail "timed out waiting for $what"
}
gone() { # object: true when it is not there (an error reading it fails the test)
	local out
	out=$(kubectl get -n "$NS" "$1" --ignore-not-found -o name) || fail "cannot read $1"
	[ -z "$out" ]
}
replicas_are() { # n: the Deployment wants n and its ReplicaSet made n pods
	[ "$(jsonpath deployment/stateful-operator '{.spec.replicas}/{.status.replicas}')" = "$1/$1" ]
}
sa_can() { # verb resource namespace: yes/no for the release's ServiceAccount
	kubectl auth can-i --as="system:serviceaccount:$NS:stateful-operator" "$1" "$2" -n "$3" 2>/dev/null || true
}
sa_can_list_statefulsets() { [ "$(sa_can list statefulsets.apps "$NS")" = yes ]; }

step "helm install (namespace scope, webhook off, 1 replica, metrics Service)"
INSTALLED=1
out=$(helm install "$REL" "$REPO/charts/stateful-operator" -n "$NS" --create-namespace \
	--set scope=namespace --set webhook.enabled=false --set replicaCount=1 --set metrics.service.enabled=true \
	--set-json "$SCRAPER" --set 'nodeSelector.kubernetes\.io/hostname=kwok-node-0' 2>&1) || fail "$out"
[ "$(helm status "$REL" -n "$NS" -o json | jq -r '.info.status + " " + (.version | tostring)')" = "deployed 1" ] ||
	fail "release not deployed at revision 1: $(helm status "$REL" -n "$NS" 2>&1)"

step "install: the release's objects are there, Helm's"
for o in $OBJECTS $KEY; do
	[ "$(jsonpath "$o" '{.metadata.labels.app\.kubernetes\.io/managed-by}/{.metadata.annotations.meta\.helm\.sh/release-name}')" = "Helm/$REL" ] ||
		fail "$o is missing or not the release's"
done
args=$(jsonpath deployment/stateful-operator '{.spec.template.spec.containers[0].args}')
# shellcheck disable=SC2016 # a literal $(POD_NAMESPACE)
grep -qF '"--namespace=$(POD_NAMESPACE)"' <<<"$args" || fail "not scoped to its namespace: $args"
if grep -qF -- '--leader-elect' <<<"$args"; then fail "--leader-elect with one replica: $args"; fi
grep -qF '"--metrics-bind-address=:8080"' <<<"$args" || fail "/metrics not exposed for its Service: $args"
if grep -qF -- '--webhook-bind-address' <<<"$args"; then fail "webhook served though off: $args"; fi
wait_for "the Deployment's 1 pod" replicas_are 1
kubectl get crd statefulclusters.stateful-operator.io >/dev/null || fail "the CRD is gone"
# The CRD `up` applied is not the release's: left alone (not taken over, not
# upgraded), and the install's notes say how to let the release adopt it.
if helm get manifest "$REL" -n "$NS" | grep -q "^kind: CustomResourceDefinition$"; then fail "the release took the CRD applied from deploy/"; fi
grep -qF "WARNING: CRD statefulclusters.stateful-operator.io exists and is not this release's" <<<"$out" ||
	fail "the notes do not say the CRD was left alone: $out"

step "install: the ServiceAccount may act in its namespace, not elsewhere"
wait_for "the RoleBinding to take effect" sa_can_list_statefulsets
[ "$(sa_can patch persistentvolumeclaims "$NS")" = yes ] || fail "cannot patch claims in $NS"
[ "$(sa_can list statefulsets.apps default)" = no ] || fail "may list StatefulSets in default"

step "install: the metrics port admits only metrics.allowFrom; the state key's Secret is empty, kept on uninstall"
[ "$(jsonpath networkpolicy/stateful-operator-metrics '{.spec.ingress[0].from}')" = '[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]' ] ||
	fail "metrics policy: $(jsonpath networkpolicy/stateful-operator-metrics '{.spec}')"
[ -z "$(jsonpath $KEY '{.data}')" ] || fail "the Secret is not empty: $(jsonpath $KEY '{.data}')"
[ "$(jsonpath $KEY '{.metadata.annotations.helm\.sh/resource-policy}')" = keep ] || fail "the Secret is not kept on uninstall"
gone secret/stateful-operator-webhook-cert || fail "the webhook's Secret though the webhook is off"

step "install: the ServiceAccount may get and update that Secret, create none and read no other; it fills it"
[ "$(sa_can get "$KEY" "$NS")" = yes ] || fail "cannot get $KEY"
[ "$(sa_can update "$KEY" "$NS")" = yes ] || fail "cannot update $KEY"
[ "$(sa_can create secrets "$NS")" = no ] || fail "may create secrets"
[ "$(sa_can list secrets "$NS")" = no ] || fail "may list secrets"
[ "$(sa_can get secret/another "$NS")" = no ] || fail "may read another Secret"
# As the operator fills it: an update of what it read (resourceVersion kept), as itself.
KEYDATA=$(head -c 32 /dev/urandom | base64 -w0)
kubectl get "$KEY" -n "$NS" -o json | jq --arg k "$KEYDATA" '.data = {key: $k}' |
	kubectl replace --as="system:serviceaccount:$NS:stateful-operator" -f - >/dev/null || fail "the ServiceAccount cannot fill $KEY"
key_kept() { # what: the Secret holds the key filled above, and is still Helm's
	[ "$(jsonpath $KEY '{.data.key}')" = "$KEYDATA" ] || fail "$1: the key changed or is gone: '$(jsonpath $KEY '{.data.key}')'"
}
key_kept "filled"

step "helm upgrade: 2 replicas, no metrics Service"
generation=$(jsonpath deployment/stateful-operator '{.metadata.generation}')
out=$(helm upgrade "$REL" "$REPO/charts/stateful-operator" -n "$NS" --reuse-values \
	--set replicaCount=2 --set metrics.service.enabled=false 2>&1) || fail "$out"
[ "$(helm status "$REL" -n "$NS" -o json | jq -r '.info.status + " " + (.version | tostring)')" = "deployed 2" ] ||
	fail "release not deployed at revision 2: $(helm status "$REL" -n "$NS" 2>&1)"
[ "$(jsonpath deployment/stateful-operator '{.metadata.generation}')" -gt "$generation" ] ||
	fail "the Deployment did not change"
args=$(jsonpath deployment/stateful-operator '{.spec.template.spec.containers[0].args}')
grep -qF '"--leader-elect"' <<<"$args" || fail "no --leader-elect with 2 replicas: $args"
grep -qF '"--metrics-bind-address=127.0.0.1:8080"' <<<"$args" || fail "/metrics still exposed: $args"
wait_for "the Deployment's 2 pods" replicas_are 2
# HA: a new replica before an old one stops, and a budget that keeps one through drains.
[ "$(jsonpath deployment/stateful-operator '{.spec.strategy.rollingUpdate.maxUnavailable}/{.spec.strategy.rollingUpdate.maxSurge}')" = 0/1 ] ||
	fail "strategy: $(jsonpath deployment/stateful-operator '{.spec.strategy}')"
[ "$(jsonpath poddisruptionbudget/stateful-operator '{.spec.maxUnavailable}')" = 1 ] || fail "no PodDisruptionBudget with 2 replicas"
gone service/stateful-operator-metrics || fail "the metrics Service is still there"
gone networkpolicy/stateful-operator-metrics || fail "the metrics port is still open"
key_kept "helm upgrade"

step "helm uninstall: the release's objects gone, the CRD kept"
out=$(helm uninstall "$REL" -n "$NS" --wait --timeout 120s 2>&1) || fail "$out"
INSTALLED=0
for o in $OBJECTS; do
	gone "$o" || fail "$o is still there"
done
gone poddisruptionbudget/stateful-operator || fail "the PodDisruptionBudget is still there"
[ -z "$(helm list -n "$NS" -q)" ] || fail "a release is left: $(helm list -n "$NS")"
kubectl get crd statefulclusters.stateful-operator.io >/dev/null || fail "uninstall deleted the CRD"
key_kept "helm uninstall"

in_release() { # release: whether its manifest holds the state key's Secret
	helm get manifest "$1" -n "$NS" | grep -q '^  name: stateful-operator-state-key$'
}
step "helm install again, same name: the release takes the kept Secret back, key unchanged"
INSTALLED=1
out=$(helm install "$REL" "$REPO/charts/stateful-operator" -n "$NS" --set scope=namespace \
	--set webhook.enabled=false --set replicaCount=0 2>&1) || fail "$out"
in_release "$REL" || fail "the Secret is not in the release"
key_kept "install again"
out=$(helm uninstall "$REL" -n "$NS" --wait --timeout 120s 2>&1) || fail "$out"
INSTALLED=0
key_kept "second uninstall"

step "helm install under another name: the other release's Secret is left out of it, unchanged"
REL=$REL-2
INSTALLED=1
out=$(helm install "$REL" "$REPO/charts/stateful-operator" -n "$NS" --set scope=namespace \
	--set webhook.enabled=false --set replicaCount=0 2>&1) || fail "$out"
if in_release "$REL"; then fail "the Secret of another release was taken into $REL"; fi
key_kept "install under another name"
out=$(helm uninstall "$REL" -n "$NS" --wait --timeout 120s 2>&1) || fail "$out"
INSTALLED=0
key_kept "uninstall of the other release"
