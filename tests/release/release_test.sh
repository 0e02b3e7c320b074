#!/usr/bin/env bash
# make release's artifacts (scripts/release), each installed or loaded as a
# user would, with nothing of the test bed's cluster:
#   - SHA256SUMS lists every file and each sum is right;
#   - the krew manifest: krew's fields, each platform's sha256 that of the
#     archive its uri names, uri of this version (build/test_krew_manifest);
#   - the plugin, installed as krew does (archive unpacked into an empty
#     directory, a symlink on PATH), runs with PATH holding only that
#     directory (and kubectl, which finds it as `kubectl stateful`);
#   - the plugin in a root holding nothing but Debian's libc6 (chroot, and
#     qemu-user for arm64): every library it loads is glibc's or its own lib/;
#     docs/install.md states the glibc it needs; its SBOM lists the Debian
#     package of each bundled library, whose copyright file it carries;
#   - the chart: helm show chart / helm template of the .tgz; index.yaml lists
#     it with its digest and URL;
#   - the image's OCI archive loads (buildah, a private storage), carries the
#     licence and version labels and runs its binary; containerd (as kind load
#     image-archive runs it) imports it under the name the chart runs; the SBOM
#     names its binary.
#   tests/release/release_test.sh [DIST]   (default: a fresh scripts/release into a scratch dir)
# BUILD (default build) holds test_krew_manifest; arm64 runs under qemu-aarch64.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$REPO/build}

# shellcheck source=../lib/steps.sh
. "$REPO/tests/lib/steps.sh"

work=$(mktemp -d)
storage=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
containerd_pid=
cleanup() {
	[ -z "$containerd_pid" ] || { kill "$containerd_pid" && wait "$containerd_pid"; } 2>/dev/null
	[ -d "$work/storage" ] && buildah "${storage[@]}" rm --all >/dev/null 2>&1
	[ -d "$work/storage" ] && buildah "${storage[@]}" rmi --all --force >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
version=$(sed -nE 's/^project\(stateful-operator VERSION ([0-9.]+).*/\1/p' "$REPO/CMakeLists.txt")

step "make release's artifacts"
if [ $# -gt 0 ]; then
	dist=$(cd "$1" && pwd)
else
	dist=$work/dist
	DIST=$dist "$REPO/scripts/release" >"$work/release.log" 2>&1 || {
		tail -30 "$work/release.log" >&2
		fail "scripts/release failed"
	}
fi
for f in SHA256SUMS index.yaml stateful.yaml "stateful-operator-$version.tgz" \
	"stateful-operator_${version}_linux_amd64.oci.tar" "stateful-operator_${version}_linux_amd64.spdx.json" \
	kubectl-stateful_linux_amd64.tar.gz kubectl-stateful_linux_arm64.tar.gz \
	kubectl-stateful_linux_amd64.spdx.json kubectl-stateful_linux_arm64.spdx.json; do
	[ -s "$dist/$f" ] || fail "$dist has no $f"
done

step "SHA256SUMS"
(cd "$dist" && sha256sum --check --strict --quiet SHA256SUMS) || fail "a checksum of SHA256SUMS is wrong"
diff <(cd "$dist" && ls | grep -vx SHA256SUMS) <(awk '{ print $2 }' "$dist/SHA256SUMS" | sort) ||
	fail "SHA256SUMS does not list exactly the release's files"

step "the krew manifest against the archives"
[ -x "$BUILD/test_krew_manifest" ] || fail "no $BUILD/test_krew_manifest (build it)"
"$BUILD/test_krew_manifest" "$dist/stateful.yaml" "$dist" >"$work/krew.log" 2>&1 || {
	cat "$work/krew.log" >&2
	fail "the manifest's fields, URIs or sha256 values"
}
for archive in "$dist"/kubectl-stateful_linux_*.tar.gz; do
	grep -qE "^    uri: https://.*/v$version/${archive##*/}\$" "$dist/stateful.yaml" ||
		fail "no platform of the manifest installs ${archive##*/}"
done

# krew's way: the archive unpacked into the store (files: "*" -> "."), bin
# linked from a directory on PATH.
install_as_krew() { # archive dir: the store dir on stdout, bin/kubectl-stateful linked
	local sha store
	sha=$(sha256sum "$1" | cut -d' ' -f1)
	store=$2/store/stateful/$sha
	mkdir -p "$store" "$2/bin"
	tar -xzf "$1" -C "$store"
	ln -s "../store/stateful/$sha/kubectl-stateful" "$2/bin/kubectl-stateful"
	echo "$store"
}

step "the plugin from its archive on an empty PATH"
native=$(dpkg --print-architecture)
store=$(install_as_krew "$dist/kubectl-stateful_linux_$native.tar.gz" "$work/krew")
[ -f "$store/LICENSE" ] && cmp -s "$store/LICENSE" "$REPO/LICENSE" || fail "the archive's LICENSE is not the repository's"
out=$(env -i PATH="$work/krew/bin" HOME="$work/home" kubectl-stateful --version 2>&1) ||
	fail "kubectl-stateful --version (PATH=$work/krew/bin only): $out"
[[ $out == "kubectl-stateful $version (commit "* ]] || fail "kubectl-stateful --version said '$out'"
# A release made here is of this checkout.
[ $# -gt 0 ] || [ "$out" = "kubectl-stateful $version (commit $(git -C "$REPO" rev-parse --short HEAD))" ] ||
	fail "kubectl-stateful --version said '$out', the checkout is at $(git -C "$REPO" rev-parse --short HEAD)"
env -i PATH="$work/krew/bin" HOME="$work/home" kubectl-stateful --help >"$work/help" 2>&1 ||
	fail "kubectl-stateful --help failed: $(head -5 "$work/help")"
grep -q '^Usage: kubectl stateful' "$work/help" || fail "kubectl-stateful --help said: $(head -3 "$work/help")"
bin=$("$REPO/scripts/testbed-build") || fail "scripts/testbed-build (kubectl, helm) failed"
mkdir -p "$work/kubectl"
ln -s "$bin/kubectl" "$work/kubectl/kubectl"
out=$(env -i PATH="$work/krew/bin:$work/kubectl" HOME="$work/home" kubectl stateful --version) ||
	fail "kubectl stateful --version: kubectl did not run the plugin"
[[ $out == "kubectl-stateful $version "* ]] || fail "kubectl stateful --version said '$out'"
env -i PATH="$work/krew/bin:$work/kubectl" HOME="$work/home" kubectl plugin list 2>/dev/null |
	grep -qx "$work/krew/bin/kubectl-stateful" || fail "kubectl plugin list does not find kubectl-stateful"

# A root holding only glibc (Debian's libc6): the files of the host's package,
# or, for arm64, their namesakes in the arm64 sysroot.
glibc_root() { # root arch
	local root=$1 arch=$2 f from=
	if [ "$arch" != "$native" ]; then
		from=$(sed -nE 's/^SOP_ARM64_SYSROOT:PATH=(.*)/\1/p' "$REPO/build-arm64/CMakeCache.txt" 2>/dev/null)
		[ -d "$from" ] || fail "no arm64 sysroot (scripts/build-arm64 makes it)"
	fi
	mkdir -p "$root"
	dpkg-query -L libc6 | if [ -n "$from" ]; then
		sed -E 's/x86_64-linux-gnu/aarch64-linux-gnu/; s|^/lib64/|/lib/|; s/ld-linux-x86-64\.so\.2/ld-linux-aarch64.so.1/'
	else cat; fi | while read -r f; do
		[ -e "$from$f" ] && [ ! -d "$from$f" ] || continue
		mkdir -p "$root$(dirname "$f")"
		cp -P "$from$f" "$root$f"
	done
}
in_root() { # root arch command... (paths of the root)
	local root=$1 arch=$2
	shift 2
	if [ "$arch" = "$native" ]; then
		# /proc as on every running Linux: the loader reads /proc/self/exe for $ORIGIN.
		local user=()
		[ "$(id -u)" = 0 ] || user=(--map-root-user)
		mkdir -p "$root/proc"
		unshare "${user[@]}" --mount --pid --fork --mount-proc="$root/proc" chroot "$root" "$@"
	else
		# qemu-user looks up the guest's paths in the root first, then on the host,
		# which has no arm64 libraries (checked below by where each one was found).
		qemu-aarch64 -L "$root" "$root$1" "${@:2}"
	fi
}
loader_of() { readelf -l "$1" | sed -nE 's/.*Requesting program interpreter: (.*)\]$/\1/p'; }

for archive in "$dist"/kubectl-stateful_linux_*.tar.gz; do
	arch=${archive##*_linux_}
	arch=${arch%.tar.gz}
	step "the $arch plugin where only glibc is installed"
	root=$work/root-$arch
	glibc_root "$root" "$arch"
	mkdir -p "$root/plugin"
	tar -xzf "$archive" -C "$root/plugin"
	ls "$root"/lib*/*/libcurl* "$root"/usr/lib/*/libcurl* >/dev/null 2>&1 && fail "the glibc root has libcurl"
	out=$(in_root "$root" "$arch" /plugin/kubectl-stateful --version 2>&1) ||
		fail "kubectl-stateful --version with only glibc: $out"
	[[ $out == "kubectl-stateful $version (commit "* ]] || fail "--version said '$out'"
	in_root "$root" "$arch" /plugin/kubectl-stateful --help >"$work/help" 2>&1 ||
		fail "kubectl-stateful --help with only glibc: $(head -3 "$work/help")"
	loader=$(loader_of "$root/plugin/kubectl-stateful")
	in_root "$root" "$arch" "$loader" --list /plugin/kubectl-stateful >"$work/ldd-$arch" 2>&1 ||
		fail "$loader --list: $(cat "$work/ldd-$arch")"
	# Every library: the plugin's own lib/, or a file of libc6.
	while read -r soname path; do
		case "$path" in
		/plugin/lib/"$soname") ;;
		"$root"/*) ;; # the loader, run by qemu-user from the root
		*) [ -e "$root$path" ] || fail "$soname was loaded from $path, outside the archive and glibc" ;;
		esac
	done < <(sed -nE 's/^\s*([^ ]+) => ([^ ]+) \(0x.*/\1 \2/p' "$work/ldd-$arch")
	n_own=$(grep -c '=> /plugin/lib/' "$work/ldd-$arch")
	[ "$n_own" -eq "$(ls "$root/plugin/lib" | wc -l)" ] ||
		fail "$n_own of the $(ls "$root/plugin/lib" | wc -l) libraries in lib/ were loaded from it"
	# The glibc it needs, as docs/install.md states it.
	need=$(find "$root/plugin" -type f \( -name kubectl-stateful -o -name '*.so*' \) -exec readelf -V {} + |
		grep -oE 'Name: GLIBC_[0-9.]+' | sed 's/.*GLIBC_//' | sort -uV | tail -1)
	grep -q "glibc $need or newer" "$REPO/docs/install.md" ||
		fail "the $arch plugin needs glibc $need; docs/install.md does not say 'glibc $need or newer'"
	# Its SBOM: our binary, and the Debian package (at its version) of every library of lib/.
	sbom=$dist/kubectl-stateful_linux_$arch.spdx.json
	jq -e --arg sha "$(sha256sum "$root/plugin/kubectl-stateful" | cut -d' ' -f1)" --arg v "$version" '
		.packages[] | select(.name == "kubectl-stateful") | .versionInfo == $v and .licenseDeclared == "Apache-2.0"
		and any(.checksums[]; .algorithm == "SHA256" and .checksumValue == $sha)' "$sbom" >/dev/null ||
		fail "$sbom does not name the archive's kubectl-stateful ($version, Apache-2.0, its sha256)"
	for lib in "$root"/plugin/lib/*; do
		read -r pkg pkg_version < <(awk -F'\t' -v l="${lib##*/}" '$1 == l { print $2 " " $3 }' \
			"$root/plugin/licenses/libraries.tsv")
		[ -n "${pkg:-}" ] || fail "licenses/libraries.tsv does not name lib/${lib##*/}"
		[ -s "$root/plugin/licenses/$pkg.copyright" ] || fail "the archive has no copyright file of $pkg"
		jq -e --arg p "$pkg" --arg v "$pkg_version" 'any(.packages[]; .name == $p and .versionInfo == $v)' \
			"$sbom" >/dev/null || fail "$sbom does not list $pkg $pkg_version (lib/${lib##*/})"
	done
	echo "release_test: $arch plugin: $n_own libraries of its own, glibc >= $need"
done

step "the chart's package and repository index"
tgz=$dist/stateful-operator-$version.tgz
export HELM_CACHE_HOME=$work/helm HELM_CONFIG_HOME=$work/helm HELM_DATA_HOME=$work/helm KUBECONFIG=/dev/null
"$bin/helm" show chart "$tgz" >"$work/chart" || fail "helm show chart $tgz"
grep -qx "version: $version" "$work/chart" && grep -qx "appVersion: $version" "$work/chart" ||
	fail "the packaged chart is not version $version: $(cat "$work/chart")"
grep -qE '^  artifacthub.io/license: Apache-2.0$' "$work/chart" || fail "the packaged chart has no licence annotation"
"$bin/helm" template rel "$tgz" --namespace stateful-operator-system >"$work/rendered" ||
	fail "helm template of the package"
grep -q "image: \"\?stateful-operator:$version" "$work/rendered" || fail "the package's Deployment does not run stateful-operator:$version"
grep -qx "    digest: $(sha256sum "$tgz" | cut -d' ' -f1)" "$dist/index.yaml" ||
	fail "index.yaml has no entry with the package's digest"
grep -qE "^    - https://.*/v$version/${tgz##*/}\$" "$dist/index.yaml" || fail "index.yaml's entry has no URL of ${tgz##*/}"

step "the image's OCI archive"
oci=$dist/stateful-operator_${version}_linux_amd64.oci.tar
id=$(buildah "${storage[@]}" pull --quiet "oci-archive:$oci") || fail "buildah pull oci-archive:$oci"
buildah "${storage[@]}" inspect --type image "$id" >"$work/image.json"
jq -e --arg v "$version" '.OCIv1.config.Labels | ."org.opencontainers.image.licenses" == "Apache-2.0"
	and ."org.opencontainers.image.version" == $v and ."org.opencontainers.image.title" == "stateful-operator"
	and (."org.opencontainers.image.source" | startswith("https://"))' "$work/image.json" >/dev/null ||
	fail "labels: $(jq -c '.OCIv1.config.Labels' "$work/image.json")"
jq -e '.OCIv1.architecture == "amd64" and .OCIv1.os == "linux"' "$work/image.json" >/dev/null ||
	fail "not a linux/amd64 image"
tar -xOf "$oci" index.json | jq -e --arg n "docker.io/library/stateful-operator:$version" \
	'.manifests[0].annotations."org.opencontainers.image.ref.name" == $n' >/dev/null ||
	fail "the archive does not name the image docker.io/library/stateful-operator:$version (what the chart runs)"
ctr=$(buildah "${storage[@]}" from --quiet --pull=never "$id")
mnt=$(buildah "${storage[@]}" mount "$ctr")
out=$(chroot "$mnt" /usr/local/bin/stateful-operator --version) || fail "the image's binary did not run"
[[ $out == "stateful-operator $version "* ]] || fail "the image's binary says '$out'"

step "the image's OCI archive into containerd, as kind load image-archive does"
# A containerd of our own (the test bed's binary, a socket in the scratch dir; no
# CRI and no NRI, whose socket /var/run/nri/nri.sock is the test bed's node's)
# imports it as kind does; the image must get the name the chart runs.
mkdir -p "$work/containerd"
cat >"$work/containerd/config.toml" <<EOF
version = 3
root = "$work/containerd/root"
state = "$work/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.nri.v1.nri"]
[grpc]
  address = "$work/containerd/sock"
[ttrpc]
  address = "$work/containerd/sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/containerd/opt"
EOF
"$bin/containerd" --config "$work/containerd/config.toml" >"$work/containerd/log" 2>&1 &
containerd_pid=$!
ctrd=("$bin/ctr" --address "$work/containerd/sock" --namespace k8s.io)
for _ in $(seq 50); do "${ctrd[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
"${ctrd[@]}" images import --all-platforms --digests "$oci" >"$work/import.log" 2>&1 ||
	fail "ctr images import: $(tail -5 "$work/import.log")"
names=$("${ctrd[@]}" images ls -q 2>/dev/null)
kill "$containerd_pid"
wait "$containerd_pid" || true
containerd_pid=
grep -qx "docker.io/library/stateful-operator:$version" <<<"$names" ||
	fail "containerd named the image: $names (the chart runs stateful-operator:$version)"

step "the SBOM names the image's binary"
sha=$(sha256sum "$mnt/usr/local/bin/stateful-operator" | cut -d' ' -f1)
jq -e --arg sha "$sha" --arg v "$version" '.packages[] | select(.name == "stateful-operator")
	| .versionInfo == $v and .licenseDeclared == "Apache-2.0"
	and any(.checksums[]; .algorithm == "SHA256" and .checksumValue == $sha)' \
	"$dist/stateful-operator_${version}_linux_amd64.spdx.json" >/dev/null ||
	fail "the SBOM's stateful-operator is not the image's binary ($sha), version $version, Apache-2.0"
echo "release_test: v$version: $(ls "$dist" | wc -l) files checked"
