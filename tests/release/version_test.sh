#!/usr/bin/env bash
# --version names the program (the daemon or the kubectl plugin), the project's version and the commit it was
# built from: when the sources are a git checkout, exactly HEAD's short hash. And what is released with it
# says the same version: the chart's version and appVersion, the krew manifest's spec.version (v-prefixed, as
# krew wants) and its archive URLs, the image tag of deploy/ and of the default copy image, and the
# Dockerfile's default version label.
#   tests/release/version_test.sh SOURCE_DIR COMMAND...   (COMMAND: the binary,
#   or e.g. qemu-aarch64 -L SYSROOT binary)
set -euo pipefail
src=$1
shift

out=$("$@" --version)
echo "version_test: $out"
version=$(sed -nE 's/^project\(stateful-operator VERSION ([0-9.]+) .*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "version_test: no VERSION in $src/CMakeLists.txt's project()" >&2; exit 1; }

# The release files, each in its own form.
drift=()
field() { # file sed-expression: the one value the expression prints, or "" when it prints none or several
	local v
	v=$(sed -nE "$2" "$src/$1")
	[ "$(printf '%s' "$v" | grep -c '^')" = 1 ] && printf '%s' "$v"
}
agree() { # what file found want
	[ "$3" = "$4" ] || drift+=("$2: $1 is '$3', want '$4'")
}
agree version charts/stateful-operator/Chart.yaml \
	"$(field charts/stateful-operator/Chart.yaml 's/^version: *"?([^" ]*)"? *$/\1/p')" "$version"
agree appVersion charts/stateful-operator/Chart.yaml \
	"$(field charts/stateful-operator/Chart.yaml 's/^appVersion: *"?([^" ]*)"? *$/\1/p')" "$version"
agree spec.version plugins/krew/stateful.yaml \
	"$(field plugins/krew/stateful.yaml 's/^  version: *"?([^" ]*)"? *$/\1/p')" "v$version"
while read -r uri; do
	agree "an archive URL's release" plugins/krew/stateful.yaml \
		"$(sed -nE 's|.*/releases/download/([^/]*)/.*|\1|p' <<<"$uri")" "v$version"
done < <(sed -nE 's/^ *uri: *//p' "$src/plugins/krew/stateful.yaml")
agree "the image tag" deploy/base/deployment.yaml \
	"$(field deploy/base/deployment.yaml 's/^ *image: *stateful-operator:([^ ]*) *$/\1/p')" "$version"
agree "ARG SOP_VERSION (the image's version label)" Dockerfile \
	"$(field Dockerfile 's/^ARG SOP_VERSION=([^ ]*) *$/\1/p')" "$version"
agree DEFAULT_COPY_IMAGE src/options.h \
	"$(field src/options.h 's/^#define DEFAULT_COPY_IMAGE "stateful-operator:([^"]*)".*/\1/p')" "$version"
if [ ${#drift[@]} -gt 0 ]; then
	echo "version_test: CMakeLists.txt's project() says $version, but:" >&2
	printf '  %s\n' "${drift[@]}" >&2
	exit 1
fi

program=$(basename "${!#}") # stateful-operator, or kubectl-stateful
shape="^$program ([^ ]+) \\(commit ([^ )]+)\\)\$"
[[ $out =~ $shape ]] ||
	{ echo "version_test: not '$program VERSION (commit HASH)'" >&2; exit 1; }
[ "${BASH_REMATCH[1]}" = "$version" ] ||
	{ echo "version_test: version ${BASH_REMATCH[1]}, CMakeLists.txt says $version" >&2; exit 1; }
commit=${BASH_REMATCH[2]}
if head=$(git -C "$src" rev-parse --short HEAD 2>/dev/null); then
	[ "$commit" = "$head" ] ||
		{ echo "version_test: commit $commit, the checkout is at $head (rebuild?)" >&2; exit 1; }
else
	[ "$commit" = unknown ] || { echo "version_test: commit $commit out of a git checkout" >&2; exit 1; }
fi
