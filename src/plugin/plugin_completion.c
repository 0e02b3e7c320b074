/*
 * Shell completion for kubectl-stateful: subcommands, flags, and object
 * names read with kubectl itself (sts/NAME, stc/NAME), so the completion
 * uses the same kubeconfig and namespace the user typed.
 */
#include <string.h>

#include "plugin/plugin_commands.h"

static const char bash_script[] =
	"# bash completion for kubectl-stateful: source <(kubectl-stateful completion bash)\n"
	"_kubectl_stateful() {\n"
	"    local cur=${COMP_WORDS[COMP_CWORD]} cmd='' ns_args=() args=() i\n"
	"    for ((i = 1; i < COMP_CWORD; i++)); do\n"
	"        case ${COMP_WORDS[i]} in\n"
	"        -n|--namespace) ns_args=(-n \"${COMP_WORDS[i+1]}\"); ((i++)) ;;\n"
	"        --context|--kubeconfig) ns_args+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i+1]}\"); ((i++)) ;;\n"
	"        -*) ;;\n"
	"        *) if [ -z \"$cmd\" ]; then cmd=${COMP_WORDS[i]}; else args+=(\"${COMP_WORDS[i]}\"); fi ;;\n"
	"        esac\n"
	"    done\n"
	"    if [ -z \"$cmd\" ]; then\n"
	"        COMPREPLY=($(compgen -W 'status resize abort explain cleanup members uninstall completion' -- \"$cur\"))\n"
	"        return\n"
	"    fi\n"
	"    case $cur in\n"
	"    -*) COMPREPLY=($(compgen -W '--kubeconfig --context --namespace --all-namespaces --output --strategy \\\n"
	"            --class --wait --no-wait --timeout --retry --dry-run --force --operator-namespace --help' -- \"$cur\")); return ;;\n"
	"    esac\n"
	"    local kinds='statefulset' names=() k\n"
	"    case $cmd in\n"
	"    completion) COMPREPLY=($(compgen -W 'bash zsh' -- \"$cur\")); return ;;\n"
	"    uninstall) return ;;\n"
	"    members)\n"
	"        kinds='statefulcluster'\n"
	"        case ${#args[@]}:${args[0]} in\n"
	"        0:) names=(remove replace) ;;\n"
	"        1:remove|1:replace) ;;\n"
	"        *:remove|*:replace)\n"
	"            COMPREPLY=($(compgen -W \"$(kubectl get statefulcluster \"${args[1]#*/}\" \"${ns_args[@]}\" \\\n"
	"                -o jsonpath='{.status.members[*].identity}' 2>/dev/null)\" -- \"$cur\")); return ;;\n"
	"        *) return ;;\n"
	"        esac ;;\n"
	"    status) kinds='statefulset statefulcluster' ;;\n"
	"    esac\n"
	"    for k in $kinds; do\n"
	"        local short=sts; [ \"$k\" = statefulcluster ] && short=stc\n"
	"        names+=($(kubectl get \"$k\" \"${ns_args[@]}\" -o name 2>/dev/null | sed \"s|^[^/]*/|$short/|\"))\n"
	"    done\n"
	"    COMPREPLY=($(compgen -W \"${names[*]}\" -- \"$cur\"))\n"
	"}\n"
	"complete -F _kubectl_stateful kubectl-stateful\n";

static const char zsh_script[] =
	"#compdef kubectl-stateful\n"
	"# zsh completion for kubectl-stateful: source <(kubectl-stateful completion zsh)\n"
	"_kubectl_stateful() {\n"
	"    local -a cmds objs\n"
	"    cmds=(status resize abort explain cleanup members uninstall completion)\n"
	"    if (( CURRENT == 2 )); then\n"
	"        compadd -a cmds\n"
	"        return\n"
	"    fi\n"
	"    case ${words[CURRENT]} in\n"
	"    -*) compadd -- --kubeconfig --context --namespace --all-namespaces --output --strategy --class \\\n"
	"            --wait --no-wait --timeout --retry --dry-run --force --operator-namespace --help; return ;;\n"
	"    esac\n"
	"    case ${words[2]} in\n"
	"    completion) compadd bash zsh; return ;;\n"
	"    uninstall) return ;;\n"
	"    members)\n"
	"        case ${words[3]}:$CURRENT in\n"
	"        *:3) objs=(remove replace ${(f)\"$(kubectl get statefulcluster -o name 2>/dev/null | sed 's|^[^/]*/|stc/|')\"}) ;;\n"
	"        remove:4|replace:4) objs=(${(f)\"$(kubectl get statefulcluster -o name 2>/dev/null | sed 's|^[^/]*/|stc/|')\"}) ;;\n"
	"        remove:*|replace:*) objs=(${=\"$(kubectl get statefulcluster ${words[4]#*/} \\\n"
	"            -o jsonpath='{.status.members[*].identity}' 2>/dev/null)\"}) ;;\n"
	"        *) return ;;\n"
	"        esac ;;\n"
	"    status) objs=(${(f)\"$(kubectl get statefulset -o name 2>/dev/null | sed 's|^[^/]*/|sts/|')\"}\n"
	"                  ${(f)\"$(kubectl get statefulcluster -o name 2>/dev/null | sed 's|^[^/]*/|stc/|')\"}) ;;\n"
	"    *) objs=(${(f)\"$(kubectl get statefulset -o name 2>/dev/null | sed 's|^[^/]*/|sts/|')\"}) ;;\n"
	"    esac\n"
	"    compadd -a objs\n"
	"}\n"
	"if [ \"$funcstack[1]\" = _kubectl_stateful ]; then _kubectl_stateful \"$@\"; else compdef _kubectl_stateful kubectl-stateful; fi\n";

const char *plugin_completion_script(const char *shell)
{
	if (!strcmp(shell, "bash"))
		return bash_script;
	if (!strcmp(shell, "zsh"))
		return zsh_script;
	return NULL;
}
