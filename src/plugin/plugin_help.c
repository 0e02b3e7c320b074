/*
 * The help texts. Each command's help says what it does, its own flags,
 * and examples a user can copy; kubectl's global flags and the exit
 * statuses are the same for every command.
 */
#include "plugin/plugin_help.h"

#define EXIT_STATUSES                                                                              \
	"Exit status: 0 done, 1 the operation failed, was refused or aborted (or the API failed),\n" \
	"2 bad usage or unknown object, 3 no operator running (nothing written), 4 --timeout\n"      \
	"passed while the resize goes on.\n"

#define GLOBAL_FLAGS                                                                               \
	"\n"                                                                                       \
	"kubectl's flags (-n/--namespace, --context, --kubeconfig, --as, -s/--server, ...):\n"      \
	"see 'kubectl stateful --help'.\n"

const char *plugin_usage(void)
{
	return "Usage: kubectl stateful COMMAND [flags]\n"
	       "\n"
	       "Commands:\n"
	       "  status [sts/NAME|stc/NAME]       what the operator is doing or has to say: resizes,\n"
	       "                                   cleanups, StatefulClusters; which\n"
	       "                                   replica leads (on stderr)\n"
	       "  resize sts/NAME TEMPLATE=SIZE    resize the volumes of a volumeClaimTemplate\n"
	       "      [--strategy auto|expand|copy] [--class STORAGECLASS]\n"
	       "      [--wait|--no-wait] [--timeout DURATION]   follow it (default on a terminal)\n"
	       "      [--dry-run[=client|server]]  say what would be set; server: admission judges it\n"
	       "  abort sts/NAME                   stop the resize in flight\n"
	       "  explain sts/NAME                 why a resize or cleanup was refused or is waiting\n"
	       "  cleanup sts/NAME [--retry]       scale-down cleanups: claim sets, attempts, next retry;\n"
	       "                                   --retry re-arms the claim sets given up\n"
	       "  members stc/NAME                 a StatefulCluster's identities, pods, nodes, readiness\n"
	       "  members remove stc/NAME MEMBER...   remove exactly these members (replicas lowered)\n"
	       "  members replace stc/NAME MEMBER...  rebuild them: new identities with new claims\n"
	       "  uninstall [--dry-run] [--force]  before uninstalling the operator (stop it first): take its\n"
	       "                                   finalizers off StatefulSets (every namespace, or -n);\n"
	       "                                   refused while a cleanup or resize is in flight\n"
	       "  completion bash|zsh              shell completion script\n"
	       "\n"
	       "Flags (kubectl's, read as kubectl reads them):\n"
	       "  --kubeconfig PATH, --context NAME, --cluster NAME, --user NAME\n"
	       "  -s/--server URL, --token TOKEN, --certificate-authority PATH, --tls-server-name NAME,\n"
	       "  --client-certificate PATH --client-key PATH, --insecure-skip-tls-verify[=false]\n"
	       "  --as USER [--as-group GROUP]... [--as-uid UID]   act as another user\n"
	       "  --request-timeout DURATION       per request (0: none; default 30s)\n"
	       "  -n/--namespace NS, -A/--all-namespaces (status)\n"
	       "  --operator-namespace NS          where the operator runs (default " PLUGIN_OPERATOR_NAMESPACE ")\n"
	       "  -o/--output json|yaml|wide|name|jsonpath=TEMPLATE, --no-headers (status, members, cleanup)\n"
	       "  -h/--help, --version\n"
	       "\n"
	       "Run 'kubectl stateful help COMMAND' (or COMMAND --help) for a command's flags and examples.\n"
	       "\n"
	       EXIT_STATUSES;
}

static const char status_help[] =
	"Show what the operator is doing or has to say: resizes, cleanups, autoresize policies\n"
	"(the workload's own, its namespace's or its StorageClass's: the row says which),\n"
	"StatefulClusters (phase, progress, age, last Event); which replica leads (on stderr).\n"
	"\n"
	"Usage: kubectl stateful status [sts/NAME|stc/NAME] [-A] [-o FORMAT] [--no-headers]\n"
	"\n"
	"Examples:\n"
	"  kubectl stateful status                   # this namespace\n"
	"  kubectl stateful status -A                # every namespace\n"
	"  kubectl stateful status sts/web -o json   # one StatefulSet, for scripts\n"
	"  kubectl stateful status -o wide           # with strategy, start time, the whole last Event\n"
	"  kubectl stateful status -o name           # statefulset.apps/web, statefulcluster...\n"
	"  kubectl stateful status -o jsonpath='{range [*]}{.name}{\"\\t\"}{.phase}{\"\\n\"}{end}'\n"
	"\n"
	"The document (-o json, yaml, jsonpath) is a list of rows: namespace, kind, name,\n"
	"operation, phase, progress, age, lastEvent, message, strategy, started, replicas; an\n"
	"autoresize row also policy, policySource {kind, name, annotation}, claims, nextGrowth,\n"
	"nextSize.\n"
	"\n"
	"Flags:\n"
	"  -A, --all-namespaces   every namespace\n"
	"  -o, --output FORMAT    json, yaml, wide, name or jsonpath=TEMPLATE ({.a.b}, ['k'], [N], [*],\n"
	"                         {range ...}{end}, {\"\\n\"}: kubectl's, without .., filters, slices)\n"
	"  --no-headers           the table without its header line\n" GLOBAL_FLAGS;

static const char resize_help[] =
	"Resize the volumes of a StatefulSet's volumeClaimTemplate: in place where the StorageClass\n"
	"allows expansion, else by copying each replica's data to a new volume. Sets the same\n"
	"annotations you would, after checking the object, the template and the size.\n"
	"\n"
	"Usage: kubectl stateful resize sts/NAME TEMPLATE=SIZE [flags]\n"
	"\n"
	"Examples:\n"
	"  kubectl stateful resize sts/web data=20Gi              # follow it on a terminal\n"
	"  kubectl stateful resize web data=20Gi --no-wait        # set it and return\n"
	"  kubectl stateful resize sts/db data=50Gi --strategy copy --class fast-ssd --wait --timeout 2h\n"
	"  kubectl stateful resize sts/web data=20Gi --dry-run=server   # would admission accept it?\n"
	"\n"
	"Flags:\n"
	"  --strategy auto|expand|copy   how (default: the annotation's, else auto)\n"
	"  --class STORAGECLASS          move the volumes to this StorageClass (a copy)\n"
	"  --wait, --no-wait             follow it with a progress bar (default on a terminal)\n"
	"  --timeout DURATION            stop following after this (exit 4; the resize goes on)\n"
	"  --dry-run[=client|server]     client (bare --dry-run): print the annotations it would set,\n"
	"                                send nothing; server: send them with dryRun=All, so the API\n"
	"                                server and the admission webhooks judge them; nothing stored\n" GLOBAL_FLAGS;

static const char abort_help[] =
	"Stop the resize in flight: volumes already grown keep their size; a copy returns the\n"
	"replica in flight to its original volume.\n"
	"\n"
	"Usage: kubectl stateful abort sts/NAME\n"
	"\n"
	"Example:\n"
	"  kubectl stateful abort sts/web\n" GLOBAL_FLAGS;

static const char explain_help[] =
	"Why a resize or cleanup was refused or is waiting: its state, status and Warning Events.\n"
	"\n"
	"Usage: kubectl stateful explain sts/NAME\n"
	"\n"
	"Example:\n"
	"  kubectl stateful explain sts/web\n" GLOBAL_FLAGS;

static const char cleanup_help[] =
	"The scale-down cleanups of a StatefulSet: claim sets, failed attempts, next retry.\n"
	"\n"
	"Usage: kubectl stateful cleanup sts/NAME [--retry | -o FORMAT] [--no-headers]\n"
	"\n"
	"Examples:\n"
	"  kubectl stateful cleanup sts/kafka           # what is pending or given up\n"
	"  kubectl stateful cleanup sts/kafka --retry   # re-arm the claim sets given up\n"
	"  kubectl stateful cleanup sts/kafka -o name   # the cleanup pods (pod/NAME)\n"
	"\n"
	"Flags:\n"
	"  --retry                re-arm the claim sets given up (needs an operator running)\n"
	"  -o, --output FORMAT    json, yaml, wide, name or jsonpath=TEMPLATE ({.a.b}, ['k'], [N], [*],\n"
	"                         {range ...}{end}, {\"\\n\"}: kubectl's, without .., filters, slices)\n"
	"  --no-headers           the table without its header line\n" GLOBAL_FLAGS;

static const char members_help[] =
	"A StatefulCluster's members: identities, pods, readiness, phases (-o wide: nodes, revisions).\n"
	"remove: exactly the members named go (added to spec.removeMembers, spec.replicas lowered by\n"
	"as many, in one patch); their claims follow whenScaled and their identities are never used\n"
	"again. replace: each member named is rebuilt as a new identity with new claims (annotation\n"
	"stateful-operator.io/replace-members), its own claims following whenReplaced, at most\n"
	"maxUnavailable members down at a time. Both check that each name is a member and that an\n"
	"operator runs.\n"
	"\n"
	"Usage: kubectl stateful members stc/NAME [-o FORMAT] [--no-headers]\n"
	"       kubectl stateful members remove stc/NAME MEMBER... [-o json|yaml|name|jsonpath=TEMPLATE]\n"
	"       kubectl stateful members replace stc/NAME MEMBER... [-o json|yaml|name|jsonpath=TEMPLATE]\n"
	"\n"
	"Examples:\n"
	"  kubectl stateful members stc/coder\n"
	"  kubectl stateful members stc/coder -o name   # pod/coder-0 ...\n"
	"  kubectl stateful members coder -o jsonpath='{[*].node}'\n"
	"  kubectl stateful members remove stc/coder coder-2    # coder-2 goes, replicas 3 -> 2\n"
	"  kubectl stateful members replace stc/coder coder-1   # coder-1 is rebuilt as a new member\n"
	"\n"
	"Flags:\n"
	"  -o, --output FORMAT    json, yaml, wide, name or jsonpath=TEMPLATE ({.a.b}, ['k'], [N], [*],\n"
	"                         {range ...}{end}, {\"\\n\"}: kubectl's, without .., filters, slices);\n"
	"                         remove and replace print the StatefulCluster as patched (not wide)\n"
	"  --no-headers           the table without its header line\n" GLOBAL_FLAGS;

static const char uninstall_help[] =
	"Before uninstalling the operator (stop it first): take its finalizers off StatefulSets, so\n"
	"none hangs in Terminating once the operator is gone. Refused while a cleanup or resize is\n"
	"in flight.\n"
	"\n"
	"Usage: kubectl stateful uninstall [--dry-run] [--force] [-n NAMESPACE]\n"
	"\n"
	"Examples:\n"
	"  kubectl stateful uninstall --dry-run   # what would be done, in every namespace\n"
	"  kubectl stateful uninstall -n shop\n"
	"\n"
	"Flags:\n"
	"  --dry-run   say what would be done, change nothing\n"
	"  --force     go on although work is in flight\n" GLOBAL_FLAGS;

static const char completion_help[] =
	"The shell completion script.\n"
	"\n"
	"Usage: kubectl stateful completion bash|zsh\n"
	"\n"
	"Example:\n"
	"  source <(kubectl-stateful completion bash)\n";

const char *plugin_command_help(enum plugin_cmd cmd)
{
	switch (cmd) {
	case PLUGIN_STATUS: return status_help;
	case PLUGIN_RESIZE: return resize_help;
	case PLUGIN_ABORT: return abort_help;
	case PLUGIN_EXPLAIN: return explain_help;
	case PLUGIN_CLEANUP: return cleanup_help;
	case PLUGIN_MEMBERS: return members_help;
	case PLUGIN_UNINSTALL: return uninstall_help;
	case PLUGIN_COMPLETION: return completion_help;
	case PLUGIN_HELP:
	case PLUGIN_VERSION: break;
	}
	return plugin_usage();
}
