/*
 * `kubectl stateful explain sts/NAME`: why a resize or a cleanup was
 * refused, failed or is waiting: the state, the operator's status lines,
 * and the Warning Events about the set (the operator's refusals say what
 * to change), oldest first.
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_commands.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

static void print_warnings(const json_t *events, const char *name)
{
	size_t i, n = 0;
	const json_t *e;
	json_array_foreach(events, i, e) {
		const char *type = kube_obj_str(e, "type");
		const char *on = kube_obj_str(e, "involvedObject.name");
		if (!type || strcmp(type, "Warning") || !on || strcmp(on, name))
			continue;
		if (!n++)
			printf("\nWarnings (oldest first):\n");
		/* Anyone who may create Events in the namespace writes these. */
		char *when = text_sanitize(kube_obj_str(e, "lastTimestamp"), 0);
		char *reason = text_sanitize(kube_obj_str(e, "reason"), 0);
		char *msg = text_sanitize(kube_obj_str(e, "message"), 0);
		printf("  %s  %s (x%lld): %s\n", when ? when : "-", reason ? reason : "?", kube_obj_int(e, "count", NULL, 1),
		       msg ? msg : "");
		free(msg);
		free(reason);
		free(when);
	}
	if (!n)
		printf("\nNo Warning Events about sts/%s (Events expire after an hour by default).\n", name);
}

int plugin_cmd_explain(struct plugin_session *s)
{
	const char *name = s->args->name;
	json_t *holder = NULL;
	struct resize_view v;
	int code = plugin_open_resize(s, name, &v, &holder);
	if (code)
		return code;
	printf("sts/%s in namespace %s\n", name, s->ns);
	if (kube_obj_annotation_true(holder, ANNOTATION_IGNORE))
		printf("\nIgnored: annotation %s is \"true\"; the operator leaves this set alone. Remove it to let "
		       "the operator act.\n",
		       ANNOTATION_IGNORE);
	if (v.active) {
		printf("\nResize: phase %s, strategy %s, started %s\n", v.phase ? v.phase : "?",
		       v.strategy ? v.strategy : "?", v.started ? v.started : "?");
		if (v.status)
			printf("  status: %s\n", v.status);
		if (v.phase && !strcmp(v.phase, "Failed"))
			printf("  failed: %s\n  To start over, change the resize annotation (kubectl stateful resize "
			       "sts/%s TEMPLATE=SIZE).\n",
			       v.message ? v.message : "(no message)", name);
		else if (v.step)
			printf("  the copy's batch is at step %s\n", v.step);
	} else {
		printf("\nResize: none under way.\n");
	}
	char *sd = text_sanitize(kube_obj_annotation(holder, ANNOTATION_SCALEDOWN_STATUS), 0);
	if (sd)
		printf("\nCleanup: %s\n  (kubectl stateful cleanup sts/%s shows each claim set)\n", sd, name);
	free(sd);
	json_t *events = plugin_events(s, s->ns);
	print_warnings(events, name);
	json_decref(events);
	resize_view_release(&v);
	json_decref(holder);
	return 0;
}
