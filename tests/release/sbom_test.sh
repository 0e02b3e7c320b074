#!/usr/bin/env bash
# scripts/sbom's SPDX document of the operator image says what users and
# scanners rely on: the SPDX 2.3 fields every document and package must
# have; every package dpkg lists as installed in the image; every shared
# library the binary loads (ldd, with the image's own loader and libraries)
# in a listed package; our binary with the SHA-256 of the file in the image
# and the licence of LICENSE (Apache-2.0), which the image's
# org.opencontainers.image.licenses label gives too.
#   tests/release/sbom_test.sh [IMAGE_ARCHIVE]   (default: scripts/testbed-images')
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# shellcheck source=../lib/steps.sh
. "$REPO/tests/lib/steps.sh"

step "scripts/sbom makes a document"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root sbom=$work/sbom.json
SBOM_ROOT=$root "$REPO/scripts/sbom" "$@" >"$sbom" || fail "scripts/sbom failed"

step "SPDX 2.3 fields"
# Required fields (SPDX 2.3, clauses 6 and 7), ids unique and well formed.
jq -e '.spdxVersion == "SPDX-2.3" and .dataLicense == "CC0-1.0" and .SPDXID == "SPDXRef-DOCUMENT"
	and (.name | length > 0) and (.documentNamespace | test("^https?://"))
	and (.creationInfo.created | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$"))
	and (.creationInfo.creators | length > 0)' "$sbom" >/dev/null || fail "document fields"
jq -e 'all(.packages[]; (.SPDXID | test("^SPDXRef-[A-Za-z0-9.-]+$")) and (.name | length > 0)
	and (.downloadLocation | length > 0) and (.versionInfo | length > 0) and has("filesAnalyzed"))' \
	"$sbom" >/dev/null || fail "a package lacks SPDXID, name, downloadLocation, versionInfo or filesAnalyzed"
jq -e '[.packages[].SPDXID] | length == (unique | length)' "$sbom" >/dev/null || fail "SPDXIDs repeat"
jq -e '[.packages[].SPDXID] as $ids | all(.relationships[]; (.relatedSpdxElement as $r | $ids | index($r)))
	and any(.relationships[]; .relationshipType == "DESCRIBES")' "$sbom" >/dev/null ||
	fail "a relationship names an unknown package, or nothing is DESCRIBED"

step "the image's Debian packages"
# Every installed package of the image, at its version.
dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${db:Status-Status} ${Package} ${Version}\n' |
	awk '$1 == "installed" { print $2 " " $3 }' | sort >"$work/dpkg"
jq -r '.packages[] | select(.externalRefs[]?.referenceLocator | startswith("pkg:deb/")) | "\(.name) \(.versionInfo)"' \
	"$sbom" | sort >"$work/listed"
diff -u "$work/dpkg" "$work/listed" || fail "the Debian packages listed differ from the image's dpkg database"
echo "sbom_test: $(wc -l <"$work/listed") Debian packages, as dpkg lists them"

step "our binary's checksum"
binary=$root/usr/local/bin/stateful-operator
sha=$(sha256sum "$binary" | cut -d' ' -f1)
jq -e --arg sha "$sha" '.packages[] | select(.name == "stateful-operator")
	| .checksums[] | select(.algorithm == "SHA256") | .checksumValue == $sha' "$sbom" >/dev/null ||
	fail "stateful-operator's SHA256 is not $sha"

step "the operator's licence"
# LICENSE is the Apache License 2.0; the SBOM and the image's label say so.
head -n 4 "$REPO/LICENSE" | grep -q 'Apache License' && head -n 4 "$REPO/LICENSE" | grep -q 'Version 2.0, January 2004' ||
	fail "LICENSE is not the Apache License 2.0"
jq -e '.packages[] | select(.name == "stateful-operator")
	| .licenseDeclared == "Apache-2.0" and .licenseConcluded == "Apache-2.0"' "$sbom" >/dev/null ||
	fail "stateful-operator's licenseDeclared/licenseConcluded are not Apache-2.0: $(jq -c '.packages[]
		| select(.name == "stateful-operator") | [.licenseDeclared, .licenseConcluded]' "$sbom")"
archive=${1:-$("$REPO/scripts/testbed-images" operator)}
config=$(tar -xOf "$archive" manifest.json | jq -r '.[0].Config')
label=$(tar -xOf "$archive" "$config" | jq -r '.config.Labels["org.opencontainers.image.licenses"] // "none"')
[ "$label" = Apache-2.0 ] || fail "the image's org.opencontainers.image.licenses label is '$label', not Apache-2.0"

step "the libraries the binary loads"
# Every library the binary loads, resolved in the image, is in a listed package.
loader=$(readelf -l "$binary" | sed -nE 's/.*Requesting program interpreter: (.*)\]$/\1/p')
[ -n "$loader" ] && [ -e "$root$loader" ] || fail "the image has no loader '$loader'"
multiarch=$(basename "$(dirname "$(readlink -f "$root$loader")")")
libs=$("$root$loader" --list --library-path "$root/lib/$multiarch:$root/usr/lib/$multiarch" "$binary" |
	sed -nE 's/.*=> ([^ ]+) \(0x.*/\1/p')
[ -n "$libs" ] || fail "ldd listed no library"
n=0
for lib in $libs; do
	[[ $lib == "$root"/* ]] || fail "$lib was found outside the image"
	path=${lib#"$root"}
	# Bookworm's packages name /lib or /usr/lib (merged /usr): either counts.
	pkg=$(grep -lxF -e "$path" -e "${path#/usr}" -e "/usr$path" "$root"/var/lib/dpkg/info/*.list || true)
	[ -n "$pkg" ] || fail "$path belongs to no package of the image"
	pkg=$(basename "${pkg%%$'\n'*}" .list)
	pkg=${pkg%%:*}
	jq -e --arg p "$pkg" 'any(.packages[]; .name == $p)' "$sbom" >/dev/null ||
		fail "$path belongs to $pkg, which the SBOM does not list"
	n=$((n + 1))
done
echo "sbom_test: $n shared libraries of the binary, each in a listed package; binary sha256 $sha"
