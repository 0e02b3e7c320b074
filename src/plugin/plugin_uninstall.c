#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_state.h"
#include "plugin/plugin_uninstall.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* The row of ns/name in rows, made when missing. Borrowed from rows. */
static json_t *row_for(json_t *rows, const char *ns, const char *name)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
		if (!strcmp(kube_obj_str(r, "namespace"), ns) && !strcmp(kube_obj_str(r, "name"), name))
			return r;
	r = json_pack("{s:s, s:s, s:b, s:b}", "namespace", ns, "name", name, "finalizer", 0, "terminating", 0);
	json_array_append_new(rows, r);
	return r;
}

/* Adds a blocker to ns/name; what and finish are new strings, taken. */
static void block(json_t *rows, const char *ns, const char *name, char *what, char *finish)
{
	json_t *r = row_for(rows, ns, name);
	json_t *b = json_object_get(r, "blockers");
	if (!b) {
		b = json_array();
		json_object_set_new(r, "blockers", b);
	}
	json_array_append_new(b, json_pack("{s:s, s:s}", "what", what, "finish", finish));
	free(what);
	free(finish);
}

/* A resize that still works towards new volumes, or in a phase this version does not know. */
static void scan_resize(json_t *rows, const char *ns, const char *name, const json_t *sts)
{
	struct resize_state st;
	if (!resize_state_read(sts, &st))
		goto out;
	switch (st.phase) {
	case RESIZE_PHASE_NONE:
	case RESIZE_PHASE_FAILED:   /* an end: nothing left half-way */
	case RESIZE_PHASE_CLEANING: /* done; the old volumes stay Retained and labelled */
		goto out;
	default:
		break;
	}
	char *phase = text_sanitize(kube_obj_str(st.json, "phase"), 64);
	block(rows, ns, name, xasprintf("a resize is in flight (phase %s)", phase ? phase : "?"),
	      xasprintf("let it finish (kubectl stateful status sts/%s -n %s), or abort it (kubectl stateful abort "
			"sts/%s -n %s) and wait until its phase is Failed",
			name, ns, name, ns));
	free(phase);
out:
	resize_state_release(&st);
}

json_t *uninstall_scan(const json_t *sets, const json_t *backups, const json_t *cleanup_pods)
{
	json_t *rows = json_array();
	size_t i;
	const json_t *o;
	json_array_foreach(sets, i, o) {
		const char *ns = kube_obj_str(o, "metadata.namespace"), *name = kube_obj_str(o, "metadata.name");
		if (!ns || !name)
			continue;
		if (kube_obj_has_finalizer(o, FINALIZER_SCALEDOWN)) {
			json_t *r = row_for(rows, ns, name);
			json_object_set_new(r, "finalizer", json_true());
			json_object_set_new(r, "terminating", json_boolean(kube_obj_terminating(o)));
			const char *when = kube_obj_str(o, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted");
			json_object_set_new(r, "claimsDeleted", json_boolean(when && !strcmp(when, "Delete")));
		}
		scan_resize(rows, ns, name, o);
	}
	json_array_foreach(backups, i, o) {
		const char *ns = kube_obj_str(o, "metadata.namespace"), *cm = kube_obj_str(o, "metadata.name");
		const char *set = kube_obj_label(o, LABEL_SAVED_STATEFULSET);
		if (!ns || !cm || !set)
			continue;
		bool set_exists = kube_list_find(sets, ns, set) != NULL;
		block(rows, ns, set,
		      xasprintf("a resize re-creates the StatefulSet: ConfigMap %s holds it%s", cm,
				set_exists ? " until the re-created set is adopted" : " (the set is gone meanwhile)"),
		      xasprintf("let it finish (kubectl stateful status sts/%s -n %s) until the ConfigMap is gone", set,
				ns));
	}
	json_array_foreach(cleanup_pods, i, o) {
		const char *ns = kube_obj_str(o, "metadata.namespace"), *pod = kube_obj_str(o, "metadata.name");
		const char *set = kube_obj_label(o, LABEL_CLEANUP_FOR);
		if (!ns || !pod || !set)
			continue;
		char *phase = text_sanitize(kube_obj_str(o, "status.phase"), 32);
		block(rows, ns, set,
		      xasprintf("a scale-down cleanup runs: pod %s (%s)", pod, phase ? phase : "Pending"),
		      xasprintf("let it finish (kubectl stateful cleanup sts/%s -n %s shows no pod), or end it: kubectl "
				"annotate sts/%s -n %s stateful-operator.io/ignore=true, then kubectl delete pod %s -n %s "
				"(its claims stay)",
				set, ns, set, ns, pod, ns));
		free(phase);
	}
	return rows;
}

size_t uninstall_blocked(const json_t *rows)
{
	size_t n = 0, i;
	const json_t *r;
	json_array_foreach(rows, i, r)
		n += json_array_size(json_object_get(r, "blockers")) > 0;
	return n;
}

json_t *uninstall_finalizer_patch(const json_t *obj, const char *finalizer)
{
	const json_t *fins = json_object_get(json_object_get(obj, "metadata"), "finalizers");
	json_t *patch = NULL;
	for (size_t i = json_array_size(fins); i-- > 0;) {
		const json_t *f = json_array_get(fins, i);
		if (!json_is_string(f) || strcmp(json_string_value(f), finalizer))
			continue;
		if (!patch)
			patch = json_array();
		char path[48];
		snprintf(path, sizeof(path), "/metadata/finalizers/%zu", i);
		json_array_append_new(patch, json_pack("{s:s, s:s, s:s}", "op", "test", "path", path, "value", finalizer));
		json_array_append_new(patch, json_pack("{s:s, s:s}", "op", "remove", "path", path));
	}
	return patch;
}
