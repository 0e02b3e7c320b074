/*
 * `kubectl stateful abort sts/NAME`: sets resize-abort on the StatefulSet,
 * or on its backup ConfigMap while the set is gone mid-copy (README,
 * "resize-abort").
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_commands.h"
#include "util/xalloc.h"

int plugin_cmd_abort(struct plugin_session *s)
{
	const char *name = s->args->name;
	json_t *holder = NULL;
	struct resize_view v;
	int code = plugin_open_resize(s, name, &v, &holder);
	if (code)
		return code;
	if (!v.active) {
		plugin_error("sts/%s has no resize under way; nothing to abort", name);
		code = PLUGIN_EXIT_FAILED;
	} else if (!(code = plugin_require_operator(s))) {
		const char *kind = kube_obj_str(holder, "kind");
		bool on_backup = kind && !strcmp(kind, "ConfigMap");
		json_t *patch = json_pack("{s:{s:{s:s}, s:s}}", "metadata", "annotations", ANNOTATION_ABORT, "true", "uid",
					  kube_obj_str(holder, "metadata.uid"));
		struct kube_error err;
		if (kube_patch(s->client, on_backup ? &KUBE_CONFIGMAPS : &KUBE_STATEFULSETS, s->ns,
			       kube_obj_str(holder, "metadata.name"), NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0) {
			plugin_error("annotating %s: %s", kube_obj_str(holder, "metadata.name"), err.message);
			code = PLUGIN_EXIT_FAILED;
		} else {
			printf("sts/%s: abort requested (%s %s); the resize was %s\n", name, on_backup ? "on ConfigMap" : "on",
			       on_backup ? kube_obj_str(holder, "metadata.name") : "the StatefulSet",
			       v.status ? v.status : v.phase ? v.phase : "under way");
		}
		json_decref(patch);
	}
	resize_view_release(&v);
	json_decref(holder);
	return code;
}
