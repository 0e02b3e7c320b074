/*
 * `kubectl stateful cleanup sts/NAME [--retry]`: the scale-down cleanups
 * of a StatefulSet (README "Cleaning up after a scale-down"): each claim
 * set with its failed attempts and next retry, and the cleanup pods.
 * --retry re-arms the sets given up by dropping their entries from
 * scaledown-state (a merge patch guarded by the resourceVersion read).
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_cleanup.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_table.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

static int retry(struct plugin_session *s, const json_t *sts, json_t *state, size_t given_up)
{
	const char *name = s->args->name;
	if (!given_up) {
		printf("sts/%s: no claim set was given up; nothing to re-arm\n", name);
		return 0;
	}
	int code = plugin_require_operator(s);
	if (code)
		return code;
	json_t *left = cleanup_state_rearmed(state, cleanup_max_attempts(sts));
	char *text = json_object_size(json_object_get(left, "ordinals")) ? json_dumps(left, JSON_COMPACT | JSON_SORT_KEYS)
									 : NULL;
	json_t *patch = json_pack("{s:{s:{s:s?}, s:s}}", "metadata", "annotations", ANNOTATION_SCALEDOWN_STATE, text,
				  "resourceVersion", kube_obj_str(sts, "metadata.resourceVersion"));
	struct kube_error err;
	if (kube_patch(s->client, &KUBE_STATEFULSETS, s->ns, name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0) {
		plugin_error("re-arming the cleanups of sts/%s: %s%s", name, err.message,
			     err.code == 409 ? " (it changed meanwhile: run it again)" : "");
		code = PLUGIN_EXIT_FAILED;
	} else {
		printf("sts/%s: %zu claim set%s re-armed; the operator starts their cleanup again\n", name, given_up,
		       given_up == 1 ? "" : "s");
	}
	json_decref(patch);
	free(text);
	json_decref(left);
	return code;
}

int plugin_cmd_cleanup(struct plugin_session *s)
{
	const char *name = s->args->name;
	int code = 0;
	json_t *sts = plugin_get(s, &KUBE_STATEFULSETS, name, &code);
	if (!sts)
		return code;
	const char *text = kube_obj_annotation(sts, ANNOTATION_SCALEDOWN_STATE);
	json_t *state = text ? json_loads(text, 0, NULL) : NULL;
	char *selector = xasprintf("%s=%s", LABEL_CLEANUP_FOR, name);
	json_t *pods = NULL;
	struct kube_error err;
	if (kube_list_all(s->client, &KUBE_PODS, s->ns, selector, 0, &pods, NULL, &err) < 0)
		pods = json_array();
	size_t given_up = 0;
	json_t *rows = cleanup_rows(sts, state, pods, &given_up);
	char *status = text_sanitize(kube_obj_annotation(sts, ANNOTATION_SCALEDOWN_STATUS), 0);
	struct plugin_format f = plugin_format_of(s->args);
	bool table = f.output == PLUGIN_OUT_TABLE || f.output == PLUGIN_OUT_WIDE;
	if (s->args->retry) {
		code = retry(s, sts, state, given_up);
	} else if (table && !json_array_size(rows)) {
		printf("sts/%s: no cleanup under way or recorded%s%s\n", name, status ? "; status: " : "",
		       status ? status : "");
	} else {
		char *out = NULL, *err_text = NULL;
		int rc = cleanup_render(rows, &f, &out, &err_text);
		code = plugin_print_rendered(rc, out, err_text);
		/* json, yaml, jsonpath, name and --no-headers: stdout holds the listing alone, for a script. */
		FILE *notes = table && !f.no_headers ? stdout : stderr;
		if (status)
			fprintf(notes, "\nstatus: %s\n", status);
		if (given_up)
			fprintf(notes, "%zu claim set%s given up: kubectl stateful cleanup sts/%s --retry\n", given_up,
				given_up == 1 ? "" : "s", name);
	}
	free(status);
	json_decref(rows);
	json_decref(pods);
	free(selector);
	json_decref(state);
	json_decref(sts);
	return code;
}
