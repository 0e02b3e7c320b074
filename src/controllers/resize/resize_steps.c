#include "controllers/resize/resize_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "controllers/state_seal.h"
#include "util/xalloc.h"

/* ---- names ---- */

char *resize_pod_name(const char *sts, long long ord)
{
	return xasprintf("%s-%lld", sts, ord);
}

char *resize_claim_name(const char *tmpl, const char *sts, long long ord)
{
	return xasprintf("%s-%s-%lld", tmpl, sts, ord);
}

char *resize_claim_prefix(const char *tmpl, const char *sts)
{
	return xasprintf("%s-%s-", tmpl, sts);
}

char *resize_new_claim_name(const char *claim)
{
	return xasprintf("%s" TEMP_SUFFIX, claim);
}

char *resize_backup_name(const char *sts)
{
	return xasprintf("%s" BACKUP_SUFFIX, sts);
}

/* Long names get a hash, so truncated names stay apart. */
char *resize_job_name(const char *sts, long long ord, const char *suffix)
{
	char *name = xasprintf("%s-%lld-%s", sts, ord, suffix);
	if (strlen(name) <= 63)
		return name;
	uint32_t h = 2166136261u; /* FNV-1a of the full name */
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	char *short_name = xasprintf("%.*s-%08x-%lld-%s", 30, sts, h, ord, suffix);
	free(name);
	return short_name;
}

/* ---- reading the cluster's objects ---- */

int plan_cmp_size(const char *text, const struct quantity *q)
{
	struct quantity v;
	if (!text || quantity_parse(text, &v, NULL) < 0)
		return -1;
	return quantity_cmp(&v, q);
}

const json_t *plan_storage_class(const struct resize_inputs *in, const char *name)
{
	if (name)
		return kube_list_find(in->storage_classes, NULL, name);
	size_t i;
	json_t *sc;
	json_array_foreach(in->storage_classes, i, sc) {
		if (kube_obj_annotation_true(sc, "storageclass.kubernetes.io/is-default-class"))
			return sc;
	}
	return NULL;
}

json_t *plan_saved_statefulset(const json_t *backup)
{
	/* The key has a dot in it: not a path for kube_obj_str. */
	const char *text = json_string_value(json_object_get(json_object_get(backup, "data"), BACKUP_KEY));
	json_t *sts = text ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(sts)) {
		json_decref(sts);
		return NULL;
	}
	return sts;
}

long long plan_replicas(const json_t *sts, long long *start)
{
	*start = kube_obj_int(json_object_get(sts, "spec"), "ordinals", "start", 0);
	return kube_obj_int(sts, "spec", "replicas", 1);
}

bool plan_pods_adopted(const struct resize_inputs *in, const char *ns, const char *sts, const json_t *ordinals,
		       long long start, long long count, const char *uid, char **missing)
{
	size_t n = ordinals ? json_array_size(ordinals) : (size_t)count;
	for (size_t i = 0; i < n; i++) {
		long long ord = ordinals ? json_integer_value(json_array_get(ordinals, i)) : start + (long long)i;
		char *pod_name = resize_pod_name(sts, ord);
		const json_t *pod = kube_list_find(in->pods, ns, pod_name);
		/* Adopting: a pod that is not there yet is none to wait for; a batch's pod must be Ready too. */
		bool ok = ordinals ? kube_obj_owned_by(pod, uid) && kube_pod_ready(pod)
				   : !pod || kube_obj_owned_by(pod, uid);
		if (!ok) {
			*missing = pod_name;
			return false;
		}
		free(pod_name);
	}
	return true;
}

bool plan_saved_for(const struct resize_inputs *in, const char *uid)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	struct resize_state st;
	resize_state_read(saved, &st);
	bool yes = st.uid && uid && !strcmp(st.uid, uid);
	resize_state_release(&st);
	json_decref(saved);
	return yes;
}

/* The annotations of sts but the resize's own, which every step rewrites on the live set. */
static json_t *user_annotations(const json_t *sts)
{
	json_t *ann = json_deep_copy(json_object_get(json_object_get(sts, "metadata"), "annotations"));
	if (!ann)
		return json_object();
	json_object_del(ann, ANNOTATION_RESIZE_STATE);
	json_object_del(ann, ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX);
	json_object_del(ann, ANNOTATION_RESIZE_STATUS);
	return ann;
}

static bool same_member(const json_t *a, const json_t *b, const char *key)
{
	const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
	return (!x && !y) || (x && y && json_equal(x, y));
}

bool plan_saved_is_stale(const struct resize_inputs *in)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	if (!saved || !in->sts) {
		json_decref(saved);
		return false;
	}
	json_t *saved_ann = user_annotations(saved), *live_ann = user_annotations(in->sts);
	bool same = json_equal(saved_ann, live_ann) && same_member(saved, in->sts, "spec") &&
		    same_member(json_object_get(saved, "metadata"), json_object_get(in->sts, "metadata"), "labels");
	json_decref(saved_ann);
	json_decref(live_ann);
	json_decref(saved);
	return !same;
}

/* ---- the steps on the StatefulSet ---- */

void plan_refuse(struct action *a, const char *reason, char *message)
{
	a->verb = ACTION_REFUSE;
	action_event(a, "Warning", reason, "%s", message);
	free(message);
}

void plan_set_state(const struct resize_inputs *in, struct action *a, json_t *st)
{
	const json_t *on = in->sts ? in->sts : in->backup;
	action_patch(a, "SetState", in->sts ? &KUBE_STATEFULSETS : &KUBE_CONFIGMAPS, kube_obj_str(on, "metadata.name"),
		     NULL);
	json_decref(a->state);
	a->state = st;
}

void plan_finish(const struct resize_inputs *in, struct action *a)
{
	plan_set_state(in, a, NULL);
	a->what = "Finish";
}

void plan_save(struct action *a, json_t *st)
{
	a->verb = ACTION_OWN;
	a->what = "Save";
	a->resource = &KUBE_CONFIGMAPS;
	json_decref(a->state);
	a->state = st;
}

void plan_orphan_delete(const struct resize_inputs *in, struct action *a)
{
	action_delete(a, "OrphanDelete", &KUBE_STATEFULSETS, in->sts);
	a->propagation = "Orphan";
	/*
	 * Only the set as saved (plan_saved_is_stale said so of this version):
	 * a change made since is refused with 409, seen, and saved first.
	 */
	const char *rv = kube_obj_str(in->sts, "metadata.resourceVersion");
	snprintf(a->resource_version, sizeof(a->resource_version), "%s", rv ? rv : "");
	a->answers = ACTION_OK_404 | ACTION_STALE_409;
}

/* How often an unreadable saved copy is looked at again. */
#define UNREADABLE_BACKUP_RETRY_MS (60L * 1000)

json_t *resize_recreated(const json_t *saved, json_t *st, bool new_template, bool keep_abort)
{
	json_t *sts = new_template ? resize_with_new_sizes(saved, st) : json_deep_copy(saved);
	json_t *meta = json_object_get(sts, "metadata");
	/* A create records its caller as the owner of every field: the saved owners are put back next. */
	if (json_array_size(json_object_get(meta, "managedFields")))
		json_object_set_new(st, "restoreFieldManagers", json_true());
	json_object_del(meta, "managedFields");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	json_t *ann = json_object_get(meta, "annotations");
	char *text = resize_state_text(st);
	json_object_set_new(ann, ANNOTATION_RESIZE_STATE, json_string(text));
	free(text);
	/* An abort asked on the ConfigMap while the StatefulSet was gone stays asked. */
	if (keep_abort)
		json_object_set_new(ann, ANNOTATION_ABORT, json_string("true"));
	/* A scale-down state was sealed for the set that went: it would not hold on this one; scale-down rebuilds it. */
	json_object_del(ann, ANNOTATION_SCALEDOWN_STATE);
	json_object_del(ann, ANNOTATION_SCALEDOWN_STATE STATE_SEAL_SUFFIX);
	return sts;
}

bool plan_recreate(const struct resize_inputs *in, struct action *a, json_t *st, bool new_template,
		   bool keep_abort)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	if (!saved) {
		/* Nothing to re-create from: say so, and look again later (the ConfigMap may be restored). */
		json_decref(st);
		a->verb = ACTION_REFUSE;
		a->requeue_ms = UNREADABLE_BACKUP_RETRY_MS;
		action_event(a, "Warning", "ResizeBackupUnreadable",
			     "ConfigMap %s holds no readable StatefulSet under data.%s, so the StatefulSet cannot be "
			     "re-created from it; restore the ConfigMap as the operator wrote it, or re-create the "
			     "StatefulSet from your manifest",
			     kube_obj_str(in->backup, "metadata.name"), BACKUP_KEY);
		return false;
	}
	json_t *sts = resize_recreated(saved, st, new_template, keep_abort);
	json_decref(saved);
	/* The controller's own step: the create's answer names the new set, which its backup then records. */
	action_create(a, "Recreate", &KUBE_STATEFULSETS, sts);
	a->verb = ACTION_OWN;
	json_decref(a->state);
	a->state = st;
	return true;
}

void plan_restore_field_managers(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
				 struct action *a)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	const json_t *managers = json_object_get(json_object_get(saved, "metadata"), "managedFields");
	json_t *n = resize_state_next(st, now_ms, st->phase);
	json_object_del(n, "restoreFieldManagers");
	if (!json_array_size(managers)) {
		plan_set_state(in, a, n); /* nothing saved to put back */
		goto out;
	}
	/* managedFields set explicitly replace the server's record (a merge patch replaces the list). */
	char *text = resize_state_text(n);
	action_patch(a, "RestoreFieldManagers", &KUBE_STATEFULSETS, kube_obj_str(in->sts, "metadata.name"),
		     json_pack("{s:{s:O, s:{s:s}}}", "metadata", "managedFields", managers, "annotations",
			       ANNOTATION_RESIZE_STATE, text));
	free(text);
	action_patch_precondition(a, kube_obj_str(in->sts, "metadata.resourceVersion"), NULL);
	json_decref(a->state);
	a->state = n;
out:
	json_decref(saved);
}

void plan_delete_backup(const struct resize_inputs *in, struct action *a)
{
	/*
	 * The copy that was read, by UID: a repeat after an unknown outcome
	 * never takes a newer one (409, looked at again).
	 */
	action_delete(a, "DeleteBackup", &KUBE_CONFIGMAPS, in->backup);
	a->answers = ACTION_OK_404 | ACTION_STALE_409;
}

void plan_delete(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj)
{
	action_delete(a, what, r, obj);
	a->answers = ACTION_OK_404 | ACTION_OK_409;
	if (r == &KUBE_JOBS)
		a->propagation = "Background"; /* its pods go too */
}

bool plan_delete_or_wait(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj)
{
	if (kube_obj_terminating(obj)) {
		action_wait(a, POLL_MS);
		return false;
	}
	plan_delete(a, what, r, obj);
	return true;
}

void plan_patch_pv(struct action *a, const char *what, const json_t *pv, json_t *body)
{
	action_patch(a, what, &KUBE_PVS, kube_obj_str(pv, "metadata.name"), body);
	action_patch_precondition(a, kube_obj_str(pv, "metadata.resourceVersion"), NULL);
}

void plan_restore_policy(struct action *a, const char *what, const json_t *pv, const char *policy)
{
	plan_patch_pv(a, what, pv,
		      json_pack("{s:{s:{s:n, s:n}}, s:{s:s}}", "metadata", "annotations", ANNOTATION_RECLAIM_POLICY,
				ANNOTATION_TAKEN_FOR, "spec", "persistentVolumeReclaimPolicy", policy));
}

const char *plan_reclaim_policy(const json_t *pv)
{
	return kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy");
}

const char *plan_original_policy(const json_t *pv)
{
	return kube_obj_annotation(pv, ANNOTATION_RECLAIM_POLICY);
}

/* ---- the StatefulSet as saved and re-created ---- */

json_t *resize_saved_copy(const json_t *sts)
{
	json_t *copy = json_deep_copy(sts);
	json_object_del(copy, "status");
	json_t *meta = json_object_get(copy, "metadata");
	static const char *const server_set[] = {"uid", "resourceVersion", "generation", "creationTimestamp",
						 "deletionTimestamp",
						 "deletionGracePeriodSeconds", "selfLink"};
	for (size_t i = 0; i < sizeof(server_set) / sizeof(server_set[0]); i++)
		json_object_del(meta, server_set[i]);
	return copy;
}

/* The desired-templates annotation goes once it is what was carried out; a newer one stays, to be carried out next. */
static void drop_desired_carried_out(json_t *sts, const json_t *templates)
{
	json_t *ann = json_object_get(json_object_get(sts, "metadata"), "annotations");
	const char *text = json_string_value(json_object_get(ann, ANNOTATION_DESIRED_TEMPLATES));
	json_t *desired = text ? json_loads(text, 0, NULL) : NULL;
	if (desired && json_equal(desired, templates))
		json_object_del(ann, ANNOTATION_DESIRED_TEMPLATES);
	json_decref(desired);
}

json_t *resize_with_new_sizes(const json_t *saved, const json_t *state)
{
	json_t *sts = json_deep_copy(saved);
	const json_t *targets = json_object_get(state, "targets");
	const json_t *templates = json_object_get(state, "templates");
	json_t *spec = json_object_get(sts, "spec");
	if (json_is_array(templates) && json_is_object(spec)) {
		json_object_set_new(spec, "volumeClaimTemplates",
				    resize_templates_merged(json_object_get(spec, "volumeClaimTemplates"), templates));
		drop_desired_carried_out(sts, templates);
	}
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), i, t) {
		const char *name = kube_obj_str(t, "metadata.name");
		const char *size = name ? json_string_value(json_object_get(targets, name)) : NULL;
		json_t *requests = json_object_get(json_object_get(json_object_get(t, "spec"), "resources"),
						   "requests");
		if (size && json_is_object(requests))
			json_object_set_new(requests, "storage", json_string(size));
		const char *cls = name ? json_string_value(json_object_get(json_object_get(state, "classes"), name))
				       : NULL;
		if (cls)
			json_object_set_new(json_object_get(t, "spec"), "storageClassName", json_string(cls));
	}
	return sts;
}
