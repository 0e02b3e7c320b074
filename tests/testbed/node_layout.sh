#!/usr/bin/env bash
# The test bed's two real nodes keep apart (scripts/local-cluster-node.sh),
# checked without starting anything: no port, directory, socket, cgroup
# root, address or certificate shared; each pod range inside the bridge's
# subnet, disjoint from the other and from both nodes' addresses; node 0's
# names, paths and label as they were with one real node (the tests rely on
# them); each node's generated CNI, containerd and kubelet configuration
# names its own. A shared one would make the two kubelets or containerds
# fight on the first 'up'.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

fail() {
	echo "FAIL: node layout: $*" >&2
	exit 1
}
log() { :; }
die() { fail "die: $*"; }
write_kubeconfig() { : >"$1"; }

STATE=$WORK/state
PORT_BASE=16000
PKI=$WORK/pki
mkdir -p "$PKI"
touch "$PKI/kubelet-client.crt" "$PKI/kubelet-client.key" "$PKI/kubelet-1-client.crt" "$PKI/kubelet-1-client.key"
# shellcheck source=../../scripts/local-cluster-node.sh
source "$REPO/scripts/local-cluster-node.sh"

LOCAL_CLUSTER_REAL_NODES=2 node_count
[ "$REAL_NODES" = 2 ] || fail "LOCAL_CLUSTER_REAL_NODES=2 gives $REAL_NODES nodes"
(unset LOCAL_CLUSTER_REAL_NODES && node_count && [ "$REAL_NODES" = 2 ]) || fail "the default is not 2 nodes"
(LOCAL_CLUSTER_REAL_NODE=0 node_count && [ "$REAL_NODES" = 0 ]) || fail "LOCAL_CLUSTER_REAL_NODE=0 does not mean none"
(LOCAL_CLUSTER_REAL_NODES=3 node_count) 2>/dev/null && fail "LOCAL_CLUSTER_REAL_NODES=3 accepted"

ip_num() { # a.b.c.d -> integer
	local IFS=. a b c d
	read -r a b c d <<<"$1"
	echo $(((a << 24) + (b << 16) + (c << 8) + d))
}

declare -A seen
unique() { # what value: fails when another node had the same value for it
	local key="$1=$2"
	[ -z "${seen[$key]:-}" ] || fail "$1 $2 is both ${seen[$key]}'s and $NODE_NAME's"
	seen[$key]=$NODE_NAME
}

subnet_lo=$(ip_num "${NODE_SUBNET%/*}")
subnet_hi=$((subnet_lo + (1 << (32 - ${NODE_SUBNET#*/})) - 1))
ranges=()
for n in 0 1; do
	node_select "$n"
	[ "$NODE_NAME" = "local-node-$n" ] || fail "node $n is called $NODE_NAME"
	for what in NODE_NAME NODE_DIR NODE_RUN CONTAINERD_SOCK VOLUMES_DIR NODE_IP NODE_LABEL NODE_CGROUP_ROOT \
		NODE_SUFFIX KUBELET_PORT; do
		unique "$what" "${!what}"
	done
	# Ports the kubelets bind on 127.0.0.1, with the control plane's.
	unique port "$KUBELET_HEALTHZ_PORT"
	start=$(ip_num "$NODE_RANGE_START") end=$(ip_num "$NODE_RANGE_END")
	((subnet_lo < start && start <= end && end < subnet_hi)) ||
		fail "$NODE_NAME's pod range $NODE_RANGE_START-$NODE_RANGE_END is not inside $NODE_SUBNET"
	ranges+=("$start $end")
	ips+=("$(ip_num "$NODE_IP")")
	# Its configuration files name its own paths and ports.
	NODE_RUN=$WORK/run-$n CONTAINERD_SOCK=$WORK/run-$n/containerd.sock
	write_node_configs
	jq -e --arg s "$NODE_RANGE_START" --arg e "$NODE_RANGE_END" --arg d "$NODE_DIR/cni-ipam" \
		'.plugins[0].ipam | .dataDir == $d and .ranges[0][0].rangeStart == $s and .ranges[0][0].rangeEnd == $e
		 and .ranges[0][0].gateway == "10.250.0.1"' "$NODE_DIR/cni/10-testbed.conflist" >/dev/null ||
		fail "$NODE_NAME's CNI configuration does not name its range, its store and the gateway 10.250.0.1"
	for want in "address: $NODE_IP" "port: $KUBELET_PORT" "healthzPort: $KUBELET_HEALTHZ_PORT" \
		"cgroupRoot: $NODE_CGROUP_ROOT" "tlsCertFile: $PKI/kubelet$NODE_SUFFIX-serving.crt" \
		"containerRuntimeEndpoint: unix://$CONTAINERD_SOCK" "podLogsDir: $NODE_DIR/pod-logs"; do
		grep -qxF "$want" "$NODE_DIR/kubelet.yaml" || fail "$NODE_NAME's kubelet.yaml lacks '$want'"
	done
	for want in "root = \"$NODE_DIR/containerd/root\"" "state = \"$NODE_RUN/state\"" \
		"  address = \"$CONTAINERD_SOCK\"" "  socket_path = \"$NODE_RUN/nri.sock\"" \
		"    conf_dir = \"$NODE_DIR/cni\""; do
		grep -qxF "$want" "$NODE_DIR/containerd/config.toml" || fail "$NODE_NAME's containerd config lacks '$want'"
	done
done
for ((i = 0; i < 2; i++)); do
	read -r s e <<<"${ranges[i]}"
	read -r s2 e2 <<<"${ranges[1 - i]}"
	((e < s2 || s > e2)) || fail "the two pod ranges overlap"
	for ipn in "${ips[@]}" "$(ip_num "$NODE_GATEWAY")"; do
		((ipn < s || ipn > e)) || fail "a node's address is inside pod range ${ranges[i]}"
	done
done
for p in 247 257 259 379 380 443; do
	[ -z "${seen[port=$((PORT_BASE + p))]:-}" ] || fail "a kubelet's healthz port is the control plane's base+$p"
done

# Node 0 as with one real node: the tests and docs name these.
node_select 0
[ "$NODE_DIR" = "$STATE/node" ] && [ "$NODE_IP" = 10.250.0.1 ] && [ "$NODE_LABEL" = real ] &&
	[ "$KUBELET_PORT" = $((PORT_BASE + 250)) ] && [ "$KUBELET_HEALTHZ_PORT" = $((PORT_BASE + 248)) ] &&
	[ "$NODE_CGROUP_ROOT" = / ] && [ -z "$NODE_SUFFIX" ] ||
	fail "local-node-0's directory, address, label, ports or cgroup root changed"
[ "$(node_of kubelet)/$(node_of kubelet-1)/$(node_of containerd-1)" = 0/1/1 ] || fail "node_of maps components wrongly"
echo "ok: the two real nodes share no port, path, socket, cgroup root, address or pod range"
