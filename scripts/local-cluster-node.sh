# shellcheck shell=bash
# The test bed's real node, local-node-0: containerd (Debian's 1.6, or 2.x
# built by scripts/testbed-build for kubelets from 1.36) with Debian's runc, the
# kubelet of the test bed's version, CNI bridge/host-local/loopback (Debian's
# containernetworking-plugins) on a bridge private to this machine, and a
# forwarder that lets pods reach the API server. Sourced by scripts/local-cluster,
# whose process helpers (start_component, stop_component, pid_of) it uses.
#
# The node is tainted stateful-operator.io/testbed-node=real:NoSchedule and
# labelled stateful-operator.io/testbed-node=real: pods that do not ask for it
# (every kwok test) never land on it.
#
# Network: bridge sop-testbed0, 10.250.0.1/24; pods get 10.250.0.2-254 with a
# route to the bridge only. ipMasq is off and nothing routes 10.250.0.0/24 off
# this machine. The kubelet serves on 10.250.0.1:<base+250>; the API server is
# forwarded from 10.250.0.1:<base+443> (its certificate names that address), so
# a pod that sets KUBERNETES_SERVICE_HOST=10.250.0.1 and KUBERNETES_SERVICE_PORT
# to that port is in-cluster (there is no kube-proxy for 10.96.0.1).
#
# What it makes: files under <state>/node (kept after 'down' for its logs and
# images; the next 'up' starts afresh), mounts under <state>/node and
# $NODE_RUN, loop devices of the test bed's volumes, and the bridge: 'down'
# stops the pods, unmounts, detaches and deletes those. The bridge and its
# address are fixed, so one real node runs per machine: a second test bed
# (another LOCAL_CLUSTER_DIR) must set LOCAL_CLUSTER_REAL_NODE=0.

NODE_NAME=local-node-0
NODE_BRIDGE=sop-testbed0
NODE_IP=10.250.0.1
NODE_SUBNET=10.250.0.0/24
NODE_TAINT_KEY=stateful-operator.io/testbed-node

node_paths() {
	NODE_DIR=$STATE/node
	# Short, on tmpfs, and distinct per state dir: unix socket paths are
	# limited to 108 bytes, and containerd keeps its runtime state here.
	NODE_RUN=/run/sop-testbed-$(printf '%s' "$STATE" | sha256sum | cut -c1-8)
	CONTAINERD_SOCK=$NODE_RUN/containerd.sock
	KUBELET_PORT=$((PORT_BASE + 250))
	KUBELET_HEALTHZ_PORT=$((PORT_BASE + 248))
	VOLUMES_DIR=$NODE_DIR/volumes
}

node_wanted() { [ "${LOCAL_CLUSTER_REAL_NODE:-1}" = 1 ]; }

# containerd 2.x from the test bed's build when the kubelet needs it (1.36 and
# later; scripts/testbed-build puts it in $BIN), else Debian's 1.6.
runtime_bin() { # name
	if [ -n "${BIN:-}" ] && [ -x "$BIN/$1" ]; then echo "$BIN/$1"; else echo "$1"; fi
}
ctr_() { "$(runtime_bin ctr)" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

node_pki() { # called by gen_pki
	local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
	sign_cert ca kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
	sign_cert ca kubelet-serving "/CN=$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,DNS:$NODE_NAME"
	# The API server's identity towards kubelets (logs, exec, port-forward).
	sign_cert ca apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
}

write_node_configs() {
	mkdir -p "$NODE_DIR/cni" "$NODE_DIR/cni-ipam" "$NODE_DIR/kubelet" "$NODE_DIR/pod-logs" \
		"$NODE_DIR/containerd" "$VOLUMES_DIR" "$NODE_RUN"
	write_kubeconfig "$NODE_DIR/kubelet.kubeconfig" "    client-certificate-data: $(base64 -w0 "$PKI/kubelet-client.crt")
    client-key-data: $(base64 -w0 "$PKI/kubelet-client.key")"

	cat >"$NODE_DIR/cni/10-testbed.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sop-testbed",
  "plugins": [{
    "type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$NODE_DIR/cni-ipam",
             "ranges": [[{"subnet": "$NODE_SUBNET", "gateway": "$NODE_IP"}]]}
  }]
}
EOF

	# containerd (config version 2, which 2.x migrates): CRI with runc and the
	# cgroupfs driver (no systemd here), our pause image, our CNI configuration.
	# restrict_oom_score_adj: root on this machine lacks CAP_SYS_RESOURCE,
	# so no process may lower its oom_score_adj; unrestricted, every pod
	# sandbox (-998) fails with "failed to update /proc/self/oom_score_adj:
	# Permission denied" (runc). Restricted, no score goes below containerd's.
	cat >"$NODE_DIR/containerd/config.toml" <<EOF
version = 2
root = "$NODE_DIR/containerd/root"
state = "$NODE_RUN/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$NODE_RUN/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/testbed-pause:dev"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  enable_tls_streaming = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$NODE_DIR/cni"
EOF

	# failCgroupV1: false: this machine has cgroups v1 (hybrid); kubelets from
	# 1.35 refuse v1 unless told (KEP-5573). Image GC is off: no registry
	# could bring an image back. Eviction thresholds are low: the host disk
	# is shared with everything else on this machine.
	cat >"$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: $NODE_DIR/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
maxPods: 60
# Volume usage (stats summary, kubelet_volume_stats_*) measured every 5 s,
# not every minute: the autoresize tests fill volumes and wait for growth.
volumeStatsAggPeriod: 5s
clusterDomain: cluster.local
registerWithTaints:
- {key: $NODE_TAINT_KEY, value: real, effect: NoSchedule}
EOF
}

node_bridge_up() {
	ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || ip link add "$NODE_BRIDGE" type bridge
	: >"$NODE_RUN/bridge" # ours: node_cleanup may delete it
	ip addr show dev "$NODE_BRIDGE" | grep -q "inet $NODE_IP/" || ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
	ip link set "$NODE_BRIDGE" up
}

start_containerd() {
	# PATH: containerd finds its runc shim there.
	start_component containerd env PATH="${BIN:+$BIN:}$PATH" "$(runtime_bin containerd)" \
		--config "$NODE_DIR/containerd/config.toml"
}

start_kubelet() {
	start_component kubelet "$BIN/kubelet" \
		--config="$NODE_DIR/kubelet.yaml" \
		--kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
		--hostname-override="$NODE_NAME" \
		--node-ip="$NODE_IP" \
		--root-dir="$NODE_DIR/kubelet" \
		--node-labels="$NODE_TAINT_KEY=real"
}

start_apiserver_forward() {
	start_component apiserver-forward socat \
		"TCP-LISTEN:$API_PORT,bind=$NODE_IP,reuseaddr,fork" "TCP:127.0.0.1:$API_PORT"
}

# The images the node runs (scripts/testbed-images), imported into containerd.
import_images() {
	local archives archive
	archives=$("$REPO/scripts/testbed-images") || die "building the test bed's images failed (output above)"
	for archive in $archives; do
		ctr_ images import "$archive" >/dev/null || die "importing $archive into containerd failed"
	done
}

node_ready() {
	[ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

node_up() {
	node_wanted || return 0
	node_paths
	if ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && [ ! -e "$NODE_RUN/bridge" ]; then
		die "bridge $NODE_BRIDGE exists but is not this test bed's: another test bed on this" \
			"machine runs the real node (stop it, or set LOCAL_CLUSTER_REAL_NODE=0)"
	fi
	# A fresh node with a fresh cluster: nothing of the last one is reused
	# (with LOCAL_CLUSTER_KEEP_DATA=1 the kept PVs point at volumes gone).
	node_cleanup
	rm -rf "$NODE_DIR"
	write_node_configs
	node_bridge_up
	start_apiserver_forward
	start_containerd
	wait_healthy containerd
	import_images
	start_kubelet
	wait_healthy kubelet
	wait_for "$NODE_NAME to be Ready" "$TIMEOUT" node_ready
}

# Stops the node's containers, then unmounts, detaches and deletes what the
# node made. Only ever touches paths under <state>/node and $NODE_RUN.
node_cleanup() {
	local id pid mnt dev
	if pid_of containerd >/dev/null; then
		for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
		sleep 0.5
		for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
	fi
	stop_component containerd
	# Shims this node's containerd started (they outlive it by design).
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" || true); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	# Mounts, deepest first.
	for mnt in $(awk -v a="$NODE_DIR/" -v b="$NODE_RUN/" \
		'index($2, a) == 1 || index($2, b) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || log "could not unmount $mnt"
	done
	# Loop devices backing the test bed's volumes.
	while read -r dev file; do
		[[ $file == "$VOLUMES_DIR/"* ]] && { losetup -d "$dev" 2>/dev/null || log "could not detach $dev"; }
	done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
	if [ -e "$NODE_RUN/bridge" ] && ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
		ip link del "$NODE_BRIDGE"
	fi
	rm -rf "$NODE_RUN"
}

node_down() {
	node_paths
	# Pods first, through the kubelet, so that their sandboxes, network
	# namespaces and volume mounts are torn down the proper way.
	if pid_of kubelet >/dev/null && pid_of kube-apiserver >/dev/null; then
		kc delete pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" \
			--grace-period=5 --timeout=60s >/dev/null 2>&1 || log "some pods on $NODE_NAME did not stop in time"
	fi
	stop_component kubelet
	stop_component apiserver-forward
	node_cleanup
}

node_status() { # prints the node's line; 1 unless Ready
	node_wanted || return 0
	local ready
	ready=$(kc get node "$NODE_NAME" \
		-o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}' 2>/dev/null) ||
		ready="absent"
	printf '%-24s %s\n' "node $NODE_NAME" "Ready=$ready"
	[[ $ready == True* ]]
}
