#!/usr/bin/env bash
# Checks deploy/ (SPEC section 5) against the local control plane. Assumes
# `scripts/local-cluster up` ran.
#   - both overlays (cluster, namespace) pass a server-side dry-run apply;
#   - what each renders: a 2-replica Deployment with --leader-elect and the
#     hardened pod, rolled with a surge (maxSurge 1, maxUnavailable 0) and a
#     PodDisruptionBudget of one replica at a time; the StatefulCluster CRD; ClusterRole+Binding only in the
#     cluster overlay (with a Role for the state key's Secret), Role+Binding
#     only in the namespace overlay, which also scopes the operator to the
#     Role's namespace; no "*" in any
#     apiGroups/resources/verbs;
#   - the RBAC that `up` applied (deploy/rbac/cluster) lets the operator's
#     ServiceAccount do what it needs and nothing of a sample it must not;
#   - the kubelet usage source's ServiceAccount (usage-reader.yaml): only
#     get nodes/stats; the operator may mint its tokens and no other's, and
#     has no nodes/stats of its own;
#   - the namespaced Role, bound in a scratch namespace, grants its verbs there
#     and nothing elsewhere;
#   - the admission webhook in both overlays: its Service, a configuration with
#     failurePolicy Ignore, sideEffects None, the match condition, the opt-out
#     selectors (and, in the namespace overlay, only the operator's namespace),
#     the Deployment serving it on :9443, and its RBAC: its Secret and its one
#     configuration, nothing more;
#   - the operator's two Secrets shipped empty (no data, no type: re-applying
#     keeps what the operator wrote), and its rights on Secrets only get and
#     update of those two by name: no create, list or watch, no other Secret;
#   - NetworkPolicies on the operator's pods that admit the probe port and
#     the webhook port, and nothing else (/metrics stays on loopback).
# The only object it creates is that scratch namespace (with a ServiceAccount,
# Role and RoleBinding in it), deleted on exit.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
eval "$("$REPO/scripts/local-cluster" env)"
kubectl version >/dev/null 2>&1 || { echo "FAIL: no API server; run scripts/local-cluster up" >&2; exit 1; }

OPNS=stateful-operator-system
SA=system:serviceaccount:$OPNS:stateful-operator
NS=deploy-manifests-$$
TMP=$(mktemp -d)
CREATED_NS=0
# shellcheck source=../lib/steps.sh
source "$REPO/tests/lib/steps.sh"

cleanup() {
	local rc=$?
	if [ "$CREATED_NS" = 1 ]; then
		delete_namespace "$NS" || rc=1
	fi
	rm -rf "$TMP"
	verdict "deploy manifests" $rc
}
trap cleanup EXIT

# One line per rendered object: kind|namespace|name|replicas|args|env|pod
# security|RBAC (apiGroups, resources, verbs of every rule)|binding subjects.
# No {range}: kubectl reuses one jsonpath printer across objects, and a range
# breaks on the second object.
FIELDS='{.kind}|{.metadata.namespace}|{.metadata.name}|{.spec.replicas}'
FIELDS+='|{.spec.template.spec.containers[0].args}|{.spec.template.spec.containers[0].env}'
FIELDS+='|{.spec.template.spec.containers[0].securityContext}'
FIELDS+='|{.rules[*].apiGroups} {.rules[*].resources} {.rules[*].verbs}|{.roleRef.kind}/{.roleRef.name}'
FIELDS+=' {.subjects}{"\n"}'

render() { # overlay -> $TMP/<overlay>.txt, one line per object (see FIELDS)
	kubectl kustomize "$REPO/deploy/overlays/$1" >"$TMP/$1.yaml" || fail "kubectl kustomize failed"
	kubectl create --dry-run=client -f "$TMP/$1.yaml" -o jsonpath="$FIELDS" >"$TMP/$1.txt" ||
		fail "cannot read back the rendered objects"
}
field() { # overlay kind column: that column of the object(s) of that kind
	awk -F'|' -v k="$2" -v c="$3" '$1 == k { print $c }' "$TMP/$1.txt"
}
count() { # overlay kind: how many objects of that kind
	awk -F'|' -v k="$2" '$1 == k { n++ } END { print n + 0 }' "$TMP/$1.txt"
}

for overlay in cluster namespace; do
	step "$overlay overlay: server-side dry-run apply"
	out=$(kubectl apply --dry-run=server -k "$REPO/deploy/overlays/$overlay" 2>&1) || fail "$out"

	step "$overlay overlay: rendered objects"
	render "$overlay"
	for kind in Namespace Deployment CustomResourceDefinition; do
		[ "$(count "$overlay" "$kind")" = 1 ] || fail "expected one $kind: $(cut -d'|' -f1 "$TMP/$overlay.txt" | xargs)"
	done
	# The operator's, and in cluster scope the kubelet usage source's.
	[ "$(count "$overlay" ServiceAccount)" = "$([ "$overlay" = cluster ] && echo 2 || echo 1)" ] ||
		fail "ServiceAccounts: $(awk -F'|' '$1 == "ServiceAccount" { print $3 }' "$TMP/$overlay.txt" | xargs)"
	[ "$(field "$overlay" Deployment 2)" = "$OPNS" ] || fail "Deployment not in $OPNS"
	[ "$(field "$overlay" CustomResourceDefinition 3)" = statefulclusters.stateful-operator.io ] ||
		fail "the CRD is not statefulclusters.stateful-operator.io"
	[ "$(field "$overlay" Deployment 4)" = 2 ] || fail "Deployment replicas is not 2"
	args=$(field "$overlay" Deployment 5)
	grep -qF '"--leader-elect"' <<<"$args" || fail "no --leader-elect in $args"
	env=$(field "$overlay" Deployment 6)
	grep -qF '{"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}' <<<"$env" ||
		fail "POD_NAMESPACE is not from the downward API: $env"
	grep -qF '"name":"POD_NAME"' <<<"$env" || fail "no POD_NAME: $env"
	sc=$(field "$overlay" Deployment 7)
	for want in '"runAsNonRoot":true' '"readOnlyRootFilesystem":true' '"allowPrivilegeEscalation":false' \
		'"drop":["ALL"]'; do
		grep -qF "$want" <<<"$sc" || fail "container securityContext lacks $want: $sc"
	done
	# Upgrades and drains keep a leader candidate: a new pod Ready before an
	# old one goes, and a drain evicts one replica at a time.
	strategy=$(kubectl create --dry-run=client -f "$TMP/$overlay.yaml" -o jsonpath='{.kind}|{.spec.strategy}{"\n"}' |
		awk -F'|' '$1 == "Deployment" { print $2 }')
	[ "$strategy" = '{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0},"type":"RollingUpdate"}' ] ||
		fail "the Deployment's strategy does not keep a Ready replica while it rolls: $strategy"
	[ "$(count "$overlay" PodDisruptionBudget)" = 1 ] || fail "no PodDisruptionBudget"
	pdb=$(kubectl create --dry-run=client -f "$TMP/$overlay.yaml" -o jsonpath='{.kind}|{.metadata.namespace}|{.spec}{"\n"}' |
		awk -F'|' '$1 == "PodDisruptionBudget" { print $2 "|" $3 }')
	[ "$pdb" = "$OPNS"'|{"maxUnavailable":1,"selector":{"matchLabels":{"app.kubernetes.io/name":"stateful-operator"}},"unhealthyPodEvictionPolicy":"AlwaysAllow"}' ] ||
		fail "the PodDisruptionBudget does not let one replica go at a time: $pdb"
	rbac=$(awk -F'|' '$1 ~ /Role$/ { print $8 }' "$TMP/$overlay.txt")
	[ -n "$rbac" ] || fail "no RBAC rules rendered"
	if grep -qF '*' <<<"$rbac"; then
		fail "a wildcard in the RBAC rules: $rbac"
	fi
done

have() { # overlay kind n: the overlay renders exactly n objects of that kind
	[ "$(count "$1" "$2")" = "$3" ] || fail "expected $3 $2 in the $1 overlay, got $(count "$1" "$2")"
}

WH='{.kind}|{.webhooks[0].failurePolicy}|{.webhooks[0].sideEffects}|{.webhooks[0].rules}'
WH+='|{.webhooks[0].matchConditions[0].expression}|{.webhooks[0].objectSelector}|{.webhooks[0].namespaceSelector}'
WH+='|{.webhooks[0].clientConfig.service}{"\n"}'
for overlay in cluster namespace; do
	step "$overlay overlay: the admission webhook"
	have "$overlay" MutatingWebhookConfiguration 1
	have "$overlay" Service 1
	[ "$(field "$overlay" Service 3)" = stateful-operator-webhook ] || fail "the Service is not stateful-operator-webhook"
	# Every replica that can answer is Ready, the standby too: the Service
	# sends reviews to Ready replicas only, none still syncing or shutting down.
	ready=$(kubectl create --dry-run=client -f "$TMP/$overlay.yaml" -o jsonpath='{.kind}|{.spec.publishNotReadyAddresses}{"\n"}' |
		awk -F'|' '$1 == "Service" { print $2 }')
	[ -z "$ready" ] || [ "$ready" = false ] || fail "the webhook Service publishes not-ready addresses: \"$ready\""
	grep -qF '"--webhook-bind-address=:9443"' <<<"$(field "$overlay" Deployment 5)" ||
		fail "the Deployment does not serve the webhook on :9443"
	hook=$(kubectl create --dry-run=client -f "$TMP/$overlay.yaml" -o jsonpath="$WH" | grep '^MutatingWebhookConfiguration|')
	IFS='|' read -r _ policy effects rules expr objsel nssel svc <<<"$hook"
	[ "$policy" = Ignore ] || fail "failurePolicy is $policy, not Ignore"
	[ "$effects" = None ] || fail "sideEffects is $effects, not None"
	grep -qF '"operations":["UPDATE"]' <<<"$rules" || fail "the rules are not UPDATE only: $rules"
	grep -qF '"resources":["statefulsets"]' <<<"$rules" || fail "the rules are not statefulsets: $rules"
	grep -qF 'object.spec.volumeClaimTemplates' <<<"$expr" || fail "no match condition on the templates: $expr"
	for sel in "$objsel" "$nssel"; do
		grep -qF '"key":"stateful-operator.io/webhook","operator":"NotIn","values":["disabled"]' <<<"$sel" ||
			fail "no opt-out label in a selector: $sel"
	done
	grep -qF '"name":"stateful-operator-webhook"' <<<"$svc" || fail "the configuration calls another Service: $svc"
	if [ "$overlay" = namespace ]; then
		grep -qF "\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"In\",\"values\":[\"$OPNS\"]" <<<"$nssel" ||
			fail "the namespace overlay's webhook is not limited to $OPNS: $nssel"
	elif grep -qF 'kubernetes.io/metadata.name' <<<"$nssel"; then
		fail "the cluster overlay's webhook is limited to a namespace: $nssel"
	fi
done

for overlay in cluster namespace; do
	step "$overlay overlay: the operator's Secrets, shipped empty"
	# One JSON document per object: read as one array.
	kubectl create --dry-run=client -f "$TMP/$overlay.yaml" -o json | jq -s 'map(if .kind == "List" then .items[] else . end)' \
		>"$TMP/$overlay.json" || fail "cannot read back the rendered objects"
	secrets=$(jq -c '[.[] | select(.kind == "Secret")] | sort_by(.metadata.name)' "$TMP/$overlay.json")
	jq -e --arg ns "$OPNS" 'map(.metadata.name) == ["stateful-operator-state-key", "stateful-operator-webhook-cert"]
		and all(.metadata.namespace == $ns and (has("data") or has("stringData") or has("type") | not))' \
		<<<"$secrets" >/dev/null || fail "not the two empty Secrets: $secrets"
	rules=$(jq -c '[.[] | select(.kind | test("Role$")) | .rules[] | select(.resources | index("secrets"))
		| {names: .resourceNames, verbs: .verbs}] | sort_by(.names)' "$TMP/$overlay.json")
	[ "$rules" = '[{"names":["stateful-operator-state-key"],"verbs":["get","update"]},{"names":["stateful-operator-webhook-cert"],"verbs":["get","update"]}]' ] ||
		fail "rules on secrets other than get/update by name: $rules"

	step "$overlay overlay: NetworkPolicies admit the probe and webhook ports, nothing else"
	policies=$(jq -c '[.[] | select(.kind == "NetworkPolicy")] | sort_by(.metadata.name)' "$TMP/$overlay.json")
	jq -e --arg ns "$OPNS" 'all(.metadata.namespace == $ns and .spec.policyTypes == ["Ingress"]
			and .spec.podSelector == {"matchLabels": {"app.kubernetes.io/name": "stateful-operator"}})
		and map(.spec.ingress) == [[{"ports": [{"port": 8081, "protocol": "TCP"}]}],
			[{"ports": [{"port": 9443, "protocol": "TCP"}]}]]' <<<"$policies" >/dev/null ||
		fail "NetworkPolicies: $policies"
	grep -qF '"--metrics-bind-address=127.0.0.1:8080"' <<<"$(field "$overlay" Deployment 5)" ||
		fail "/metrics not on loopback: $(field "$overlay" Deployment 5)"
done

step "cluster overlay: ClusterRole + ClusterRoleBinding (and the webhook's), Roles for the state key's and the webhook's Secrets in the operator's namespace, all namespaces"
have cluster ClusterRole 3
have cluster ClusterRoleBinding 3
have cluster Role 3
have cluster RoleBinding 3
[ "$(field cluster Role 2 | sort -u)" = "$OPNS" ] || fail "the Secrets' Roles are not in $OPNS"
if grep -qF -- '--namespace' <<<"$(field cluster Deployment 5)"; then
	fail "the cluster overlay restricts the operator to a namespace"
fi
grep -qF "ClusterRole/stateful-operator [{\"kind\":\"ServiceAccount\",\"name\":\"stateful-operator\",\"namespace\":\"$OPNS\"}]" \
	<<<"$(field cluster ClusterRoleBinding 9)" || fail "ClusterRoleBinding does not bind the ServiceAccount"
# The kubelets see another identity's token: the operator's own ClusterRole has no nodes/stats.
if awk -F'|' '$1 == "ClusterRole" && $3 == "stateful-operator" { print $8 }' "$TMP/cluster.txt" | grep -qF 'nodes/stats'; then
	fail "the operator's ClusterRole grants nodes/stats: the kubelets must see only the usage reader's token"
fi
[ "$(awk -F'|' '$1 == "ClusterRole" && $3 == "stateful-operator-usage-reader" { print $8 }' "$TMP/cluster.txt")" = \
	'[""] ["nodes/stats"] ["get"]' ] || fail "the usage reader's ClusterRole is not get nodes/stats alone"

step "namespace overlay: Roles + RoleBindings in the operator's namespace, no ClusterRole but the webhook's, scope = that namespace"
have namespace Role 2
have namespace RoleBinding 2
have namespace ClusterRole 1
have namespace ClusterRoleBinding 1
[ "$(field namespace ClusterRole 3)" = stateful-operator-webhook ] || fail "a ClusterRole other than the webhook's"
[ "$(field namespace Role 2 | sort -u)" = "$OPNS" ] || fail "Role not in $OPNS"
[ "$(field namespace RoleBinding 2 | sort -u)" = "$OPNS" ] || fail "RoleBinding not in $OPNS"
# $(POD_NAMESPACE) is expanded by the kubelet from the env checked above, i.e.
# the pod's own namespace, which is the Role's.
# shellcheck disable=SC2016 # a literal $(POD_NAMESPACE)
grep -qF '"--namespace=$(POD_NAMESPACE)"' <<<"$(field namespace Deployment 5)" ||
	fail 'the namespace overlay does not pass --namespace=$(POD_NAMESPACE)'
grep -qF "Role/stateful-operator [{\"kind\":\"ServiceAccount\",\"name\":\"stateful-operator\",\"namespace\":\"$OPNS\"}]" \
	<<<"$(field namespace RoleBinding 9)" || fail "RoleBinding does not bind the ServiceAccount"
for r in persistentvolumes storageclasses nodes namespaces; do
	if grep -qF "\"$r\"" <<<"$(field namespace Role 8)"; then
		fail "the Role names the cluster-scoped $r"
	fi
done

can() { # user verb resource [kubectl flags...]: prints yes or no
	local user=$1
	shift
	kubectl auth can-i --as="$user" "$@" 2>/dev/null || true
}
expect() { # want user verb resource flags...
	local want=$1 got
	shift
	got=$(can "$@")
	[ "$got" = "$want" ] || fail "can-i as ${1##*:} ${*:2}: got '$got', want '$want'"
}

step "cluster RBAC applied by local-cluster up: what the operator may and may not do"
expect yes "$SA" list statefulsets.apps --all-namespaces
expect yes "$SA" watch pods --all-namespaces
expect yes "$SA" watch persistentvolumeclaims --all-namespaces
expect yes "$SA" create events -n default
expect yes "$SA" patch events -n default
expect yes "$SA" update leases.coordination.k8s.io -n "$OPNS"
# Nothing the code does not use yet.
expect no "$SA" update pods -n default
expect no "$SA" patch pods -n default
expect no "$SA" create persistentvolumes
expect no "$SA" update persistentvolumes
expect no "$SA" patch jobs.batch -n default
# Scale-down cleanup: cleanup pods, claims deleted after success, live checks.
expect yes "$SA" create pods -n default
expect yes "$SA" get pods -n default
expect yes "$SA" get persistentvolumeclaims -n default
expect no "$SA" create namespaces
expect no "$SA" get secrets -n "$OPNS"
expect no "$SA" get secrets --all-namespaces
# The state key: that one Secret, in the operator's own namespace, read and
# filled (installed empty); never created, no other Secret.
expect yes "$SA" get secrets/stateful-operator-state-key -n "$OPNS"
expect yes "$SA" update secrets/stateful-operator-state-key -n "$OPNS"
expect no "$SA" create secrets -n "$OPNS"
expect no "$SA" get secrets/stateful-operator-state-key -n default
expect no "$SA" create secrets -n default
expect no "$SA" list secrets -n "$OPNS"
expect no "$SA" update secrets/stateful-operator-state-key -n default
expect no "$SA" watch secrets -n "$OPNS"
expect no "$SA" patch secrets/stateful-operator-state-key -n "$OPNS"
expect no "$SA" delete secrets/stateful-operator-state-key -n "$OPNS"
expect no "$SA" get secrets/another-secret -n "$OPNS"
expect no "$SA" update secrets/another-secret -n "$OPNS"
# The webhook: its certificate's Secret (installed empty, filled and renewed
# by the replicas), and the caBundle of its one configuration.
expect yes "$SA" get secrets/stateful-operator-webhook-cert -n "$OPNS"
expect yes "$SA" update secrets/stateful-operator-webhook-cert -n "$OPNS"
expect no "$SA" update secrets/stateful-operator-webhook-cert -n default
expect no "$SA" delete secrets/stateful-operator-webhook-cert -n "$OPNS"
expect yes "$SA" patch mutatingwebhookconfigurations.admissionregistration.k8s.io/stateful-operator
expect no "$SA" patch mutatingwebhookconfigurations.admissionregistration.k8s.io/another
expect no "$SA" create mutatingwebhookconfigurations.admissionregistration.k8s.io
expect yes "$SA" watch volumeattributesclasses.storage.k8s.io
expect yes "$SA" patch statefulsets.apps -n default
expect yes "$SA" patch persistentvolumeclaims -n default
# The copy strategy: new claims, rebinding (claims deleted once their PV is
# Retain), PV policy and pre-binding, copy Jobs, state on the saved copy.
expect yes "$SA" create persistentvolumeclaims -n default
expect yes "$SA" delete persistentvolumeclaims -n default
expect yes "$SA" watch persistentvolumes
expect yes "$SA" get persistentvolumes
expect yes "$SA" patch persistentvolumes
expect yes "$SA" delete persistentvolumes
expect yes "$SA" create jobs.batch -n default
expect yes "$SA" delete jobs.batch -n default
expect yes "$SA" watch jobs.batch --all-namespaces
expect yes "$SA" patch configmaps -n default
expect yes "$SA" list storageclasses.storage.k8s.io
# autoresize: the policies of namespaces and classes (annotations), read, never written.
expect yes "$SA" watch namespaces
expect no "$SA" patch namespaces
expect no "$SA" patch storageclasses.storage.k8s.io
expect no "$SA" update statefulsets.apps -n default
# StatefulCluster: the CR (state annotation by patch), its status, its
# ControllerRevisions, members' pods and claims, and nodes (lost members).
expect yes "$SA" watch statefulclusters.stateful-operator.io --all-namespaces
expect yes "$SA" get statefulclusters.stateful-operator.io -n default
expect yes "$SA" patch statefulclusters.stateful-operator.io -n default
expect yes "$SA" update statefulclusters.stateful-operator.io --subresource=status -n default
expect yes "$SA" patch statefulclusters.stateful-operator.io --subresource=status -n default
expect yes "$SA" update statefulclusters.stateful-operator.io --subresource=finalizers -n default
expect no "$SA" update statefulclusters.stateful-operator.io -n default
expect no "$SA" create statefulclusters.stateful-operator.io -n default
expect no "$SA" delete statefulclusters.stateful-operator.io -n default
expect yes "$SA" watch controllerrevisions.apps --all-namespaces
expect yes "$SA" create controllerrevisions.apps -n default
expect yes "$SA" delete controllerrevisions.apps -n default
expect yes "$SA" patch controllerrevisions.apps -n default
expect no "$SA" update controllerrevisions.apps -n default
expect yes "$SA" delete pods -n default
expect yes "$SA" list nodes
expect yes "$SA" watch nodes
expect no "$SA" get nodes
expect no "$SA" patch nodes
expect no "$SA" delete nodes

step "the kubelet usage source's ServiceAccount (usage-reader.yaml, applied by local-cluster up): get nodes/stats, nothing else"
USA=system:serviceaccount:$OPNS:stateful-operator-usage-reader
expect yes "$USA" get nodes --subresource=stats
expect no "$USA" get nodes --subresource=proxy
expect no "$USA" list nodes
expect no "$USA" create pods -n kube-system
expect no "$USA" delete persistentvolumes
expect no "$USA" create serviceaccounts --subresource=token -n "$OPNS"
expect yes "$SA" create serviceaccounts/stateful-operator-usage-reader --subresource=token -n "$OPNS"
expect no "$SA" create serviceaccounts/stateful-operator --subresource=token -n "$OPNS"
expect no "$SA" create serviceaccounts/default --subresource=token -n kube-system

step "namespace Role, bound in a scratch namespace: its verbs there, nothing elsewhere"
kubectl create namespace "$NS" >/dev/null
CREATED_NS=1
# The ServiceAccount goes through kustomize too: kustomize moves a binding's
# subject to the new namespace only when that ServiceAccount is in the build
# (as it is in deploy/overlays/namespace).
mkdir "$TMP/scratch"
cp "$REPO/deploy/base/serviceaccount.yaml" "$TMP/scratch/"
cat >"$TMP/scratch/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $NS
resources:
- serviceaccount.yaml
- $(realpath --relative-to="$TMP/scratch" "$REPO/deploy/rbac/namespace")
EOF
out=$(kubectl apply -k "$TMP/scratch" 2>&1) || fail "$out"
NSA=system:serviceaccount:$NS:stateful-operator
# The RBAC authorizer reads from an informer: give the binding a moment.
for _ in $(seq 50); do
	[ "$(can "$NSA" list statefulsets.apps -n "$NS")" = yes ] && break
	sleep 0.2
done
expect yes "$NSA" list statefulsets.apps -n "$NS"
expect yes "$NSA" watch pods -n "$NS"
expect yes "$NSA" watch persistentvolumeclaims -n "$NS"
expect yes "$NSA" create events -n "$NS"
expect yes "$NSA" patch events -n "$NS"
expect yes "$NSA" update leases.coordination.k8s.io -n "$NS"
expect no "$NSA" list statefulsets.apps -n default
expect no "$NSA" list statefulsets.apps --all-namespaces
expect no "$NSA" list persistentvolumes
expect no "$NSA" list storageclasses.storage.k8s.io
expect no "$NSA" list namespaces
expect yes "$NSA" delete persistentvolumeclaims -n "$NS"
expect yes "$NSA" create pods -n "$NS"
expect yes "$NSA" create persistentvolumeclaims -n "$NS"
expect yes "$NSA" watch statefulclusters.stateful-operator.io -n "$NS"
expect yes "$NSA" patch statefulclusters.stateful-operator.io -n "$NS"
expect yes "$NSA" update statefulclusters.stateful-operator.io --subresource=status -n "$NS"
expect no "$NSA" update statefulclusters.stateful-operator.io -n "$NS"
expect no "$NSA" list statefulclusters.stateful-operator.io -n default
expect no "$NSA" list statefulclusters.stateful-operator.io --all-namespaces
expect yes "$NSA" create controllerrevisions.apps -n "$NS"
expect yes "$NSA" delete controllerrevisions.apps -n "$NS"
expect no "$NSA" create controllerrevisions.apps -n default
expect no "$NSA" list nodes
expect no "$NSA" create persistentvolumeclaims -n default
expect no "$NSA" create pods -n default
expect no "$NSA" get secrets -n "$NS"
expect yes "$NSA" get secrets/stateful-operator-state-key -n "$NS"
expect yes "$NSA" update secrets/stateful-operator-state-key -n "$NS"
expect no "$NSA" update secrets/other -n "$NS"
expect yes "$NSA" patch configmaps -n "$NS"
expect no "$NSA" create secrets -n "$NS"
expect no "$NSA" list secrets -n "$NS"
expect no "$NSA" get secrets/another-secret -n "$NS"
expect no "$NSA" create secrets -n default
expect no "$NSA" create namespaces
