#include "controllers/resize/resize_controller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/quantity.h"
#include "controllers/claim_names.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_volume_owner.h"
#include "controllers/set_index.h"
#include "controllers/state_seal.h"
#include "runtime/crash_hook.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

struct resize_ctx {
	struct resize_deps deps;
	struct controller *controller;
	struct resize_caches caches;
	struct crash_hook crash;
};

/* ---- which StatefulSet an event concerns ---- */

struct claim_event {
	struct resize_ctx *rc;
	const char *ns;
};

static void enqueue_candidate(void *ctx, const char *sts)
{
	struct claim_event *ce = ctx;
	char *key = xasprintf("%s/%s", ce->ns, sts);
	/* While a copy runs the StatefulSet may be gone: its saved copy names it then. */
	char *backup_key = xasprintf("%s" BACKUP_SUFFIX, key);
	char *rv = store_resource_version(ce->rc->caches.statefulsets, key);
	char *brv = rv ? NULL : store_resource_version(ce->rc->caches.backups, backup_key);
	if (rv || brv)
		controller_enqueue(ce->rc->controller, key);
	free(brv);
	free(rv);
	free(backup_key);
	free(key);
}

/* A PVC <template>-<sts>-<ordinal>: every StatefulSet it may belong to. */
static void enqueue_for_pvc(void *ctx, const json_t *pvc)
{
	struct claim_event ce = {ctx, kube_obj_str(pvc, "metadata.namespace")};
	if (ce.ns)
		claim_statefulset_candidates(kube_obj_str(pvc, "metadata.name"), enqueue_candidate, &ce);
}

/* An object labelled with the StatefulSet it serves (a copy's new claim, a copy Job, a saved copy). */
static void enqueue_by_label(struct resize_ctx *rc, const json_t *obj, const char *label)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
	const char *sts = json_string_value(json_object_get(labels, label));
	const char *ns = kube_obj_str(obj, "metadata.namespace");
	if (!sts || !ns)
		return;
	char *key = xasprintf("%s/%s", ns, sts);
	controller_enqueue(rc->controller, key);
	free(key);
}

static void enqueue_for_claim(void *ctx, const json_t *pvc)
{
	enqueue_for_pvc(ctx, pvc);
	enqueue_by_label(ctx, pvc, LABEL_COPY_OF);
}

static void pvc_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_claim(ctx, obj);
}

/* A PV: the claim it is bound or pre-bound to. */
static void enqueue_for_pv(void *ctx, const json_t *pv)
{
	const char *ns = kube_obj_str(pv, "spec.claimRef.namespace");
	const char *name = kube_obj_str(pv, "spec.claimRef.name");
	if (!ns || !name)
		return;
	json_t *ref = json_pack("{s:{s:s, s:s}}", "metadata", "namespace", ns, "name", name);
	enqueue_for_pvc(ctx, ref);
	json_decref(ref);
}

static void pv_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_pv(ctx, obj);
}

static void enqueue_for_job(void *ctx, const json_t *job)
{
	enqueue_by_label(ctx, job, LABEL_COPY_OF);
}

static void job_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_job(ctx, obj);
}

/* A pod: its controlling StatefulSet. */
static void enqueue_for_pod(void *ctx, const json_t *pod)
{
	struct resize_ctx *rc = ctx;
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, o) {
		const char *kind = kube_obj_str(o, "kind");
		const char *name = kube_obj_str(o, "name");
		if (kind && name && !strcmp(kind, "StatefulSet")) {
			char *key = xasprintf("%s/%s", kube_obj_str(pod, "metadata.namespace"), name);
			controller_enqueue(rc->controller, key);
			free(key);
		}
	}
}

static void pod_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_pod(ctx, obj);
}

/* A backup ConfigMap: the StatefulSet its label names. */
static void enqueue_for_backup(void *ctx, const json_t *cm)
{
	enqueue_by_label(ctx, cm, LABEL_SAVED_STATEFULSET);
}

static void backup_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_backup(ctx, obj);
}

/* ---- performing a step ---- */

static void now_rfc3339(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Sets the state annotation (sealed for StatefulSet ns/sts) in ann, or removes both when state is NULL. */
static void annotate_state(struct resize_ctx *rc, json_t *ann, const char *ns, const char *sts, const json_t *state)
{
	if (state) {
		char *text = json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS);
		json_object_set_new(ann, ANNOTATION_RESIZE_STATE, json_string(text));
		free(text);
	} else {
		json_object_set_new(ann, ANNOTATION_RESIZE_STATE, json_null());
	}
	state_seal_annotate(rc->deps.seal, ann, ns, sts, ANNOTATION_RESIZE_STATE);
}

/*
 * Merge-patches the state and status annotations of StatefulSet sts, or of
 * its backup ConfigMap (object) while it is gone (a NULL value removes the
 * key). The state is sealed for the StatefulSet either way, so it reads
 * the same wherever it lives.
 */
static int patch_annotations_of(struct resize_ctx *rc, const struct kube_resource *r_, const char *ns,
				const char *sts, const char *object, const char *rv, const json_t *state,
				const char *status_text, struct kube_error *err)
{
	json_t *ann = json_object();
	annotate_state(rc, ann, ns, sts, state);
	json_object_set_new(ann, ANNOTATION_RESIZE_STATUS, status_text ? json_string(status_text) : json_null());
	/* resourceVersion in a merge patch is a precondition: a stale decision conflicts. */
	json_t *patch = json_pack("{s:{s:o}}", "metadata", "annotations", ann);
	if (rv)
		json_object_set_new(json_object_get(patch, "metadata"), "resourceVersion", json_string(rv));
	int r = kube_patch(rc->deps.client, r_, ns, object, NULL, KUBE_PATCH_MERGE, patch, NULL, err);
	json_decref(patch);
	return r;
}

static int patch_annotations(struct resize_ctx *rc, const char *ns, const char *name, const char *rv,
			     const json_t *state, const char *status_text, struct kube_error *err)
{
	return patch_annotations_of(rc, &KUBE_STATEFULSETS, ns, name, name, rv, state, status_text, err);
}

static int save_backup(struct resize_ctx *rc, const char *ns, const char *name, const json_t *state,
		       struct kube_error *err)
{
	/* A fresh GET: the whole object as the server has it, every field included. */
	json_t *live = NULL;
	int r = kube_get(rc->deps.client, &KUBE_STATEFULSETS, ns, name, &live, err);
	if (r < 0)
		return r;
	json_t *saved = resize_saved_copy(live);
	json_t *meta = json_object_get(saved, "metadata");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	annotate_state(rc, json_object_get(meta, "annotations"), ns, name, state);
	char *text = json_dumps(saved, JSON_COMPACT);
	char *cm_name = xasprintf("%s" BACKUP_SUFFIX, name);
	/* The saved StatefulSet is sealed as a whole: it is what the operator re-creates. */
	json_t *ann = json_object();
	annotate_state(rc, ann, ns, name, state);
	char seal[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign(rc->deps.seal, ns, name, SEALED_SAVED_STATEFULSET, text, seal);
	json_object_set_new(ann, SEALED_SAVED_STATEFULSET STATE_SEAL_SUFFIX, json_string(seal));
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:o}, s:{s:s}}", "apiVersion", "v1", "kind",
			       "ConfigMap", "metadata", "name", cm_name, "namespace", ns, "labels",
			       LABEL_SAVED_STATEFULSET, name, "annotations", ann, "data", BACKUP_KEY, text);
	r = kube_create(rc->deps.client, &KUBE_CONFIGMAPS, ns, cm, NULL, err);
	if (r < 0 && err->code == 409)
		r = 0; /* saved before a crash: the planner reads it next time */
	json_decref(cm);
	free(cm_name);
	free(text);
	json_decref(saved);
	json_decref(live);
	return r;
}

static int recreate(struct resize_ctx *rc, const char *ns, const json_t *backup, const json_t *state,
		    bool new_template, bool keep_abort, struct kube_error *err)
{
	const char *text = json_string_value(json_object_get(json_object_get(backup, "data"), BACKUP_KEY));
	json_t *saved = text ? json_loads(text, 0, NULL) : NULL;
	if (!saved) {
		snprintf(err->message, sizeof(err->message), "backup has no saved StatefulSet");
		return -1;
	}
	json_t *sts = new_template ? resize_with_new_sizes(saved, state) : json_incref(saved);
	json_t *meta = json_object_get(sts, "metadata");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	annotate_state(rc, json_object_get(meta, "annotations"), ns, kube_obj_str(sts, "metadata.name"), state);
	/* An abort asked on the ConfigMap while the StatefulSet was gone stays asked. */
	if (keep_abort)
		json_object_set_new(json_object_get(meta, "annotations"), ANNOTATION_ABORT, json_string("true"));
	int r = kube_create(rc->deps.client, &KUBE_STATEFULSETS, ns, sts, NULL, err);
	if (r < 0 && err->code == 409)
		r = 0; /* created before a crash */
	json_decref(sts);
	json_decref(saved);
	return r;
}

/*
 * After a failed expansion: ask each claim that still requests more than
 * it has for its capacity again (KEP-1790), and record what the cluster
 * said in the state (state.lowered: claim -> "lowered" or the refusal), so
 * the user sees it and the step is not repeated. Kubernetes 1.34 refuses a
 * request equal to the capacity; the refusal is then the reported outcome.
 */
static int lower_requests(struct resize_ctx *rc, const char *ns, const char *name, const char *rv,
			  const json_t *state, struct kube_error *err)
{
	json_t *outcome = json_object();
	bool all_lowered = true;
	const char *tmpl;
	json_t *size;
	json_object_foreach(json_object_get(state, "targets"), tmpl, size) {
		char *prefix = xasprintf("%s-%s-", tmpl, name);
		char *key = xasprintf("%s/%s", ns, name);
		json_t *claims = store_by_index(rc->caches.pvcs, SET_INDEX, key);
		free(key);
		size_t i;
		json_t *pvc;
		json_array_foreach(claims, i, pvc) {
			if (!strncmp(kube_obj_str(pvc, "metadata.name"), prefix, strlen(prefix))) {
				const char *req = kube_obj_str(pvc, "spec.resources.requests.storage");
				const char *cap = kube_obj_str(pvc, "status.capacity.storage");
				const char *pvc_name = kube_obj_str(pvc, "metadata.name");
				struct quantity q_req, q_cap;
				if (req && cap && quantity_parse(req, &q_req, NULL) == 0 &&
				    quantity_parse(cap, &q_cap, NULL) == 0 && quantity_cmp(&q_req, &q_cap) > 0) {
					json_t *p = json_pack("{s:{s:{s:{s:s}}}}", "spec", "resources", "requests",
							      "storage", cap);
					struct kube_error perr;
					if (kube_patch(rc->deps.client, &KUBE_PVCS, ns, pvc_name, NULL, KUBE_PATCH_MERGE,
						       p, NULL, &perr) == 0) {
						json_object_set_new(outcome, pvc_name, json_string("lowered"));
					} else {
						char *why = xasprintf("not lowered from %s to %s: %s", req, cap,
								      perr.message);
						json_object_set_new(outcome, pvc_name, json_string(why));
						free(why);
						all_lowered = false;
					}
					json_decref(p);
				}
			}
		}
		json_decref(claims);
		free(prefix);
	}
	json_t *st = json_deep_copy(state);
	json_object_set_new(st, "lowered", outcome);
	const char *msg = json_string_value(json_object_get(state, "message"));
	char *status_text = xasprintf("Failed: %s", msg ? msg : "expansion failed");
	int r = patch_annotations(rc, ns, name, rv, st, status_text, err);
	if (r == 0 && json_object_size(outcome)) {
		char *detail = json_dumps(outcome, JSON_COMPACT | JSON_SORT_KEYS);
		char *key = xasprintf("%s/%s", ns, name);
		json_t *about = store_get(rc->caches.statefulsets, key);
		if (about)
			event_record(rc->deps.events, about, all_lowered ? "Normal" : "Warning",
				     all_lowered ? "ResizeRequestLowered" : "ResizeRequestNotLowered",
				     "after the failed expansion, requests %s: %s",
				     all_lowered ? "lowered back to the capacity" : "could not all be lowered back",
				     detail);
		json_decref(about);
		free(key);
		free(detail);
	}
	free(status_text);
	json_decref(st);
	return r;
}

/*
 * Before any write to PersistentVolume pv_name, or a claim asking for it:
 * a live read shows it is a volume of StatefulSet ns/name (see
 * resize_volume_owner.h). The state that named it is not proof: a forged
 * state must not turn the operator's PV rights against another tenant's
 * volumes. A volume that is gone passes (the write then finds it gone).
 */
static int check_volume_ours(struct resize_ctx *rc, const char *ns, const char *name, const char *pv_name,
			     struct kube_error *err)
{
	json_t *pv = NULL, *claim = NULL;
	if (kube_get(rc->deps.client, &KUBE_PVS, NULL, pv_name, &pv, err) < 0)
		return err->code == 404 ? 0 : -1;
	const char *claim_name = resize_volume_claim_of_set(pv, ns, name);
	struct kube_error cerr;
	if (claim_name && kube_get(rc->deps.client, &KUBE_PVCS, ns, claim_name, &claim, &cerr) < 0 && cerr.code != 404) {
		*err = cerr;
		json_decref(pv);
		return -1;
	}
	const char *why = NULL;
	bool owned = resize_volume_owned(pv, claim, ns, name, &why);
	json_decref(claim);
	json_decref(pv);
	if (owned)
		return 0;
	err->code = 0;
	snprintf(err->reason, sizeof(err->reason), "VolumeNotOwned");
	snprintf(err->message, sizeof(err->message),
		 "PersistentVolume %s is not a volume of StatefulSet %s/%s (%s); the operator will not change it. "
		 "If the resize-state names it, the state is wrong: abort the resize or remove the state",
		 pv_name, ns, name, why);
	return -1;
}

/* The PV a write touches, if any: the PV itself, or the volume a claim to create asks for. */
static const char *volume_written(const struct resize_action *a)
{
	if ((a->step == RESIZE_PATCH || a->step == RESIZE_DELETE) && a->resource == &KUBE_PVS)
		return a->object;
	if (a->step == RESIZE_CREATE && a->resource == &KUBE_PVCS)
		return kube_obj_str(a->body, "spec.volumeName");
	return NULL;
}

static int perform(struct resize_ctx *rc, const char *ns, const char *name, const json_t *sts,
		   const json_t *backup, const struct resize_action *a, struct kube_error *err)
{
	const char *rv = sts ? kube_obj_str(sts, "metadata.resourceVersion") : NULL;
	const char *pv = volume_written(a);
	if (pv && check_volume_ours(rc, ns, name, pv, err) < 0)
		return -1;
	char *cm_name = xasprintf("%s" BACKUP_SUFFIX, name);
	int r = 0;
	switch (a->step) {
	case RESIZE_NOTHING:
	case RESIZE_REFUSE:
	case RESIZE_WAIT:
		break;
	case RESIZE_SET_STATE:
		if (sts)
			r = patch_annotations(rc, ns, name, rv, a->state, a->status, err);
		else
			r = patch_annotations_of(rc, &KUBE_CONFIGMAPS, ns, name, cm_name,
						 kube_obj_str(backup, "metadata.resourceVersion"), a->state, a->status,
						 err);
		break;
	case RESIZE_FINISH:
		r = patch_annotations(rc, ns, name, rv, NULL, NULL, err);
		break;
	case RESIZE_PATCH_PVC: {
		json_t *p = json_pack("{s:{s:{s:{s:s}}}}", "spec", "resources", "requests", "storage", a->size);
		/* The claim the planner saw, not one made since under its name (and a request safe to resend). */
		if (a->uid[0])
			json_object_set_new(p, "metadata", json_pack("{s:s}", "uid", a->uid));
		r = kube_patch(rc->deps.client, &KUBE_PVCS, ns, a->object, NULL, KUBE_PATCH_MERGE, p, NULL, err);
		json_decref(p);
		break;
	}
	case RESIZE_DELETE_POD: {
		struct kube_delete_options o = {.precondition_uid = a->uid};
		r = kube_delete(rc->deps.client, &KUBE_PODS, ns, a->object, &o, err);
		if (r < 0 && (err->code == 404 || err->code == 409))
			r = 0; /* already gone or replaced: the planner sees it next time */
		break;
	}
	case RESIZE_SAVE:
		r = save_backup(rc, ns, name, a->state, err);
		break;
	case RESIZE_ORPHAN_DELETE: {
		struct kube_delete_options o = {.propagation_policy = "Orphan", .precondition_uid = a->uid};
		r = kube_delete(rc->deps.client, &KUBE_STATEFULSETS, ns, name, &o, err);
		if (r < 0 && err->code == 404)
			r = 0;
		break;
	}
	case RESIZE_RECREATE:
		r = recreate(rc, ns, backup, a->state, a->new_template, a->keep_abort, err);
		break;
	case RESIZE_CREATE:
		r = kube_create(rc->deps.client, a->resource, ns, a->body, NULL, err);
		if (r < 0 && err->code == 409)
			r = 0; /* created before a crash: the planner checks what is there */
		break;
	case RESIZE_PATCH:
		r = kube_patch(rc->deps.client, a->resource, a->resource == &KUBE_PVS ? NULL : ns, a->object, NULL,
			       (enum kube_patch_type)a->patch_type, a->body, NULL, err);
		break;
	case RESIZE_DELETE: {
		struct kube_delete_options o = {.propagation_policy = a->propagation,
						.precondition_uid = a->uid[0] ? a->uid : NULL};
		r = kube_delete(rc->deps.client, a->resource, a->resource == &KUBE_PVS ? NULL : ns, a->object, &o, err);
		if (r < 0 && (err->code == 404 || err->code == 409))
			r = 0; /* gone, or replaced by another object: the planner sees it next time */
		break;
	}
	case RESIZE_LOWER_REQUESTS:
		r = lower_requests(rc, ns, name, rv, a->state, err);
		break;
	case RESIZE_DELETE_BACKUP:
		r = kube_delete(rc->deps.client, &KUBE_CONFIGMAPS, ns, cm_name, NULL, err);
		if (r < 0 && err->code == 404)
			r = 0;
		break;
	}
	free(cm_name);
	return r;
}

static void count_n(struct resize_ctx *rc, const char *family, long long n)
{
	if (rc->deps.obs)
		observability_count(rc->deps.obs, family, n);
}

static void count(struct resize_ctx *rc, const char *family)
{
	count_n(rc, family, 1);
}

static const json_t *annotations_of(const json_t *obj)
{
	return json_object_get(json_object_get(obj, "metadata"), "annotations");
}

/* What a reconcile would act on that this operator did not seal, and what the user can do about it. */
struct untrusted {
	const char *what;   /* static text, or NULL: everything is sealed */
	const char *remedy; /* static text */
};

/*
 * Whether the state this reconcile would act on was sealed by this
 * operator for StatefulSet ns/name: the annotation on the StatefulSet, the
 * one on its backup ConfigMap, and the StatefulSet saved there. A backup
 * that is not sealed while the StatefulSet has no resize state is only a
 * leftover (of an older version, or someone's): the planner deletes it, as
 * it deletes any stale copy, and never reads it.
 */
static struct untrusted untrusted_state(const struct resize_ctx *rc, const char *ns, const char *name,
					const json_t *sts, const json_t *backup)
{
	struct untrusted u = {NULL, NULL};
	const json_t *ann = annotations_of(sts);
	if (sts && !state_seal_annotation_ok(rc->deps.seal, ann, ns, name, ANNOTATION_RESIZE_STATE)) {
		u.what = "the annotation " ANNOTATION_RESIZE_STATE " on the StatefulSet";
		u.remedy = "Undo the edit, or remove the annotation to start over; a resize in flight is then left "
			   "where it stands";
		return u;
	}
	if (!backup)
		return u;
	const char *text = json_string_value(json_object_get(json_object_get(backup, "data"), BACKUP_KEY));
	const char *seal = json_string_value(
		json_object_get(annotations_of(backup), SEALED_SAVED_STATEFULSET STATE_SEAL_SUFFIX));
	bool sealed = state_seal_annotation_ok(rc->deps.seal, annotations_of(backup), ns, name,
					       ANNOTATION_RESIZE_STATE) &&
		      (!text || state_seal_verify(rc->deps.seal, ns, name, SEALED_SAVED_STATEFULSET, text, seal));
	if (sealed || (sts && !json_object_get(ann, ANNOTATION_RESIZE_STATE)))
		return u;
	u.what = "ConfigMap <sts>" BACKUP_SUFFIX " (the saved StatefulSet or its state)";
	u.remedy = sts ? "A resize is in flight and its saved copy cannot be trusted: restore the ConfigMap as the "
			 "operator wrote it, or remove the StatefulSet's resize-state annotation and delete the "
			 "ConfigMap to start over"
		       : "The StatefulSet is gone and the operator will not re-create it from this copy: re-create "
			 "the StatefulSet yourself from your manifest, then delete the ConfigMap";
	return u;
}

/* A Warning on the StatefulSet, or on the backup while it is gone, and in the log; nothing else is done. */
static void refuse_untrusted(struct resize_ctx *rc, const char *key, const json_t *sts, const json_t *backup,
			     const struct untrusted *u)
{
	log_warn("resize", "%s: %s is not sealed by this operator; nothing done", key, u->what);
	const json_t *about = sts ? sts : backup;
	if (about)
		event_record(rc->deps.events, about, "Warning", "ResizeStateUntrusted",
			     "%s was not written by this operator (its seal is missing or does not match), so the "
			     "operator does nothing with it. %s",
			     u->what, u->remedy);
}

static void plan_on(const struct resize_ctx *rc, const struct resize_reads *r, const char *now,
		    struct resize_action *a)
{
	struct resize_inputs in = {.sts = r->sts,
				   .backup = r->backup,
				   .pvcs = r->pvcs,
				   .pods = r->pods,
				   .storage_classes = r->classes,
				   .pvs = r->pvs,
				   .jobs = r->jobs,
				   .copy_image = rc->deps.copy_image};
	resize_plan(&in, now, a);
}

static int reconcile(void *ctx, const char *key, long *requeue_after_ms)
{
	struct resize_ctx *rc = ctx;
	const char *slash = strchr(key, '/');
	if (!slash)
		return 0;
	char *ns = xstrndup(key, (size_t)(slash - key));
	const char *name = slash + 1;

	char now[32];
	now_rfc3339(now, sizeof(now));
	struct resize_action a;
	struct resize_reads reads;
	resize_read(&rc->caches, key, false, &reads);
	if (reads.partial) {
		/* Nothing asked but what the template may say; no state that could be forged. */
		plan_on(rc, &reads, now, &a);
		if (a.step == RESIZE_NOTHING) {
			resize_action_release(&a);
			resize_reads_release(&reads);
			free(ns);
			return 0;
		}
		/* The template outgrew a claim: decide again on everything the set has. */
		resize_action_release(&a);
		resize_reads_release(&reads);
		resize_read(&rc->caches, key, true, &reads);
	}
	json_t *sts = reads.sts, *backup = reads.backup;
	struct untrusted untrusted = untrusted_state(rc, ns, name, sts, backup);
	if (untrusted.what) {
		refuse_untrusted(rc, key, sts, backup, &untrusted);
		resize_reads_release(&reads);
		free(ns);
		return 0;
	}
	plan_on(rc, &reads, now, &a);

	int result = 0;
	if (a.step != RESIZE_NOTHING)
		log_debug("resize", "%s: %s %s", key, resize_action_name(&a), a.object);
	struct kube_error err = {0};
	if (perform(rc, ns, name, sts, backup, &a, &err) < 0) {
		log_warn("resize", "%s: %s %s failed: %s", key, resize_action_name(&a), a.object, err.message);
		if (sts && !strcmp(err.reason, "VolumeNotOwned"))
			event_record(rc->deps.events, sts, "Warning", "ResizeRefused", "%s", err.message);
		result = -1;
	} else {
		if (a.event_reason) {
			/* Events about a StatefulSet being re-created name the saved copy. */
			const json_t *about = sts;
			json_t *saved = NULL;
			if (!about && backup) {
				const char *text = json_string_value(json_object_get(json_object_get(backup, "data"),
										     BACKUP_KEY));
				saved = text ? json_loads(text, 0, NULL) : NULL;
				about = saved;
			}
			if (about)
				event_record(rc->deps.events, about, a.event_type, a.event_reason, "%s",
					     a.event_message);
			json_decref(saved);
		}
		if (a.event_reason && !strcmp(a.event_reason, "ResizeStarted"))
			count(rc, "stateful_operator_resizes_started_total");
		else if (a.event_reason && !strcmp(a.event_reason, "ResizeCompleted"))
			count(rc, "stateful_operator_resizes_completed_total");
		else if (a.event_reason && !strcmp(a.event_reason, "ResizeFailed"))
			count(rc, "stateful_operator_resizes_failed_total");
		if (a.step == RESIZE_WAIT)
			*requeue_after_ms = a.requeue_ms;
		else if (a.step != RESIZE_NOTHING && a.step != RESIZE_REFUSE)
			*requeue_after_ms = 2000; /* events usually come first; this is the safety net */
		/*
		 * Progress within a phase (replica k of n) shows in resize-status
		 * when a step acts; waits are not written (each would cost a
		 * request, and the last step already says where it stands).
		 */
		if (sts && a.status && (a.step == RESIZE_PATCH_PVC || a.step == RESIZE_DELETE_POD)) {
			const char *shown = json_string_value(json_object_get(
				json_object_get(json_object_get(sts, "metadata"), "annotations"),
				ANNOTATION_RESIZE_STATUS));
			if (!shown || strcmp(shown, a.status)) {
				json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
						      ANNOTATION_RESIZE_STATUS, a.status);
				/* The set's UID: a precondition, so the request may go on a kept-alive connection. */
				const char *uid = kube_obj_str(sts, "metadata.uid");
				if (uid)
					json_object_set_new(json_object_get(p, "metadata"), "uid", json_string(uid));
				struct kube_error perr;
				if (kube_patch(rc->deps.client, &KUBE_STATEFULSETS, ns, name, NULL, KUBE_PATCH_MERGE, p,
					       NULL, &perr) < 0)
					log_debug("resize", "%s: status not updated: %s", key, perr.message);
				json_decref(p);
			}
		}
		if (a.counts_copy)
			count_n(rc, "stateful_operator_copies_verified_total", a.counts_copy);
		if (a.copied_bytes > 0)
			count_n(rc, "stateful_operator_copy_bytes_total", a.copied_bytes);
		crash_hook_after(&rc->crash, "resize", resize_action_name(&a));
	}
	resize_action_release(&a);
	resize_reads_release(&reads);
	free(ns);
	return result;
}

void resize_caches_index(const struct resize_caches *c)
{
	set_index_ensure(c->pvcs, set_index_claim);
	set_index_ensure(c->pods, set_index_pod);
	if (c->pvs)
		set_index_ensure(c->pvs, set_index_volume);
	if (c->jobs)
		set_index_ensure(c->jobs, set_index_pod); /* by their copy-of label */
}

/* No resize annotation, state or saved copy: nothing asked of the resize controller but by the template. */
static bool asks_nothing(const json_t *sts, const json_t *backup)
{
	if (!sts || backup)
		return false;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)annotations_of(sts), key, v) {
		if (!strncmp(key, RESIZE_ANNOTATION_PREFIX, strlen(RESIZE_ANNOTATION_PREFIX)) ||
		    !strncmp(key, CLASS_ANNOTATION_PREFIX, strlen(CLASS_ANNOTATION_PREFIX)) ||
		    !strcmp(key, ANNOTATION_RESIZE_STATE))
			return false;
	}
	return true;
}

void resize_read(const struct resize_caches *c, const char *key, bool everything, struct resize_reads *out)
{
	char *backup_key = xasprintf("%s" BACKUP_SUFFIX, key);
	memset(out, 0, sizeof(*out));
	out->sts = store_get(c->statefulsets, key);
	out->backup = store_get(c->backups, backup_key);
	out->pvcs = store_by_index(c->pvcs, SET_INDEX, key);
	free(backup_key);
	if (!everything && asks_nothing(out->sts, out->backup)) {
		out->partial = true;
		return;
	}
	out->pods = store_by_index(c->pods, SET_INDEX, key);
	out->classes = c->classes ? store_list(c->classes) : NULL;
	out->pvs = c->pvs ? store_by_index(c->pvs, SET_INDEX, key) : NULL;
	out->jobs = c->jobs ? store_by_index(c->jobs, SET_INDEX, key) : NULL;
}

void resize_reads_release(struct resize_reads *r)
{
	json_decref(r->sts);
	json_decref(r->backup);
	json_decref(r->pvcs);
	json_decref(r->pods);
	json_decref(r->classes);
	json_decref(r->pvs);
	json_decref(r->jobs);
	memset(r, 0, sizeof(*r));
}

static void free_ctx(void *ctx)
{
	free(ctx);
}

struct controller *resize_controller_new(const struct resize_deps *deps)
{
	struct resize_ctx *rc = xcalloc(1, sizeof(*rc));
	rc->deps = *deps;
	crash_hook_init(&rc->crash);
	struct controller_options co = {
		.name = "resize", .workers = deps->workers, .reconcile = reconcile, .ctx = rc, .free_ctx = free_ctx};
	rc->controller = controller_new(&co);

	struct manager *m = deps->manager;
	struct informer *sts = manager_informer(m, &KUBE_STATEFULSETS);
	struct informer *pvcs = manager_informer(m, &KUBE_PVCS);
	struct informer *pods = manager_informer(m, &KUBE_PODS);
	struct informer *backups =
		manager_informer_selected(m, &KUBE_CONFIGMAPS, LABEL_SAVED_STATEFULSET);
	rc->caches.statefulsets = informer_store(sts);
	rc->caches.pvcs = informer_store(pvcs);
	rc->caches.pods = informer_store(pods);
	rc->caches.backups = informer_store(backups);
	struct informer *pvs = NULL, *jobs = NULL;
	if (deps->can_read_storage_classes) {
		/* Cluster scope only: the copy strategy rebinds PersistentVolumes. */
		rc->caches.classes = informer_store(manager_informer(m, &KUBE_STORAGECLASSES));
		pvs = manager_informer(m, &KUBE_PVS);
		rc->caches.pvs = informer_store(pvs);
		jobs = manager_informer_selected(m, &KUBE_JOBS, LABEL_COPY_OF);
		rc->caches.jobs = informer_store(jobs);
	}
	resize_caches_index(&rc->caches);

	struct informer_handlers own = controller_object_handlers(rc->controller);
	informer_add_handlers(sts, &own);
	struct informer_handlers hp = {enqueue_for_claim, pvc_update, enqueue_for_claim, rc};
	informer_add_handlers(pvcs, &hp);
	struct informer_handlers hpod = {enqueue_for_pod, pod_update, enqueue_for_pod, rc};
	informer_add_handlers(pods, &hpod);
	struct informer_handlers hb = {enqueue_for_backup, backup_update, enqueue_for_backup, rc};
	informer_add_handlers(backups, &hb);
	if (pvs) {
		struct informer_handlers hj = {enqueue_for_job, job_update, enqueue_for_job, rc};
		informer_add_handlers(jobs, &hj);
		struct informer_handlers hv = {enqueue_for_pv, pv_update, enqueue_for_pv, rc};
		informer_add_handlers(pvs, &hv);
	}
	return rc->controller;
}
