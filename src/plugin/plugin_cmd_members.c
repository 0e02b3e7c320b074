/*
 * `kubectl stateful members stc/NAME`: a StatefulCluster's members from
 * its status (identity, pod, readiness, phase; -o wide: node, revision).
 */
#include <stdlib.h>

#include "client/kube_object.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_members.h"

int plugin_cmd_members(struct plugin_session *s)
{
	int code = 0;
	json_t *stc = plugin_get(s, &KUBE_STATEFULCLUSTERS, s->args->name, &code);
	if (!stc)
		return code;
	json_t *members = json_object_get(json_object_get(stc, "status"), "members");
	json_t *empty = json_array();
	if (!json_is_array(members))
		members = empty;
	struct plugin_format f = plugin_format_of(s->args);
	if (!plugin_format_is_doc(&f) && f.output != PLUGIN_OUT_NAME && !json_array_size(members)) {
		fprintf(stderr, "stc/%s has no members yet.\n", s->args->name);
	} else {
		char *text = NULL, *err = NULL;
		int rc = members_render(members, &f, &text, &err);
		code = plugin_print_rendered(rc, text, err);
	}
	json_decref(empty);
	json_decref(stc);
	return code;
}
