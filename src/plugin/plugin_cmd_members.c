/*
 * `kubectl stateful members stc/NAME`: a StatefulCluster's members from
 * its status (identity, pod, node, readiness, revision, phase).
 */
#include <stdlib.h>

#include "client/kube_object.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_table.h"
#include "util/xalloc.h"

int plugin_cmd_members(struct plugin_session *s)
{
	int code = 0;
	json_t *stc = plugin_get(s, &KUBE_STATEFULCLUSTERS, s->args->name, &code);
	if (!stc)
		return code;
	json_t *members = json_object_get(json_object_get(stc, "status"), "members");
	if (!json_is_array(members))
		members = NULL;
	if (s->args->output != PLUGIN_OUT_TABLE) {
		json_t *empty = json_array();
		plugin_print_doc(stdout, members ? members : empty, s->args->output);
		json_decref(empty);
	} else if (!json_array_size(members)) {
		fprintf(stderr, "stc/%s has no members yet.\n", s->args->name);
	} else {
		static const char *const headers[] = {"IDENTITY", "POD", "NODE", "READY", "REVISION", "PHASE"};
		struct table *t = table_new(6, headers);
		size_t i;
		const json_t *m;
		json_array_foreach(members, i, m) {
			const json_t *ready = json_object_get(m, "ready");
			const char *cells[] = {kube_obj_str(m, "identity"), kube_obj_str(m, "pod"), kube_obj_str(m, "node"),
					       ready ? (json_is_true(ready) ? "true" : "false") : NULL,
					       kube_obj_str(m, "revision"), kube_obj_str(m, "phase")};
			table_add(t, cells);
		}
		char *text = table_render(t);
		fputs(text, stdout);
		free(text);
		table_free(t);
	}
	json_decref(stc);
	return 0;
}
