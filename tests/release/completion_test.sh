#!/usr/bin/env bash
# The plugin's shell completion, without a cluster:
#   - bash: `source <(kubectl-stateful completion bash)` registers it (complete -p), and the
#     function it registers offers the subcommands, the flags and the shells;
#   - zsh: the script parses (zsh -n); zsh is a test package (scripts/install-deps), missing is a failure;
#   - plugins/kubectl_complete-stateful (what kubectl 1.26+ runs for `kubectl stateful <TAB>`)
#     reaches `kubectl-stateful __complete` on PATH and ends with cobra's ":4" (no file names).
# Object names (sts/NAME) need a cluster: tests/integration/it_plugin.c.
#   tests/release/completion_test.sh SOURCE_DIR COMMAND...   (COMMAND: the binary,
#   or e.g. qemu-aarch64 -L SYSROOT binary)
set -euo pipefail
src=$1
shift

fail() { echo "completion_test: FAIL: $*" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# bash: what a user puts in ~/.bashrc, then the registration and the function's answers.
registered=$(bash -c 'source <("$@" completion bash) && complete -p kubectl-stateful' _ "$@") ||
	fail "bash: source <(kubectl-stateful completion bash) && complete -p kubectl-stateful failed"
[ "$registered" = "complete -F _kubectl_stateful kubectl-stateful" ] ||
	fail "bash: complete -p kubectl-stateful says: $registered"
# The command (the binary, maybe behind its emulator) quoted for a shell: offer's and the shim's.
printf -v cmd '%q ' "$@"
offer() { # words...: what the registered function offers for the last word (none asks the cluster)
	bash -c 'eval "source <($1 completion bash)" || exit 1; shift
		COMP_WORDS=(kubectl-stateful "$@"); COMP_CWORD=$#; _kubectl_stateful; echo "${COMPREPLY[*]}"' \
		_ "$cmd" "$@"
}
[ "$(offer '')" = "status resize abort explain cleanup members uninstall completion" ] ||
	fail "bash: kubectl-stateful <TAB> offers: $(offer '')"
[ "$(offer re)" = "resize" ] || fail "bash: kubectl-stateful re<TAB> offers: $(offer re)"
[ "$(offer resize --cl)" = "--class" ] || fail "bash: resize --cl<TAB> offers: $(offer resize --cl)"
[ "$(offer completion '')" = "bash zsh" ] || fail "bash: completion <TAB> offers: $(offer completion '')"
# (no cluster: the StatefulClusters' names it would add are none)
got=$(export KUBECONFIG=/dev/null; offer members re)
[ "$got" = "remove replace" ] || fail "bash: members re<TAB> offers: $got"

# zsh: the script parses.
command -v zsh >/dev/null || fail "zsh is not installed (scripts/install-deps installs it)"
"$@" completion zsh >"$work/_kubectl_stateful"
head -1 "$work/_kubectl_stateful" | grep -qx '#compdef kubectl-stateful' ||
	fail "zsh: the script does not start with #compdef kubectl-stateful"
zsh -n "$work/_kubectl_stateful" || fail "zsh -n rejects the zsh completion script"

# kubectl's completion helper: kubectl-stateful found on PATH as kubectl finds it (a shim
# when the binary runs under an emulator).
mkdir "$work/bin"
printf '#!/bin/sh\nexec %s "$@"\n' "$cmd" >"$work/bin/kubectl-stateful"
chmod +x "$work/bin/kubectl-stateful"
got=$(PATH="$work/bin:$PATH" "$src/plugins/kubectl_complete-stateful" completion '') ||
	fail "plugins/kubectl_complete-stateful completion '' failed"
[ "$got" = $'bash\nzsh\n:4' ] || fail "kubectl_complete-stateful completion '' printed: $got"
got=$(PATH="$work/bin:$PATH" "$src/plugins/kubectl_complete-stateful" resize --str) ||
	fail "plugins/kubectl_complete-stateful resize --str failed"
[ "$got" = $'--strategy\n:4' ] || fail "kubectl_complete-stateful resize --str printed: $got"
got=$(KUBECONFIG=/dev/null PATH="$work/bin:$PATH" "$src/plugins/kubectl_complete-stateful" members rem) ||
	fail "plugins/kubectl_complete-stateful members rem failed"
[ "$got" = $'remove\n:4' ] || fail "kubectl_complete-stateful members rem printed: $got"
echo "completion_test: bash registers and offers, zsh -n accepts, kubectl_complete-stateful answers"
