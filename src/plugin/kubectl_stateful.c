/*
 * kubectl-stateful: the kubectl plugin (`kubectl stateful ...`). kubectl
 * finds it by name on PATH and runs it with the words after "stateful".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_info.h"
#include "client/kube_object.h"

#include "plugin/plugin_args.h"
#include "plugin/plugin_help.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_complete.h"
#include "plugin/plugin_session.h"


/* Prints the names of r in the namespace as PREFIX/NAME when they start with cur; quietly nothing on errors. */
static void complete_names(struct plugin_session *s, const struct kube_resource *r, const char *short_kind,
			   const char *cur)
{
	json_t *items = NULL;
	struct kube_error err;
	if (kube_list_all(s->client, r, s->ns, NULL, 0, &items, NULL, &err) < 0)
		return;
	size_t i;
	const json_t *o;
	json_array_foreach(items, i, o) {
		char word[320];
		snprintf(word, sizeof(word), "%s/%s", short_kind, kube_obj_str(o, "metadata.name"));
		if (!strncmp(word, cur, strlen(cur)))
			printf("%s\n", word);
	}
	json_decref(items);
}

/* Prints the members (status.members) of StatefulCluster object (stc/NAME or NAME) that start with cur. */
static void complete_members(struct plugin_session *s, const char *object, const char *cur)
{
	const char *slash = object ? strchr(object, '/') : NULL;
	json_t *stc = object ? plugin_get_optional(s, &KUBE_STATEFULCLUSTERS, slash ? slash + 1 : object) : NULL;
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(json_object_get(stc, "status"), "members"), i, m) {
		const char *id = kube_obj_str(m, "identity");
		if (id && !strncmp(id, cur, strlen(cur)))
			printf("%s\n", id);
	}
	json_decref(stc);
}

/* `kubectl-stateful __complete WORDS...` (see plugin_complete.h). */
static int complete(int n, char *const *words)
{
	struct complete_where where;
	enum complete_kind kind = complete_what(n, words, &where);
	const char *cur = n > 0 ? words[n - 1] : "";
	const char *const *fixed = complete_words(kind);
	for (const char *const *w = fixed; w && *w; w++)
		if (!strncmp(*w, cur, strlen(cur)))
			printf("%s\n", *w);
	if (kind == COMPLETE_STS || kind == COMPLETE_STC || kind == COMPLETE_STS_STC || kind == COMPLETE_STC_OR_MEMBER_OPS ||
	    kind == COMPLETE_MEMBERS) {
		struct plugin_args a = {.kubeconfig = where.kubeconfig,
					.connection = KUBE_OVERRIDES_INIT,
					.request_timeout_ms = -1,
					.namespace = where.namespace};
		a.connection.context = where.context;
		struct plugin_session s;
		FILE *quiet = freopen("/dev/null", "w", stderr); /* no error text among the candidates */
		(void)quiet;
		if (plugin_session_open(&a, &s) == 0) {
			if (kind == COMPLETE_MEMBERS)
				complete_members(&s, where.object, cur);
			if (kind == COMPLETE_STS || kind == COMPLETE_STS_STC)
				complete_names(&s, &KUBE_STATEFULSETS, "sts", cur);
			if (kind == COMPLETE_STC || kind == COMPLETE_STS_STC || kind == COMPLETE_STC_OR_MEMBER_OPS)
				complete_names(&s, &KUBE_STATEFULCLUSTERS, "stc", cur);
			plugin_session_close(&s);
		}
	}
	/* cobra's ShellCompDirectiveNoFileComp: offer no file names. */
	printf(":4\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "__complete"))
		return complete(argc - 2, argv + 2);
	struct plugin_args a;
	char *err = NULL;
	if (plugin_args_parse(argc, argv, &a, &err) < 0) {
		plugin_error("%s", err);
		fprintf(stderr, "See 'kubectl stateful --help'.\n");
		free(err);
		return PLUGIN_EXIT_USAGE;
	}
	int code = PLUGIN_EXIT_OK;
	struct plugin_session s;
	switch (a.cmd) {
	case PLUGIN_HELP:
		fputs(a.help_topic_set ? plugin_command_help(a.help_topic) : plugin_usage(), stdout);
		break;
	case PLUGIN_VERSION:
		printf("kubectl-stateful %s (commit %s)\n", sop_build_version, sop_build_commit);
		break;
	case PLUGIN_COMPLETION:
		fputs(plugin_completion_script(a.shell), stdout);
		break;
	default:
		if ((code = plugin_session_open(&a, &s)))
			break;
		switch (a.cmd) {
		case PLUGIN_STATUS: code = plugin_cmd_status(&s); break;
		case PLUGIN_RESIZE: code = plugin_cmd_resize(&s); break;
		case PLUGIN_ABORT: code = plugin_cmd_abort(&s); break;
		case PLUGIN_EXPLAIN: code = plugin_cmd_explain(&s); break;
		case PLUGIN_CLEANUP: code = plugin_cmd_cleanup(&s); break;
		case PLUGIN_MEMBERS:
			code = a.members_op == PLUGIN_MEMBERS_LIST ? plugin_cmd_members(&s) : plugin_cmd_members_edit(&s);
			break;
		case PLUGIN_UNINSTALL: code = plugin_cmd_uninstall(&s); break;
		default: break;
		}
		plugin_session_close(&s);
	}
	plugin_args_release(&a);
	return code;
}
