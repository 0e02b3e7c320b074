#!/usr/bin/env bash
# --version names the program (the daemon or the kubectl plugin), the project's version and the commit it was
# built from: when the sources are a git checkout, exactly HEAD's short hash.
#   tests/release/version_test.sh SOURCE_DIR COMMAND...   (COMMAND: the binary,
#   or e.g. qemu-aarch64 -L SYSROOT binary)
set -euo pipefail
src=$1
shift

out=$("$@" --version)
echo "version_test: $out"
version=$(sed -nE 's/^project\(stateful-operator VERSION ([0-9.]+) .*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "version_test: no VERSION in $src/CMakeLists.txt's project()" >&2; exit 1; }
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
