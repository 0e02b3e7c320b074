#!/usr/bin/env bash
# The Helm chart (charts/stateful-operator) on the local control plane: a
# release installed, upgraded and uninstalled, and its objects there, changed
# and gone. Assumes `scripts/local-cluster up` ran (helm comes with its PATH).
#
# The release uses namespace scope with the webhook off, in a scratch
# namespace: then it owns no cluster-scoped object, so it cannot collide with
# what `up` applied from deploy/ (the cluster RBAC, not Helm's) nor disturb
# other tests. Its pods are pinned to the simulated node kwok-node-0: no
# operator really runs. The CRDs are in place already (`up`): Helm leaves an
# existing CRD alone, and never deletes one.
#   - install: Deployment (1 replica, no --leader-elect, --namespace), its
#     ServiceAccount, Role and RoleBinding (the ServiceAccount may act in the
#     namespace and not elsewhere), the metrics Service; all Helm's;
#   - upgrade to 2 replicas without the metrics Service: the Deployment has 2
#     replicas, --leader-elect, and its ReplicaSet 2 pods; the Service is gone;
#     the release is at revision 2;
#   - uninstall: every object of the release gone, the CRD still there.
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

# The release's objects (kind/name).
OBJECTS="deployment/stateful-operator serviceaccount/stateful-operator role/stateful-operator
rolebinding/stateful-operator service/stateful-operator-metrics"

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
	--set scope=namespace --set webhook.enabled=false --set replicas=1 --set metrics.service.enabled=true \
	--set 'nodeSelector.kubernetes\.io/hostname=kwok-node-0' 2>&1) || fail "$out"
[ "$(helm status "$REL" -n "$NS" -o json | jq -r '.info.status + " " + (.version | tostring)')" = "deployed 1" ] ||
	fail "release not deployed at revision 1: $(helm status "$REL" -n "$NS" 2>&1)"

step "install: the release's objects are there, Helm's"
for o in $OBJECTS; do
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

step "install: the ServiceAccount may act in its namespace, not elsewhere"
wait_for "the RoleBinding to take effect" sa_can_list_statefulsets
[ "$(sa_can patch persistentvolumeclaims "$NS")" = yes ] || fail "cannot patch claims in $NS"
[ "$(sa_can list statefulsets.apps default)" = no ] || fail "may list StatefulSets in default"

step "helm upgrade: 2 replicas, no metrics Service"
generation=$(jsonpath deployment/stateful-operator '{.metadata.generation}')
out=$(helm upgrade "$REL" "$REPO/charts/stateful-operator" -n "$NS" --reuse-values \
	--set replicas=2 --set metrics.service.enabled=false 2>&1) || fail "$out"
[ "$(helm status "$REL" -n "$NS" -o json | jq -r '.info.status + " " + (.version | tostring)')" = "deployed 2" ] ||
	fail "release not deployed at revision 2: $(helm status "$REL" -n "$NS" 2>&1)"
[ "$(jsonpath deployment/stateful-operator '{.metadata.generation}')" -gt "$generation" ] ||
	fail "the Deployment did not change"
args=$(jsonpath deployment/stateful-operator '{.spec.template.spec.containers[0].args}')
grep -qF '"--leader-elect"' <<<"$args" || fail "no --leader-elect with 2 replicas: $args"
grep -qF '"--metrics-bind-address=127.0.0.1:8080"' <<<"$args" || fail "/metrics still exposed: $args"
wait_for "the Deployment's 2 pods" replicas_are 2
gone service/stateful-operator-metrics || fail "the metrics Service is still there"

step "helm uninstall: the release's objects gone, the CRD kept"
out=$(helm uninstall "$REL" -n "$NS" --wait --timeout 120s 2>&1) || fail "$out"
INSTALLED=0
for o in $OBJECTS; do
	gone "$o" || fail "$o is still there"
done
[ -z "$(helm list -n "$NS" -q)" ] || fail "a release is left: $(helm list -n "$NS")"
kubectl get crd statefulclusters.stateful-operator.io >/dev/null || fail "uninstall deleted the CRD"
