#!/usr/bin/env bash
# The image's architecture is a parameter that reaches the build: ARCH=arm64
# through scripts/testbed-images into the Dockerfile's build stage gives an
# arm64 binary, which runs under qemu-user with that stage's arm64 libraries
# and reports the checkout's commit. (The runtime stage of a foreign ARCH
# needs qemu-user in binfmt_misc, which this machine may not have.)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# shellcheck source=../lib/steps.sh
. "$REPO/tests/lib/steps.sh"

step "ARCH=arm64 is refused for the test bed's own images"
if ARCH=arm64 "$REPO/scripts/testbed-images" >/dev/null 2>&1; then
	fail "ARCH=arm64 without a command made the test bed's images (they are the host's)"
fi

step "ARCH=arm64 reaches the Dockerfile's build stage"
command -v qemu-aarch64 >/dev/null || fail "qemu-aarch64 is missing (scripts/build-arm64 installs qemu-user)"

name=$(ARCH=arm64 "$REPO/scripts/testbed-images" build-stage) || fail "the arm64 build stage did not build"
ctr=$(buildah from --quiet --pull=never "$name")
trap 'buildah rm "$ctr" >/dev/null' EXIT
mnt=$(buildah mount "$ctr")
binary=$mnt/src/build/stateful-operator
machine=$(readelf -h "$binary" | sed -nE 's/^ *Machine: *//p')
[[ $machine == *AArch64* ]] || fail "the build stage made a '$machine' binary for ARCH=arm64"
"$REPO/tests/release/version_test.sh" "$REPO" qemu-aarch64 -L "$mnt" "$binary" ||
	fail "the arm64 binary's --version under qemu-user"
echo "image_arch_test: ARCH=arm64 reached the build: an AArch64 binary, --version right under qemu-user"
