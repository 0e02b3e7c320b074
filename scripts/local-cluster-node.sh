# shellcheck shell=bash
# The test bed's real nodes, local-node-0 and local-node-1: each its own
# containerd (Debian's 1.6, or 2.x built by scripts/testbed-build for kubelets
# from 1.36) with Debian's runc, its own kubelet of the test bed's version, the
# CNI bridge/host-local/loopback plugins (Debian's containernetworking-plugins)
# on one bridge private to this machine, and (once, for both) a forwarder that
# lets pods reach the API server. Sourced by scripts/local-cluster, whose
# process helpers (start_component, stop_component, pid_of) it uses.
#
# How many: LOCAL_CLUSTER_REAL_NODES=0|1|2 (default 2); LOCAL_CLUSTER_REAL_NODE=0
# means none (as before). Node 1 never runs without node 0.
#
# Taints and labels: both nodes are tainted stateful-operator.io/testbed-node=real:NoSchedule,
# so pods that do not ask for a real node (every kwok test) never land on one.
# The label of that key is "real" on local-node-0 and "real-1" on local-node-1:
# the tests written for one real node select testbed-node=real and keep landing
# on local-node-0; a pod that may run on either selects the key with Exists
# (or kubernetes.io/hostname In [...]).
#
# Network: one bridge, sop-testbed0, 10.250.0.0/24, both nodes' pods on it, so a
# pod on one node reaches a pod on the other directly (same L2, no routes, no
# NAT). The host side of the bridge is 10.250.0.1: local-node-0's address and
# every pod's gateway (both nodes are this one host; the CNI bridge plugin also
# insists that the first address on the bridge is the gateway it is given).
# Each node has its own pod range, the /25 around its own address as a real
# node's podCIDR holds its cni0 address:
#   local-node-0  10.250.0.1    pods 10.250.0.0/25   (host-local .2-.126)
#   local-node-1  10.250.0.129  pods 10.250.0.128/25 (host-local .130-.254)
# local-node-1's address is a /32 on the bridge, there only for its kubelet to
# serve on and be reached at. ipMasq is off and nothing routes 10.250.0.0/24 off
# this machine. The API server is forwarded from 10.250.0.1:<base+443> (its
# certificate names that address), reachable from both nodes' pods, so a pod
# that sets KUBERNETES_SERVICE_HOST=10.250.0.1 and KUBERNETES_SERVICE_PORT to
# that port is in-cluster (there is no kube-proxy for 10.96.0.1).
#
# Per node N (0 or 1), nothing shared with the other:
#   kubelet          serves on <node IP>:<base+250+N>, healthz 127.0.0.1:<base+248+N>,
#                    --root-dir <node dir>/kubelet, pod logs <node dir>/pod-logs,
#                    certificates kubelet[-N]-client / kubelet[-N]-serving (pki/)
#   containerd       root <node dir>/containerd/root, state and sockets in $NODE_RUN
#   cgroups          local-node-0: cgroupRoot / (its pods under /kubepods, as
#                    before); local-node-1: cgroupRoot /sop-testbed-<hash>-1, made
#                    in every cgroup hierarchy before its kubelet starts. Distinct
#                    roots matter: a kubelet kills and removes every pod cgroup
#                    under its QoS cgroups that is not one of its own pods.
#   volumes          <node dir>/volumes: the loop-device file systems of the PVs
#                    bound to this node (tests/testbed/local_provisioner.c)
# where <node dir> is <state>/node for local-node-0 and <state>/node-1 for
# local-node-1, and $NODE_RUN is /run/sop-testbed-<hash of state dir>[-1].
#
# What it makes: files under the node dirs (kept after 'down' for their logs
# and images; the next 'up' starts afresh), mounts under the node dirs and
# $NODE_RUN, loop devices of the volumes, the bridge and its addresses, and
# the cgroups named above: 'down' stops the pods, unmounts, detaches and
# deletes those. The bridge and its addresses are fixed, so one test bed per
# machine runs real nodes: a second one (another LOCAL_CLUSTER_DIR) must set
# LOCAL_CLUSTER_REAL_NODE=0.

NODE_BRIDGE=sop-testbed0
NODE_SUBNET=10.250.0.0/24
NODE_GATEWAY=10.250.0.1 # the host on the bridge: local-node-0's address, every pod's gateway
NODE_TAINT_KEY=stateful-operator.io/testbed-node
NODES_MAX=2 # ports base+248..251 and the two /25 ranges are laid out for two

# REAL_NODES: how many real nodes this test bed runs (0, 1 or 2).
node_count() {
	if [ "${LOCAL_CLUSTER_REAL_NODE:-1}" != 1 ]; then
		REAL_NODES=0
		return 0
	fi
	REAL_NODES=${LOCAL_CLUSTER_REAL_NODES:-$NODES_MAX}
	if ! [[ $REAL_NODES =~ ^[0-9]$ ]] || ((REAL_NODES > NODES_MAX)); then
		echo "local-cluster: ERROR: LOCAL_CLUSTER_REAL_NODES=$REAL_NODES: 0, 1 or 2" >&2
		exit 1
	fi
}

node_wanted() { ((REAL_NODES > 0)); }

# Makes node N the current one: sets NODE_* and the paths and ports below.
# Needs STATE and PORT_BASE.
node_select() { # N
	local n=$1
	NODE_INDEX=$n
	NODE_NAME=local-node-$n
	# Short, on tmpfs, and distinct per state dir: unix socket paths are
	# limited to 108 bytes, and containerd keeps its runtime state here.
	[ -n "${NODE_HASH:-}" ] || NODE_HASH=$(printf "%s" "$STATE" | sha256sum | cut -c1-8)
	if ((n == 0)); then
		NODE_SUFFIX= # component, log and certificate names as with one node
		NODE_DIR=$STATE/node
		NODE_IP=$NODE_GATEWAY
		NODE_RANGE_START=10.250.0.2
		NODE_RANGE_END=10.250.0.126
		NODE_LABEL=real
		NODE_CGROUP_ROOT=/
	else
		NODE_SUFFIX=-$n
		NODE_DIR=$STATE/node-$n
		NODE_IP=10.250.0.129
		NODE_RANGE_START=10.250.0.130
		NODE_RANGE_END=10.250.0.254
		NODE_LABEL=real-$n
		NODE_CGROUP_ROOT=/sop-testbed-$NODE_HASH-$n
	fi
	NODE_RUN=/run/sop-testbed-$NODE_HASH$NODE_SUFFIX
	CONTAINERD_SOCK=$NODE_RUN/containerd.sock
	KUBELET_PORT=$((PORT_BASE + 250 + n))
	KUBELET_HEALTHZ_PORT=$((PORT_BASE + 248 + n))
	VOLUMES_DIR=$NODE_DIR/volumes
}

node_paths() { node_select 0; } # the default node (set_ports)

# The node a component name belongs to: kubelet-1 -> 1, kubelet -> 0.
node_of() { # component
	case $1 in
	*-[0-9]) echo "${1##*-}" ;;
	*) echo 0 ;;
	esac
}

# Indices of the nodes this bed runs (up), or of every node there may be (down).
nodes_up() { seq 0 $((REAL_NODES - 1)); }
nodes_all_reversed() { seq $((NODES_MAX - 1)) -1 0; }

# containerd 2.x from the test bed's build when the kubelet needs it (1.36 and
# later; scripts/testbed-build puts it in $BIN), else Debian's 1.6.
runtime_bin() { # name
	if [ -n "${BIN:-}" ] && [ -x "$BIN/$1" ]; then echo "$BIN/$1"; else echo "$1"; fi
}
ctr_() { "$(runtime_bin ctr)" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

node_pki() { # called by gen_pki: every node's certificates
	local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth" n
	for ((n = 0; n < NODES_MAX; n++)); do
		node_select "$n"
		sign_cert ca "kubelet$NODE_SUFFIX-client" "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
		sign_cert ca "kubelet$NODE_SUFFIX-serving" "/CN=$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,DNS:$NODE_NAME"
	done
	node_select 0
	# The API server's identity towards kubelets (logs, exec, port-forward).
	sign_cert ca apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
}

write_node_configs() {
	mkdir -p "$NODE_DIR/cni" "$NODE_DIR/cni-ipam" "$NODE_DIR/kubelet" "$NODE_DIR/pod-logs" \
		"$NODE_DIR/containerd" "$VOLUMES_DIR" "$NODE_RUN"
	write_kubeconfig "$NODE_DIR/kubelet.kubeconfig" "    client-certificate-data: $(base64 -w0 "$PKI/kubelet$NODE_SUFFIX-client.crt")
    client-key-data: $(base64 -w0 "$PKI/kubelet$NODE_SUFFIX-client.key")"

	# Both nodes: the same bridge, subnet and gateway (the host), each its
	# own range and its own host-local store.
	cat >"$NODE_DIR/cni/10-testbed.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sop-testbed",
  "plugins": [{
    "type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$NODE_DIR/cni-ipam",
             "ranges": [[{"subnet": "$NODE_SUBNET", "rangeStart": "$NODE_RANGE_START",
                          "rangeEnd": "$NODE_RANGE_END", "gateway": "$NODE_GATEWAY"}]]}
  }]
}
EOF

	# containerd (config version 2, which 2.x migrates): CRI with runc and the
	# cgroupfs driver (no systemd here), our pause image, our CNI configuration.
	# restrict_oom_score_adj: root on this machine lacks CAP_SYS_RESOURCE,
	# so no process may lower its oom_score_adj; unrestricted, every pod
	# sandbox (-998) fails with "failed to update /proc/self/oom_score_adj:
	# Permission denied" (runc). Restricted, no score goes below containerd's.
	# The stream server takes a free port on 127.0.0.1 (port 0, the default).
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
# containerd 2.x's NRI socket, by default /var/run/nri/nri.sock for every
# instance (1.6 has no such plugin and ignores this).
[plugins."io.containerd.nri.v1.nri"]
  socket_path = "$NODE_RUN/nri.sock"
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
	# is shared with everything else on this machine. cgroupRoot: each
	# node's own (see the header).
	cat >"$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet$NODE_SUFFIX-serving.crt
tlsPrivateKeyFile: $PKI/kubelet$NODE_SUFFIX-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $NODE_CGROUP_ROOT
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

# The bridge is local-node-0's (it makes and deletes it, with 10.250.0.1 as
# its first address, which the CNI bridge plugin requires of its gateway);
# another node only adds its /32, after node 0's.
node_bridge_up() {
	if ((NODE_INDEX == 0)); then
		ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || ip link add "$NODE_BRIDGE" type bridge
		: >"$NODE_RUN/bridge" # ours: node_cleanup may delete it
		ip addr show dev "$NODE_BRIDGE" | grep -q "inet $NODE_IP/" || ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
		ip link set "$NODE_BRIDGE" up
	else
		ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || die "bridge $NODE_BRIDGE missing: local-node-0 comes first"
		: >"$NODE_RUN/address" # ours: node_cleanup may delete it
		ip addr show dev "$NODE_BRIDGE" | grep -q "inet $NODE_IP/" || ip addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
	fi
}

# The node's cgroups in every hierarchy: each cgroup v1 one (the kubelet checks
# cpu, cpuacct, cpuset, memory, pids, systemd) and the cgroup2 one (on this
# hybrid machine /sys/fs/cgroup/unified, where runc and the kubelet make
# the same tree). local-node-0's are its /kubepods subtree (cgroupRoot /);
# another node's are its whole root.
node_cgroup_dirs() {
	local sub=$NODE_CGROUP_ROOT
	[ "$sub" != / ] || sub=/kubepods
	awk -v sub_="$sub" '$3 == "cgroup" || $3 == "cgroup2" { print $2 sub_ }' \
		/proc/self/mounts
}

# A cgroupRoot other than / must exist before the kubelet starts ("cgroup ...
# has some missing paths"). cpuset needs cpus and mems before anything joins.
node_cgroups_make() {
	local dir f
	[ "$NODE_CGROUP_ROOT" != / ] || return 0
	for dir in $(node_cgroup_dirs); do
		mkdir -p "$dir" || die "cannot make cgroup $dir"
		for f in cpuset.cpus cpuset.mems; do
			if [ -f "${dir%/*}/$f" ] && [ -f "$dir/$f" ] && [ -z "$(<"$dir/$f")" ]; then
				cat "${dir%/*}/$f" >"$dir/$f" || die "cannot set $dir/$f"
			fi
		done
	done
}

# Removes the node's cgroups, deepest first; only empty ones go, so this
# never touches a running process. Containers killed a moment ago may
# still be exiting: a few tries.
node_cgroups_remove() {
	local dirs=() dir i left
	# local-node-0's /kubepods is this bed's only when it made the node.
	if [ "$NODE_CGROUP_ROOT" = / ] && [ ! -e "$NODE_RUN/bridge" ]; then return 0; fi
	mapfile -t dirs < <(node_cgroup_dirs)
	for ((i = 0; i < 30; i++)); do
		left=
		for dir in "${dirs[@]}"; do
			[ -d "$dir" ] || continue
			find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[ ! -d "$dir" ] || left=$dir
		done
		[ -n "$left" ] || return 0
		sleep 0.1
	done
	log "could not remove cgroup $left (processes still in it?)"
}

start_containerd() {
	# PATH: containerd finds its runc shim there.
	start_component "containerd$NODE_SUFFIX" env PATH="${BIN:+$BIN:}$PATH" "$(runtime_bin containerd)" \
		--config "$NODE_DIR/containerd/config.toml"
}

start_kubelet() {
	start_component "kubelet$NODE_SUFFIX" "$BIN/kubelet" \
		--config="$NODE_DIR/kubelet.yaml" \
		--kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
		--hostname-override="$NODE_NAME" \
		--node-ip="$NODE_IP" \
		--root-dir="$NODE_DIR/kubelet" \
		--node-labels="$NODE_TAINT_KEY=$NODE_LABEL"
}

# One forwarder for both nodes: every pod reaches 10.250.0.1 on the bridge.
start_apiserver_forward() {
	start_component apiserver-forward socat \
		"TCP-LISTEN:$API_PORT,bind=$NODE_GATEWAY,reuseaddr,fork" "TCP:127.0.0.1:$API_PORT"
}

# The images the nodes run (scripts/testbed-images), imported into the current
# node's containerd; NODE_ARCHIVES, their archives, built (or found in the
# cache) once per run.
NODE_ARCHIVES=
node_archives() {
	[ -z "$NODE_ARCHIVES" ] || return 0
	NODE_ARCHIVES=$("$REPO/scripts/testbed-images") || die "building the test bed's images failed (output above)"
}
import_images() {
	local archive
	node_archives
	for archive in $NODE_ARCHIVES; do
		ctr_ images import "$archive" >/dev/null || die "importing $archive into containerd$NODE_SUFFIX failed"
	done
}

# Every running node's containerd gets the images (the operator image follows
# the sources), side by side: an import is ~20 s of hashing and unpacking
# (~400 MB), and there are two cores.
import_images_all() {
	local n pid pids=()
	node_wanted || return 0
	node_archives # once, before the imports fork
	for n in $(nodes_up); do
		(
			node_select "$n"
			import_images
		) &
		pids+=("$!")
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || die "importing the test bed's images failed (output above)"
	done
	node_select 0
}

node_ready() {
	[ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# Brings up every wanted node, in phases so that the nodes start side by side:
# what one node waits for (containerd, the kubelet's registration) overlaps
# with the other's.
node_up() {
	node_wanted || return 0
	local n
	node_select 0
	if ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && [ ! -e "$NODE_RUN/bridge" ]; then
		die "bridge $NODE_BRIDGE exists but is not this test bed's: another test bed on this" \
			"machine runs the real nodes (stop it, or set LOCAL_CLUSTER_REAL_NODE=0)"
	fi
	# Fresh nodes with a fresh cluster: nothing of the last one is reused
	# (with LOCAL_CLUSTER_KEEP_DATA=1 the kept PVs point at volumes gone).
	# Every node there may be, the last first: node 0's cleanup deletes the bridge.
	for n in $(nodes_all_reversed); do
		node_select "$n"
		node_cleanup
	done
	for n in $(nodes_up); do
		node_select "$n"
		rm -rf "$NODE_DIR"
		write_node_configs
		node_cgroups_make
		node_bridge_up
		((n > 0)) || start_apiserver_forward
		start_containerd
	done
	for n in $(nodes_up); do
		node_select "$n"
		wait_healthy "containerd$NODE_SUFFIX"
	done
	import_images_all
	for n in $(nodes_up); do
		node_select "$n"
		start_kubelet
	done
	for n in $(nodes_up); do
		node_select "$n"
		wait_healthy "kubelet$NODE_SUFFIX"
		wait_for "$NODE_NAME to be Ready" "$TIMEOUT" node_ready
	done
	node_select 0
}

# Stops the current node's containers, then unmounts, detaches and deletes
# what the node made. Only ever touches paths under its node dir and
# $NODE_RUN, its own cgroups, and the bridge or address it made.
node_cleanup() {
	local id pid mnt dev file
	if pid_of "containerd$NODE_SUFFIX" >/dev/null; then
		for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
		sleep 0.5
		for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
	fi
	stop_component "containerd$NODE_SUFFIX"
	# Shims this node's containerd started (they outlive it by design); the
	# socket ends the pattern (not its .ttrpc twin).
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK( |\$)" || true); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	# Mounts, deepest first.
	for mnt in $(awk -v a="$NODE_DIR/" -v b="$NODE_RUN/" \
		'index($2, a) == 1 || index($2, b) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || log "could not unmount $mnt"
	done
	# Loop devices backing the node's volumes.
	while read -r dev file; do
		[[ $file == "$VOLUMES_DIR/"* ]] && { losetup -d "$dev" 2>/dev/null || log "could not detach $dev"; }
	done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
	node_cgroups_remove
	if [ -e "$NODE_RUN/bridge" ] && ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
		ip link del "$NODE_BRIDGE"
	fi
	if [ -e "$NODE_RUN/address" ] && ip addr show dev "$NODE_BRIDGE" 2>/dev/null | grep -q "inet $NODE_IP/"; then
		ip addr del "$NODE_IP/32" dev "$NODE_BRIDGE" || log "could not delete $NODE_IP from $NODE_BRIDGE"
	fi
	rm -rf "$NODE_RUN"
}

# Stops every node there may be (also one a previous 'up' ran with more nodes).
node_down() {
	local n
	# Pods first, through the kubelets (side by side), so that their
	# sandboxes, network namespaces and volume mounts are torn down the proper way.
	if pid_of kube-apiserver >/dev/null; then
		for n in $(nodes_all_reversed); do
			node_select "$n"
			pid_of "kubelet$NODE_SUFFIX" >/dev/null || continue
			kc delete pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" \
				--grace-period=5 --timeout=60s >/dev/null 2>&1 ||
				log "some pods on $NODE_NAME did not stop in time" &
		done
		wait
	fi
	for n in $(nodes_all_reversed); do
		node_select "$n"
		stop_component "kubelet$NODE_SUFFIX"
	done
	stop_component apiserver-forward
	for n in $(nodes_all_reversed); do
		node_select "$n"
		node_cleanup
	done
	node_select 0
}

node_status() { # prints one line per node; 1 unless all Ready
	local n ready rc=0
	for n in $(nodes_up); do
		node_select "$n"
		ready=$(kc get node "$NODE_NAME" \
			-o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}' 2>/dev/null) ||
			ready="absent"
		printf '%-24s %s\n' "node $NODE_NAME" "Ready=$ready"
		[[ $ready == True* ]] || rc=1
	done
	node_select 0
	return $rc
}
