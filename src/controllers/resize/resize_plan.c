#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_plan_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/quantity.h"
#include "util/xalloc.h"
#include "client/kube_object.h"


void resize_action_release(struct resize_action *a)
{
	json_decref(a->state);
	a->state = NULL;
	json_decref(a->body);
	a->body = NULL;
	FREE_AND_NULL(a->status);
	FREE_AND_NULL(a->event_message);
}

const char *resize_step_name(enum resize_step s)
{
	static const char *const names[] = {"Nothing",       "Refuse",    "SetState",     "PatchPVC",
					    "DeletePod",     "Save",      "OrphanDelete", "Recreate",
					    "DeleteBackup",  "Finish",    "Wait",         "LowerRequests",
					    "Create",        "Patch",     "Delete"};
	return (size_t)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

const char *resize_action_name(const struct resize_action *a)
{
	return a->what ? a->what : resize_step_name(a->step);
}

void plan_event(struct resize_action *a, const char *type, const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	a->event_type = type;
	a->event_reason = reason;
	free(a->event_message);
	a->event_message = xvasprintf(fmt, ap);
	va_end(ap);
}

void plan_status(struct resize_action *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(a->status);
	a->status = xvasprintf(fmt, ap);
	va_end(ap);
}

void plan_wait(struct resize_action *a, long ms)
{
	a->step = RESIZE_WAIT;
	a->requeue_ms = ms;
}

/* ---- reading the cluster's objects ---- */

const json_t *plan_annotations(const json_t *obj)
{
	return json_object_get(json_object_get(obj, "metadata"), "annotations");
}

const json_t *plan_find(const json_t *list, const char *ns, const char *name)
{
	size_t i;
	json_t *o;
	if (!name)
		return NULL;
	json_array_foreach(list, i, o) {
		const char *n = kube_obj_str(o, "metadata.name");
		const char *s = kube_obj_str(o, "metadata.namespace");
		if (n && !strcmp(n, name) && (!ns || (s && !strcmp(s, ns))))
			return o;
	}
	return NULL;
}

bool plan_pod_ready(const json_t *pod)
{
	return pod && !kube_obj_str(pod, "metadata.deletionTimestamp") && kube_obj_condition(pod, "Ready", NULL);
}

/* Compares a quantity string with q; a missing or bad string counts as smaller. */
int plan_cmp_size(const char *text, const struct quantity *q)
{
	struct quantity v;
	if (!text || quantity_parse(text, &v, NULL) < 0)
		return -1;
	return quantity_cmp(&v, q);
}

long long plan_int_field(const json_t *obj, const char *a, const char *b, long long dflt)
{
	const json_t *v = json_object_get(json_object_get(obj, a), b);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

const json_t *plan_storage_class(const struct resize_inputs *in, const char *name)
{
	return plan_find(in->storage_classes, NULL, name);
}

/* The default StorageClass (annotation is-default-class "true"), or NULL. */
const json_t *plan_default_class(const struct resize_inputs *in)
{
	size_t i;
	json_t *sc;
	json_array_foreach(in->storage_classes, i, sc) {
		const json_t *ann = plan_annotations(sc);
		const char *d = json_string_value(
			json_object_get(ann, "storageclass.kubernetes.io/is-default-class"));
		if (d && !strcmp(d, "true"))
			return sc;
	}
	return NULL;
}

/* ---- the state ---- */

json_t *plan_state_of(const json_t *obj)
{
	const char *text = json_string_value(json_object_get(plan_annotations(obj), ANNOTATION_RESIZE_STATE));
	if (!text)
		return NULL;
	json_t *st = json_loads(text, 0, NULL);
	if (!json_is_object(st)) {
		json_decref(st);
		return NULL;
	}
	return st;
}

/* Null-safe: a state with a field missing (written by hand) compares unequal, never crashes. */
static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

const char *plan_state_str(const json_t *st, const char *key)
{
	return json_string_value(json_object_get(st, key));
}

json_t *plan_state_with(const json_t *st, const char *now, const char *key, json_t *value)
{
	json_t *n = json_deep_copy(st);
	json_object_set_new(n, key, value);
	json_object_set_new(n, "updated", json_string(now));
	return n;
}

void plan_set_state(struct resize_action *a, json_t *st)
{
	a->step = RESIZE_SET_STATE;
	a->state = st;
}

/* ---- starting: the request, checked against the storage classes ---- */

/*
 * Adds the vshn-style trigger: a template already bigger than some of its
 * PVCs (the user re-created the StatefulSet with a bigger template).
 */
static void add_template_targets(const struct resize_inputs *in, const char *ns, const char *sts_name,
				 long long start, long long replicas, struct resize_request *req)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(json_object_get(in->sts, "spec"), "volumeClaimTemplates"), i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		const char *size = kube_obj_str(t, "spec.resources.requests.storage");
		if (!tmpl || !size || req->ntargets == RESIZE_MAX_TEMPLATES)
			continue;
		bool asked = false;
		for (int k = 0; k < req->ntargets; k++)
			asked |= !strcmp(req->targets[k].template_name, tmpl);
		struct quantity want;
		if (asked || quantity_parse(size, &want, NULL) < 0)
			continue;
		for (long long ord = start; ord < start + replicas; ord++) {
			char pvc[512];
			snprintf(pvc, sizeof(pvc), "%s-%s-%lld", tmpl, sts_name, ord);
			const json_t *p = plan_find(in->pvcs, ns, pvc);
			if (p && plan_cmp_size(kube_obj_str(p, "spec.resources.requests.storage"), &want) < 0) {
				struct resize_target *rt = &req->targets[req->ntargets++];
				memset(rt, 0, sizeof(*rt));
				snprintf(rt->template_name, sizeof(rt->template_name), "%s", tmpl);
				rt->size = want;
				rt->template_size = want;
				break;
			}
		}
	}
}

static void plan_refuse(struct resize_action *a, const char *reason, char *message)
{
	a->step = RESIZE_REFUSE;
	plan_event(a, "Warning", reason, "%s", message);
	free(message);
}

static void plan_start(const struct resize_inputs *in, const char *now, struct resize_request *req,
		       struct resize_action *a)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *name = kube_obj_str(in->sts, "metadata.name");
	long long replicas = plan_int_field(in->sts, "spec", "replicas", 1);
	long long start = plan_int_field(json_object_get(in->sts, "spec"), "ordinals", "start", 0);
	add_template_targets(in, ns, name, start, replicas, req);
	if (!req->ntargets)
		return; /* nothing asked */

	json_t *targets = json_object();
	json_t *classes = json_object();
	bool copy = false;
	for (int i = 0; i < req->ntargets; i++) {
		struct resize_target *t = &req->targets[i];
		if (!in->storage_classes) {
			plan_refuse(a, "ResizeStorageClassUnknown",
			       xasprintf("cannot read StorageClasses (namespace scope: a Role cannot grant "
					 "them), so whether %s can grow in place is unknown; run the "
					 "operator with cluster RBAC to resize",
					 t->template_name));
			goto out;
		}
		const json_t *tmpl = resize_template(in->sts, t->template_name);
		const char *class_name = kube_obj_str(tmpl, "spec.storageClassName");
		const json_t *sc = class_name ? plan_storage_class(in, class_name) : plan_default_class(in);
		if (!sc) {
			plan_refuse(a, "ResizeStorageClassNotFound",
			       class_name ? xasprintf("volumeClaimTemplate %s names StorageClass \"%s\", "
						      "which does not exist; create it or fix the template",
						      t->template_name, class_name)
					  : xasprintf("volumeClaimTemplate %s names no StorageClass and the "
						      "cluster has no default one",
						      t->template_name));
			goto out;
		}
		bool expandable = json_is_true(json_object_get(sc, "allowVolumeExpansion"));
		const char *sc_name = kube_obj_str(sc, "metadata.name");
		if (req->strategy == RESIZE_EXPAND && !expandable) {
			plan_refuse(a, "ResizeNotExpandable",
			       xasprintf("strategy expand, but StorageClass %s does not allow volume "
					 "expansion (allowVolumeExpansion is not true); use strategy copy or auto",
					 sc_name));
			goto out;
		}
		if (t->storage_class[0] && !plan_storage_class(in, t->storage_class)) {
			plan_refuse(a, "ResizeStorageClassNotFound",
			       xasprintf("annotation " CLASS_ANNOTATION_PREFIX "%s names StorageClass \"%s\", "
					 "which does not exist; create it or fix the annotation",
					 t->template_name, t->storage_class));
			goto out;
		}
		/* One strategy for the whole resize: copy as soon as one template needs it. */
		if (!expandable || t->storage_class[0] || quantity_cmp(&t->size, &t->template_size) < 0)
			copy = true;
		char *size = quantity_format(&t->size);
		json_object_set_new(targets, t->template_name, json_string(size));
		free(size);
		json_object_set_new(classes, t->template_name,
				    json_string(t->storage_class[0] ? t->storage_class : sc_name));
	}
	if (copy || req->strategy == RESIZE_COPY) {
		copy_plan_start(in, now, req, targets, classes, a);
		goto out;
	}
	json_t *st = json_pack("{s:s, s:s, s:O, s:s, s:s, s:s}", "phase", PHASE_EXPANDING, "strategy",
			       "expand", "targets", targets, "statefulSetUID",
			       kube_obj_str(in->sts, "metadata.uid"), "started", now, "updated", now);
	plan_set_state(a, st);
	char *list = json_dumps(targets, JSON_COMPACT);
	plan_event(a, "Normal", "ResizeStarted", "resizing volumes in place: %s", list);
	plan_status(a, "Expanding");
	free(list);
out:
	json_decref(classes);
	json_decref(targets);
}

/* ---- Expanding: replica by replica, highest ordinal first ---- */

struct pvc_view {
	const json_t *pvc;
	const char *request;
	const char *capacity;
	const char *failure; /* the driver's message when expansion failed, else NULL */
	bool fs_pending;
};

static void view_pvc(const json_t *pvc, struct pvc_view *v)
{
	memset(v, 0, sizeof(*v));
	v->pvc = pvc;
	v->request = kube_obj_str(pvc, "spec.resources.requests.storage");
	v->capacity = kube_obj_str(pvc, "status.capacity.storage");
	const char *msg = NULL;
	const char *alloc = kube_obj_str(pvc, "status.allocatedResourceStatuses.storage");
	if (kube_obj_condition(pvc, "ControllerResizeError", &msg) || kube_obj_condition(pvc, "NodeResizeError", &msg))
		v->failure = msg ? msg : "the volume driver reported an error";
	else if (alloc && strstr(alloc, "Infeasible"))
		v->failure = alloc;
	v->fs_pending = kube_obj_condition(pvc, "FileSystemResizePending", NULL);
}

static void plan_expanding(const struct resize_inputs *in, const char *now, const json_t *st,
			   struct resize_action *a)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *name = kube_obj_str(in->sts, "metadata.name");
	long long replicas = plan_int_field(in->sts, "spec", "replicas", 1);
	long long start = plan_int_field(json_object_get(in->sts, "spec"), "ordinals", "start", 0);
	const json_t *targets = json_object_get(st, "targets");
	const json_t *restart = json_object_get(st, "restart");
	long long done = 0;

	for (long long ord = start + replicas - 1; ord >= start; ord--, done++) {
		char pod_name[512];
		snprintf(pod_name, sizeof(pod_name), "%s-%lld", name, ord);
		const json_t *pod = plan_find(in->pods, ns, pod_name);
		bool restarting_here = restart && same(plan_state_str(restart, "pod"), pod_name);
		const char *tmpl;
		json_t *size_json;
		json_object_foreach((json_t *)targets, tmpl, size_json) {
			char pvc_name[512];
			snprintf(pvc_name, sizeof(pvc_name), "%s-%s-%lld", tmpl, name, ord);
			const json_t *pvc = plan_find(in->pvcs, ns, pvc_name);
			struct quantity want;
			if (!pvc || quantity_parse(json_string_value(size_json), &want, NULL) < 0)
				continue; /* this replica has no such claim (yet) */
			struct pvc_view v;
			view_pvc(pvc, &v);
			const char *pvc_phase = kube_obj_str(pvc, "status.phase");
			if (!pvc_phase || strcmp(pvc_phase, "Bound")) {
				/* Only a bound claim's request may change. */
				plan_status(a, "Expanding %lld/%lld: waiting for %s to be Bound", done + 1, replicas,
				       pvc_name);
				plan_wait(a, POLL_MS);
				return;
			}
			if (plan_cmp_size(v.capacity, &want) >= 0)
				continue; /* done */
			if (v.failure) {
				plan_set_state(a, plan_state_with(st, now, "phase", json_string(PHASE_FAILED)));
				char *msg = xasprintf("%s: %s", pvc_name, v.failure);
				json_object_set_new(a->state, "message", json_string(msg));
				free(msg);
				plan_event(a, "Warning", "ResizeFailed", "expanding %s to %s failed: %s", pvc_name,
				      json_string_value(size_json), v.failure);
				plan_status(a, "Failed: %s: %s", pvc_name, v.failure);
				return;
			}
			if (plan_cmp_size(v.request, &want) < 0) {
				a->step = RESIZE_PATCH_PVC;
				snprintf(a->object, sizeof(a->object), "%s", pvc_name);
				const char *pvc_uid = kube_obj_str(pvc, "metadata.uid");
				snprintf(a->uid, sizeof(a->uid), "%s", pvc_uid ? pvc_uid : "");
				snprintf(a->size, sizeof(a->size), "%s", json_string_value(size_json));
				plan_event(a, "Normal", "ResizingVolume", "requesting %s for %s",
				      json_string_value(size_json), pvc_name);
				plan_status(a, "Expanding %lld/%lld: %s", done + 1, replicas, pvc_name);
				return;
			}
			if (!v.fs_pending) {
				plan_status(a, "Expanding %lld/%lld: %s (waiting for the volume driver)", done + 1,
				       replicas, pvc_name);
				plan_wait(a, POLL_MS);
				return;
			}
			/* The file system grows when a pod mounts the volume anew: restart the pod. */
			if (!restarting_here) {
				if (!plan_pod_ready(pod)) {
					plan_status(a, "Expanding %lld/%lld: waiting for pod %s", done + 1, replicas,
					       pod_name);
					plan_wait(a, POLL_MS);
					return;
				}
				/* Recorded before the delete, so a crash never restarts a pod twice. */
				json_t *r = json_pack("{s:s, s:s}", "pod", pod_name, "uid",
						      kube_obj_str(pod, "metadata.uid"));
				plan_set_state(a, plan_state_with(st, now, "restart", r));
				plan_status(a, "Restarting %s to grow the file system of %s", pod_name, pvc_name);
				return;
			}
			const char *old_uid = plan_state_str(restart, "uid");
			const char *uid = kube_obj_str(pod, "metadata.uid");
			if (pod && uid && old_uid && !strcmp(uid, old_uid)) {
				if (kube_obj_str(pod, "metadata.deletionTimestamp")) {
					plan_wait(a, POLL_MS);
					return;
				}
				a->step = RESIZE_DELETE_POD;
				snprintf(a->object, sizeof(a->object), "%s", pod_name);
				snprintf(a->uid, sizeof(a->uid), "%s", uid);
				plan_event(a, "Normal", "RestartingPod",
				      "restarting %s: %s reports FileSystemResizePending", pod_name, pvc_name);
				plan_status(a, "Restarting %s", pod_name);
				return;
			}
			plan_status(a, "Waiting for %s to come back and finish the file system resize", pod_name);
			plan_wait(a, POLL_MS);
			return;
		}
		/* A restarted pod must be Ready again before the next replica is touched. */
		if (restarting_here && !plan_pod_ready(pod)) {
			plan_status(a, "Waiting for %s to be Ready", pod_name);
			plan_wait(a, POLL_MS);
			return;
		}
	}
	plan_set_state(a, plan_state_with(st, now, "phase", json_string(PHASE_SAVING)));
	json_object_del(a->state, "restart");
	plan_event(a, "Normal", "VolumesResized", "every volume has its new size; updating the StatefulSet");
	plan_status(a, "Saving the StatefulSet");
}

/* ---- keeping the StatefulSet in step ---- */

json_t *resize_saved_copy(const json_t *sts)
{
	json_t *copy = json_deep_copy(sts);
	json_object_del(copy, "status");
	json_t *meta = json_object_get(copy, "metadata");
	static const char *const server_set[] = {"uid", "resourceVersion", "generation", "creationTimestamp",
						 "managedFields", "deletionTimestamp",
						 "deletionGracePeriodSeconds", "selfLink"};
	for (size_t i = 0; i < sizeof(server_set) / sizeof(server_set[0]); i++)
		json_object_del(meta, server_set[i]);
	return copy;
}

json_t *resize_with_new_sizes(const json_t *saved, const json_t *state)
{
	json_t *sts = json_deep_copy(saved);
	const json_t *targets = json_object_get(state, "targets");
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

/* ---- the plan ---- */

static bool annotation_true(const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(plan_annotations(obj), key));
	return v && !strcmp(v, "true");
}

/* While the StatefulSet is gone, the state is on the backup ConfigMap, or in the copy it saved. */
static json_t *backup_state(const json_t *backup, const json_t *saved)
{
	json_t *st = plan_state_of(backup);
	return st ? st : saved ? plan_state_of(saved) : NULL;
}

static void plan_without_statefulset(const struct resize_inputs *in, const char *now,
				     struct resize_action *a)
{
	json_t *saved = in->backup ? plan_saved_statefulset(in->backup) : NULL;
	json_t *st = in->backup ? backup_state(in->backup, saved) : NULL;
	const char *phase = st ? plan_state_str(st, "phase") : NULL;
	if (st && !strcmp(plan_state_str(st, "strategy") ? plan_state_str(st, "strategy") : "", "copy")) {
		/* The user can abort on the ConfigMap while the StatefulSet is gone. */
		bool abort_asked = annotation_true(in->backup, ANNOTATION_ABORT) || annotation_true(saved, ANNOTATION_ABORT);
		if (!annotation_true(saved, ANNOTATION_IGNORE))
			copy_plan(in, now, abort_asked, st, a);
	} else if (phase && !strcmp(phase, PHASE_RECREATING)) {
		a->step = RESIZE_RECREATE;
		a->new_template = 1;
		a->state = plan_state_with(st, now, "phase", json_string(PHASE_ADOPTING));
		plan_event(a, "Normal", "StatefulSetRecreated",
		      "re-created the StatefulSet from its saved copy with the new volume sizes");
		plan_status(a, "Adopting the pods");
	}
	json_decref(st);
	json_decref(saved);
}

void resize_plan(const struct resize_inputs *in, const char *now, struct resize_action *a)
{
	memset(a, 0, sizeof(*a));
	a->step = RESIZE_NOTHING;
	if (!in->sts) {
		plan_without_statefulset(in, now, a);
		return;
	}
	struct resize_request req;
	struct refusal refusal;
	int parsed = resize_request_parse(in->sts, &req, &refusal);
	if (parsed == 0 && req.ignore)
		return;
	json_t *st = plan_state_of(in->sts);
	const char *phase = st ? plan_state_str(st, "phase") : NULL;
	const char *uid = kube_obj_str(in->sts, "metadata.uid");

	bool copying = st && plan_state_str(st, "strategy") && !strcmp(plan_state_str(st, "strategy"), "copy");
	if (copying && phase && (!strcmp(phase, PHASE_COPYING) || !strcmp(phase, PHASE_CLEANING))) {
		/* Everything the copy needs was recorded when it started: the annotations may change now. */
		copy_plan(in, now, annotation_true(in->sts, ANNOTATION_ABORT), st, a);
	} else if (!phase) {
		if (parsed < 0) {
			plan_refuse(a, refusal.reason, refusal.message);
			refusal.message = NULL;
		} else if (in->backup) {
			/* A leftover copy of an earlier StatefulSet (a different UID now exists). */
			a->step = RESIZE_DELETE_BACKUP;
		} else if (!req.abort) {
			plan_start(in, now, &req, a);
		}
	} else if (req.abort && !strcmp(phase, PHASE_EXPANDING)) {
		a->step = RESIZE_FINISH;
		plan_event(a, "Warning", "ResizeAborted",
		      "resize aborted on request; volumes already grown keep their new size (a volume "
		      "cannot shrink in place), the StatefulSet template is unchanged");
	} else if (!strcmp(phase, PHASE_EXPANDING)) {
		plan_expanding(in, now, st, a);
	} else if (!strcmp(phase, PHASE_SAVING)) {
		json_t *saved = in->backup ? plan_saved_statefulset(in->backup) : NULL;
		json_t *saved_state = saved ? plan_state_of(saved) : NULL;
		if (saved_state && same(plan_state_str(saved_state, "statefulSetUID"), uid)) {
			plan_set_state(a, plan_state_with(st, now, "phase", json_string(PHASE_RECREATING)));
			plan_status(a, "Re-creating the StatefulSet");
		} else if (in->backup) {
			a->step = RESIZE_DELETE_BACKUP; /* a stale copy: make room for ours */
		} else {
			a->step = RESIZE_SAVE;
			a->state = plan_state_with(st, now, "phase", json_string(PHASE_RECREATING));
			plan_status(a, "Saving the StatefulSet");
		}
		json_decref(saved_state);
		json_decref(saved);
	} else if (!strcmp(phase, PHASE_RECREATING)) {
		if (kube_obj_str(in->sts, "metadata.deletionTimestamp")) {
			/* Orphan deletion under way: the garbage collector is releasing the pods. */
			plan_status(a, "Re-creating the StatefulSet");
			plan_wait(a, POLL_MS);
		} else if (same(plan_state_str(st, "statefulSetUID"), uid)) {
			a->step = RESIZE_ORPHAN_DELETE;
			snprintf(a->uid, sizeof(a->uid), "%s", uid);
			plan_event(a, "Normal", "OrphanDeleting",
			      "deleting the StatefulSet with propagationPolicy Orphan (its pods keep running) "
			      "to re-create it with the new volume sizes");
			plan_status(a, "Re-creating the StatefulSet");
		}
	} else if (!strcmp(phase, PHASE_ADOPTING)) {
		const char *ns = kube_obj_str(in->sts, "metadata.namespace");
		const char *name = kube_obj_str(in->sts, "metadata.name");
		long long replicas = plan_int_field(in->sts, "spec", "replicas", 1);
		long long start = plan_int_field(json_object_get(in->sts, "spec"), "ordinals", "start", 0);
		for (long long ord = start; ord < start + replicas; ord++) {
			char pod_name[512];
			snprintf(pod_name, sizeof(pod_name), "%s-%lld", name, ord);
			const json_t *pod = plan_find(in->pods, ns, pod_name);
			const json_t *owners = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
			bool owned = false;
			size_t i;
			json_t *o;
			json_array_foreach(owners, i, o) owned |= !strcmp(kube_obj_str(o, "uid"), uid);
			if (pod && !owned) {
				plan_status(a, "Waiting for the new StatefulSet to adopt %s", pod_name);
				plan_wait(a, POLL_MS);
				goto out;
			}
		}
		if (in->backup) {
			a->step = RESIZE_DELETE_BACKUP;
		} else {
			a->step = RESIZE_FINISH;
			plan_event(a, "Normal", "ResizeCompleted", "volumes resized in place; the StatefulSet "
							      "carries the new sizes and owns its pods");
		}
	} else if (!strcmp(phase, PHASE_FAILED)) {
		/* Stays failed (and reported) until the user changes what is asked. */
		const json_t *targets = json_object_get(st, "targets");
		bool changed = parsed < 0 || req.abort;
		for (int i = 0; i < req.ntargets && !changed; i++) {
			const char *s = json_string_value(json_object_get(targets, req.targets[i].template_name));
			const char *cls = json_string_value(
				json_object_get(json_object_get(st, "classes"), req.targets[i].template_name));
			changed = !s || plan_cmp_size(s, &req.targets[i].size) != 0 ||
				  (req.targets[i].storage_class[0] && (!cls || strcmp(cls, req.targets[i].storage_class)));
		}
		if (changed) {
			a->step = RESIZE_FINISH;
			plan_event(a, "Normal", "ResizeReset", "the request changed after a failed resize; starting over");
		} else if (!copying && !json_object_get(st, "lowered")) {
			a->step = RESIZE_LOWER_REQUESTS;
			a->state = json_deep_copy(st);
		}
	}
out:
	refusal_release(&refusal);
	json_decref(st);
}
