#!/usr/bin/env bash
# Smoke test of the test bed (SPEC section 6). Assumes `scripts/local-cluster up`
# ran. Checks that the simulated cluster does what every other test relies on:
#   - a PVC of each StorageClass (expandable, fixed) gets Bound;
#   - a StatefulSet's pods become Running+Ready and its claims Bound;
#   - a Job's pod Succeeds and the Job completes; the outcome=fail annotation fails a pod;
#   - the operator's identity can list StatefulSets cluster-wide but not delete a PVC;
#   - the real node (unless LOCAL_CLUSTER_REAL_NODE=0): local-node-0 is Ready, tainted
#     and labelled; a pod there runs a real container on a real file system of the
#     claim's size (local-fixed), reports through its termination message, and
#     its volume's backing file is gone once the claim is deleted.
#   - the second real node (unless LOCAL_CLUSTER_REAL_NODES=1): local-node-1 is Ready,
#     tainted, labelled real-1, at 10.250.0.129; a claim of local-wffc used by a pod
#     there gets its volume on local-node-1 (PV node affinity, backing file under
#     node-1/volumes), the pod an IP of that node's range, and a pod on local-node-0
#     fetches a file from it over the pod network (rsync daemon); deleting the claim
#     deletes the volume there.
# Everything it creates lives in one namespace, deleted on exit.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
eval "$("$REPO/scripts/local-cluster" env)"
[ -f "$SOP_OPERATOR_KUBECONFIG" ] || { echo "FAIL: no operator kubeconfig; run scripts/local-cluster up" >&2; exit 1; }

NS=testbed-smoke-$$
WAIT=${SMOKE_TIMEOUT:-90s}
# shellcheck source=../lib/steps.sh
source "$REPO/tests/lib/steps.sh"

on_fail() { # what fail prints besides its message
	echo "--- objects in $NS:" >&2
	kubectl get -n "$NS" pods,pvc,sts,jobs -o wide >&2 || true
	kubectl get events -n "$NS" --sort-by=.lastTimestamp 2>/dev/null | tail -n 20 >&2 || true
}
cleanup() {
	local rc=$?
	delete_namespace "$NS" || rc=1
	verdict "testbed smoke" $rc
}
trap cleanup EXIT

# A pod of the tools image on the real node labelled label (real: local-node-0,
# real-1: local-node-1) running command (the text of a single-quoted YAML
# string), with claim (if given) mounted at /data: YAML on stdout.
tools_pod() { # name label restartPolicy command [claim]
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: $3
  nodeSelector: {stateful-operator.io/testbed-node: $2}
  tolerations: [{key: stateful-operator.io/testbed-node, operator: Exists, effect: NoSchedule}]
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: localhost/testbed-tools:dev
    imagePullPolicy: Never
    command: [sh, -c, '$4']
EOF
	[ -z "${5:-}" ] || printf '    volumeMounts: [{name: data, mountPath: /data}]\n  volumes: [{name: data, persistentVolumeClaim: {claimName: %s}}]\n' "$5"
}

# Waits for the backing file of PV pv under <state>/<node dir>/volumes to go.
wait_backing_file_gone() { # node-dir pv
	local _
	for _ in $(seq 1 100); do
		[ -f "$LOCAL_CLUSTER_DIR/$1/volumes/$2.img" ] || return 0
		sleep 0.3
	done
	fail "the backing file of $2 is still there ($1/volumes)"
}

kubectl create namespace "$NS" >/dev/null
kubectl wait -n "$NS" --for=create serviceaccount/default --timeout="$WAIT" >/dev/null ||
	fail "default service account of $NS not created"

step "a PVC of each StorageClass gets Bound"
for class in expandable fixed; do
	kubectl apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc-$class}
spec:
  storageClassName: $class
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
EOF
done
for class in expandable fixed; do
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Bound "pvc/pvc-$class" --timeout="$WAIT" ||
		fail "pvc-$class not Bound"
done
[ "$(kubectl get storageclass expandable -o jsonpath='{.allowVolumeExpansion}')" = true ] ||
	fail "expandable does not allow expansion"
[ "$(kubectl get storageclass fixed -o jsonpath='{.allowVolumeExpansion}')" != true ] ||
	fail "fixed allows expansion"

step "a 2-replica StatefulSet with a volumeClaimTemplate: pods Running+Ready, PVCs Bound"
kubectl apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 2
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: registry.k8s.io/pause:3.10}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
EOF
kubectl rollout status -n "$NS" statefulset/web --timeout="$WAIT" || fail "StatefulSet web did not roll out"
kubectl wait -n "$NS" --for=condition=Ready pod/web-0 pod/web-1 --timeout="$WAIT" || fail "pods not Ready"
for p in web-0 web-1; do
	[ "$(kubectl get -n "$NS" pod "$p" -o jsonpath='{.status.phase}/{.spec.nodeName}')" = Running/kwok-node-0 ] ||
		fail "$p is not Running on kwok-node-0"
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Bound "pvc/data-$p" --timeout="$WAIT" ||
		fail "pvc/data-$p not Bound"
	[ "$(kubectl get -n "$NS" pvc "data-$p" -o jsonpath='{.spec.storageClassName}')" = expandable ] ||
		fail "data-$p did not get the default class"
done

step "a Job's pod Succeeds and the Job completes"
kubectl create job -n "$NS" ok --image=registry.k8s.io/pause:3.10 >/dev/null
kubectl wait -n "$NS" --for=condition=Complete job/ok --timeout="$WAIT" || fail "Job ok did not complete"
[ "$(kubectl get -n "$NS" pods -l job-name=ok -o jsonpath='{.items[*].status.phase}')" = Succeeded ] ||
	fail "the pod of Job ok did not Succeed"

step "a Job whose pods are annotated outcome=fail fails"
kubectl apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        testbed.stateful-operator.io/outcome: fail
        testbed.stateful-operator.io/message: disk full
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: registry.k8s.io/pause:3.10}
EOF
kubectl wait -n "$NS" --for=condition=Failed job/bad --timeout="$WAIT" || fail "Job bad did not fail"
[ "$(kubectl get -n "$NS" pods -l job-name=bad -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}')" = "disk full" ] ||
	fail "the failure message did not reach the pod status"

step "the operator identity: list StatefulSets everywhere, read no Secret"
OP=(kubectl --kubeconfig "$SOP_OPERATOR_KUBECONFIG")
[ "$("${OP[@]}" auth whoami -o jsonpath='{.status.userInfo.username}')" = \
	system:serviceaccount:stateful-operator-system:stateful-operator ] || fail "operator kubeconfig is not the service account"
"${OP[@]}" get statefulsets --all-namespaces -o name | grep -qx statefulset.apps/web ||
	fail "operator cannot list statefulsets cluster-wide"
[ "$("${OP[@]}" auth can-i get secrets -n "$NS" || true)" = no ] ||
	fail "operator may read Secrets"
if out=$("${OP[@]}" get secrets -n "$NS" 2>&1); then
	fail "operator read Secrets"
fi
grep -q Forbidden <<<"$out" || fail "reading Secrets as the operator failed, but not with Forbidden: $out"
[ "$("${OP[@]}" auth can-i create leases -n stateful-operator-system)" = yes ] || fail "operator cannot create leases"

[ "${LOCAL_CLUSTER_REAL_NODE:-1}" = 1 ] || exit 0

step "the real node: Ready, tainted and labelled"
[ "$(kubectl get node local-node-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] ||
	fail "local-node-0 is not Ready"
[ "$(kubectl get node local-node-0 -o jsonpath='{.metadata.labels.stateful-operator\.io/testbed-node}/{.spec.taints[0].key}')" = \
	real/stateful-operator.io/testbed-node ] || fail "local-node-0 lacks its label or taint"

step "a real container on a real file system of the claim's size"
kubectl apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: real}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-fixed
  resources: {requests: {storage: 32Mi}}
EOF
tools_pod real real Never 'echo hello >/data/f && df -B1 /data | awk "NR == 2 { print \$2 }" >/dev/termination-log' real |
	kubectl apply -n "$NS" -f - >/dev/null
kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Succeeded pod/real --timeout="$WAIT" ||
	fail "the pod on the real node did not Succeed"
size=$(kubectl get -n "$NS" pod real -o jsonpath='{.status.containerStatuses[0].state.terminated.message}')
((size > 24 * 1024 * 1024 && size <= 32 * 1024 * 1024)) || fail "df in the pod says '$size' bytes, not about 32Mi"
pv=$(kubectl get -n "$NS" pvc real -o jsonpath='{.spec.volumeName}')
[ -f "$LOCAL_CLUSTER_DIR/node/volumes/$pv.img" ] || fail "no backing file for $pv"

step "deleting the claim deletes the volume and its backing file"
kubectl delete -n "$NS" pod/real pvc/real --wait=true --timeout="$WAIT" >/dev/null || fail "delete failed"
wait_backing_file_gone node "$pv"
! kubectl get pv "$pv" >/dev/null 2>&1 || fail "PV $pv is still there"

# The second real node (unless LOCAL_CLUSTER_REAL_NODES=1).
[ "${LOCAL_CLUSTER_REAL_NODES:-2}" -ge 2 ] || exit 0

step "the second real node: Ready, tainted, labelled real-1, its own address"
[ "$(kubectl get node local-node-1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] ||
	fail "local-node-1 is not Ready"
[ "$(kubectl get node local-node-1 -o jsonpath='{.metadata.labels.stateful-operator\.io/testbed-node}/{.spec.taints[0].key}')" = \
	real-1/stateful-operator.io/testbed-node ] || fail "local-node-1 lacks its label or taint"
[ "$(kubectl get node local-node-1 -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')" = 10.250.0.129 ] ||
	fail "local-node-1's InternalIP is not 10.250.0.129"

step "a pod on local-node-1 on a volume made there (local-wffc), reached from a pod on local-node-0"
# The server: an rsync daemon on its volume; the client on the other node
# fetches a file from it over the pod network and reports it.
kubectl apply -n "$NS" -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: far}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-wffc
  resources: {requests: {storage: 300Mi}}
EOF2
tools_pod far real-1 Always 'echo from-local-node-1 >/data/f && printf "[data]\npath = /data\nread only = true\nuse chroot = false\nuid = 0\ngid = 0\n" >/tmp/r.conf && exec rsync --daemon --no-detach --port=8730 --config=/tmp/r.conf' far |
	kubectl apply -n "$NS" -f - >/dev/null
kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running pod/far --timeout="$WAIT" >/dev/null ||
	fail "the pod on local-node-1 did not start"
[ "$(kubectl get -n "$NS" pod far -o jsonpath='{.spec.nodeName}')" = local-node-1 ] || fail "pod far is not on local-node-1"
ip=$(kubectl get -n "$NS" pod far -o jsonpath='{.status.podIP}')
[[ $ip =~ ^10\.250\.0\.([0-9]+)$ ]] && ((BASH_REMATCH[1] >= 130 && BASH_REMATCH[1] <= 254)) ||
	fail "pod far's IP '$ip' is not in local-node-1's range 10.250.0.130-254"
pv=$(kubectl get -n "$NS" pvc far -o jsonpath='{.spec.volumeName}')
[ "$(kubectl get pv "$pv" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')" = \
	local-node-1 ] || fail "PV $pv is not bound to local-node-1"
[ -f "$LOCAL_CLUSTER_DIR/node-1/volumes/$pv.img" ] || fail "no backing file for $pv under node-1/volumes"
# The daemon may take a moment to listen after its pod runs: a few tries.
tools_pod near real Never "for i in \$(seq 20); do rsync rsync://$ip:8730/data/f /tmp/f && break; sleep 0.5; done; cat /tmp/f >/dev/termination-log" |
	kubectl apply -n "$NS" -f - >/dev/null
kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Succeeded pod/near --timeout="$WAIT" >/dev/null ||
	fail "the pod on local-node-0 could not fetch from $ip (pod network between the nodes)"
[ "$(kubectl get -n "$NS" pod near -o jsonpath='{.spec.nodeName}')" = local-node-0 ] || fail "pod near is not on local-node-0"
got=$(kubectl get -n "$NS" pod near -o jsonpath='{.status.containerStatuses[0].state.terminated.message}')
[ "$got" = from-local-node-1 ] || fail "the pod on local-node-0 read '$got' from local-node-1, not from-local-node-1"

step "deleting the claim on local-node-1 deletes its volume there"
kubectl delete -n "$NS" pod/far pod/near pvc/far --wait=true --timeout="$WAIT" >/dev/null || fail "delete failed"
wait_backing_file_gone node-1 "$pv"
