/*
 * kubectl-stateful: the kubectl plugin (`kubectl stateful ...`). kubectl
 * finds it by name on PATH and runs it with the words after "stateful".
 */
#include <stdio.h>
#include <stdlib.h>

#include "plugin/plugin_args.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_session.h"

#ifndef SOP_VERSION
#define SOP_VERSION "0.1.0" /* the operator's (src/main.c) */
#endif

int main(int argc, char **argv)
{
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
		fputs(plugin_usage(), stdout);
		break;
	case PLUGIN_VERSION:
		printf("kubectl-stateful %s\n", SOP_VERSION);
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
		case PLUGIN_MEMBERS: code = plugin_cmd_members(&s); break;
		default: break;
		}
		plugin_session_close(&s);
	}
	plugin_args_release(&a);
	return code;
}
