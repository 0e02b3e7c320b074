#include "controllers/scaledown/scaledown_controller.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "controllers/claim_names.h"
#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/set_index.h"
#include "controllers/state_seal.h"
#include "runtime/crash_hook.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

/* After a step, look again at the latest this soon: watch events usually come first. */
#define REQUEUE_AFTER_STEP_MS 2000L
/* The cache lags the API server: look again shortly when a live check disagreed with it. */
#define REQUEUE_STALE_MS 200L

struct scaledown_ctx {
	struct scaledown_deps deps;
	struct controller *controller;
	struct scaledown_caches caches;
	struct crash_hook crash;
};

/* ---- which StatefulSet an event concerns ---- */

static void enqueue_key(struct scaledown_ctx *sc, const char *ns, const char *name)
{
	char *key = xasprintf("%s/%s", ns, name);
	controller_enqueue(sc->controller, key);
	free(key);
}

struct claim_event {
	struct scaledown_ctx *sc;
	const char *ns;
};

static void enqueue_if_statefulset(void *ctx, const char *sts)
{
	struct claim_event *ce = ctx;
	char *key = xasprintf("%s/%s", ce->ns, sts);
	char *rv = store_resource_version(ce->sc->caches.statefulsets, key);
	if (rv)
		controller_enqueue(ce->sc->controller, key);
	free(rv);
	free(key);
}

static void enqueue_for_claim(void *ctx, const json_t *pvc)
{
	struct claim_event ce = {ctx, kube_obj_str(pvc, "metadata.namespace")};
	if (ce.ns)
		claim_statefulset_candidates(kube_obj_str(pvc, "metadata.name"), enqueue_if_statefulset, &ce);
}

static void claim_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_claim(ctx, obj);
}

/* A cleanup pod: the StatefulSet it cleans for. A StatefulSet's pod: its StatefulSet. */
static void enqueue_for_pod(void *ctx, const json_t *pod)
{
	struct scaledown_ctx *sc = ctx;
	const char *ns = kube_obj_str(pod, "metadata.namespace");
	if (!ns)
		return;
	const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
	const char *for_ = json_string_value(json_object_get(labels, LABEL_CLEANUP_FOR));
	if (for_)
		enqueue_key(sc, ns, for_);
	size_t i;
	const json_t *ref;
	json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref) {
		const char *kind = kube_obj_str(ref, "kind");
		const char *name = kube_obj_str(ref, "name");
		if (kind && name && !strcmp(kind, "StatefulSet") && (!for_ || strcmp(for_, name)))
			enqueue_key(sc, ns, name);
	}
}

static void pod_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_for_pod(ctx, obj);
}

/* ---- live checks before the steps that cannot be taken back ---- */

/* 1: the live object agrees with the cache; 0: it does not (look again); -1: error. */
static int statefulset_unchanged(struct scaledown_ctx *sc, const json_t *sts, struct kube_error *err)
{
	json_t *live = NULL;
	if (kube_get(sc->deps.client, &KUBE_STATEFULSETS, kube_obj_str(sts, "metadata.namespace"),
		     kube_obj_str(sts, "metadata.name"), &live, err) < 0)
		return err->code == 404 ? 0 : -1;
	const char *a = kube_obj_str(live, "metadata.resourceVersion");
	const char *b = kube_obj_str(sts, "metadata.resourceVersion");
	int same = a && b && !strcmp(a, b);
	json_decref(live);
	return same;
}

/* Each claim the new cleanup pod would mount is still there, with that UID, not being deleted. */
static int claims_still_live(struct scaledown_ctx *sc, const char *ns, const json_t *claims, struct kube_error *err)
{
	const char *name;
	const json_t *uid;
	json_object_foreach((json_t *)claims, name, uid) {
		json_t *live = NULL;
		if (kube_get(sc->deps.client, &KUBE_PVCS, ns, name, &live, err) < 0)
			return err->code == 404 ? 0 : -1;
		const char *u = kube_obj_str(live, "metadata.uid");
		bool ok = u && !strcmp(u, json_string_value(uid)) && !kube_obj_str(live, "metadata.deletionTimestamp");
		json_decref(live);
		if (!ok)
			return 0;
	}
	return 1;
}

static bool controlled_by(const json_t *obj, const char *uid)
{
	size_t i;
	const json_t *ref;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref) {
		const char *u = kube_obj_str(ref, "uid");
		if (json_is_true(json_object_get(ref, "controller")) && u && !strcmp(u, uid))
			return true;
	}
	return false;
}

/*
 * Deletes the StatefulSet's pod only if the set still controls it: a
 * deletion with orphan propagation takes the pods' owner references away
 * before our cache may show it, and an orphaned pod is not ours to stop.
 */
static int stop_pod(struct scaledown_ctx *sc, const json_t *sts, const struct scaledown_action *a, bool *stale,
		    struct kube_error *err)
{
	const char *ns = kube_obj_str(sts, "metadata.namespace");
	json_t *live = NULL;
	if (kube_get(sc->deps.client, &KUBE_PODS, ns, a->object, &live, err) < 0)
		return err->code == 404 ? 0 : -1;
	const char *uid = kube_obj_str(live, "metadata.uid");
	int r = 0;
	if (!uid || strcmp(uid, a->uid) || !controlled_by(live, kube_obj_str(sts, "metadata.uid"))) {
		*stale = true;
	} else {
		struct kube_delete_options o = {.precondition_uid = a->uid,
						.precondition_resource_version =
							kube_obj_str(live, "metadata.resourceVersion")};
		r = kube_delete(sc->deps.client, &KUBE_PODS, ns, a->object, &o, err);
		if (r < 0 && (err->code == 404 || err->code == 409)) {
			*stale = true;
			r = 0;
		}
	}
	json_decref(live);
	return r;
}

/* 1 when no cleanup pod for the StatefulSet exists on the server. */
static int no_cleanup_pod_left(struct scaledown_ctx *sc, const json_t *sts, struct kube_error *err)
{
	char *selector = xasprintf("%s=%s", LABEL_CLEANUP_FOR, kube_obj_str(sts, "metadata.name"));
	json_t *items = NULL;
	int r = kube_list_all(sc->deps.client, &KUBE_PODS, kube_obj_str(sts, "metadata.namespace"), selector, 0,
			      &items, NULL, err);
	free(selector);
	if (r < 0)
		return -1;
	int none = json_array_size(items) == 0;
	json_decref(items);
	return none;
}

/* ---- performing a step ---- */

static int patch_statefulset(struct scaledown_ctx *sc, const json_t *sts, json_t *metadata, struct kube_error *err)
{
	/* resourceVersion in a merge patch is a precondition: a decision on a stale cache conflicts. */
	json_object_set_new(metadata, "resourceVersion", json_string(kube_obj_str(sts, "metadata.resourceVersion")));
	json_t *patch = json_pack("{s:O}", "metadata", metadata);
	int r = kube_patch(sc->deps.client, &KUBE_STATEFULSETS, kube_obj_str(sts, "metadata.namespace"),
			   kube_obj_str(sts, "metadata.name"), NULL, KUBE_PATCH_MERGE, patch, NULL, err);
	json_decref(patch);
	return r;
}

static int set_state(struct scaledown_ctx *sc, const json_t *sts, const struct scaledown_action *a,
		     struct kube_error *err)
{
	json_t *ann = json_object();
	char *text = a->body ? json_dumps(a->body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_object_set_new(ann, ANNOTATION_SCALEDOWN_STATE, text ? json_string(text) : json_null());
	state_seal_annotate(sc->deps.seal, ann, kube_obj_str(sts, "metadata.namespace"), kube_obj_str(sts, "metadata.name"),
			    ANNOTATION_SCALEDOWN_STATE);
	json_object_set_new(ann, ANNOTATION_SCALEDOWN_STATUS, a->status ? json_string(a->status) : json_null());
	free(text);
	json_t *meta = json_pack("{s:o}", "annotations", ann);
	int r = patch_statefulset(sc, sts, meta, err);
	json_decref(meta);
	return r;
}

/* The finalizer and the state: merge patches of the StatefulSet, preconditioned on what the planner saw. */
static int patch_step(struct scaledown_ctx *sc, const json_t *sts, const struct scaledown_action *a, bool *stale,
		      struct kube_error *err)
{
	int r;
	if (a->step == SCALEDOWN_SET_STATE) {
		r = set_state(sc, sts, a, err);
	} else {
		if (a->step == SCALEDOWN_REMOVE_FINALIZER && a->verify_no_cleanup_pod) {
			int none = no_cleanup_pod_left(sc, sts, err);
			if (none <= 0) {
				*stale = none == 0;
				return none;
			}
		}
		json_t *meta = json_pack("{s:O}", "finalizers", a->body);
		r = patch_statefulset(sc, sts, meta, err);
		json_decref(meta);
	}
	if (r < 0 && err->code == 409) {
		*stale = true; /* decided on an older StatefulSet: the normal requeue */
		r = 0;
	}
	return r;
}

/* Returns -1 on error; *stale when the cluster moved on and the planner must look again. */
static int perform(struct scaledown_ctx *sc, const json_t *sts, const struct scaledown_action *a, bool *stale,
		   struct kube_error *err)
{
	const char *ns = kube_obj_str(sts, "metadata.namespace");
	int r = 0;
	switch (a->step) {
	case SCALEDOWN_NOTHING:
	case SCALEDOWN_REFUSE:
	case SCALEDOWN_WAIT:
		break;
	case SCALEDOWN_ADD_FINALIZER:
	case SCALEDOWN_REMOVE_FINALIZER:
	case SCALEDOWN_SET_STATE:
		r = patch_step(sc, sts, a, stale, err);
		break;
	case SCALEDOWN_CREATE_POD: {
		int fresh = statefulset_unchanged(sc, sts, err);
		if (fresh == 1)
			fresh = claims_still_live(sc, ns, a->claims, err);
		if (fresh <= 0) {
			*stale = fresh == 0;
			return fresh;
		}
		r = kube_create(sc->deps.client, &KUBE_PODS, ns, a->body, NULL, err);
		if (r < 0 && err->code == 409) {
			*stale = true; /* the name is taken: by our pod created before a crash, or the set's own */
			r = 0;
		} else if (r < 0 && (err->code == 422 || err->code == 403)) {
			event_record(sc->deps.events, sts, "Warning", "CleanupPodRejected",
				     "the API server refused cleanup pod %s: %s; %s", a->object, err->message,
				     err->code == 422 ? "fix the template in the annotation"
						      : "check the operator's RBAC and the namespace's ResourceQuota");
		}
		break;
	}
	case SCALEDOWN_DISOWN_CLAIM:
		/* The body carries the claim's resourceVersion: a precondition. */
		r = kube_patch(sc->deps.client, &KUBE_PVCS, ns, a->object, NULL, KUBE_PATCH_MERGE, a->body, NULL, err);
		if (r < 0 && (err->code == 404 || err->code == 409)) {
			*stale = true;
			r = 0;
		}
		break;
	case SCALEDOWN_STOP_POD:
		r = stop_pod(sc, sts, a, stale, err);
		break;
	case SCALEDOWN_DELETE_POD:
	case SCALEDOWN_DELETE_CLAIM: {
		struct kube_delete_options o = {.precondition_uid = a->uid};
		r = kube_delete(sc->deps.client, a->step == SCALEDOWN_DELETE_POD ? &KUBE_PODS : &KUBE_PVCS, ns, a->object,
				&o, err);
		if (r < 0 && (err->code == 404 || err->code == 409)) {
			*stale = true; /* gone, or another object holds the name now */
			r = 0;
		}
		break;
	}
	}
	return r;
}

static long long now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int reconcile(void *ctx, const char *key, long *requeue_after_ms)
{
	struct scaledown_ctx *sc = ctx;
	const char *slash = strchr(key, '/');
	if (!slash)
		return 0;
	char *ns = xstrndup(key, (size_t)(slash - key));
	struct scaledown_reads reads;
	scaledown_read(&sc->caches, key, &reads);
	if (reads.asks_nothing) {
		/* Nothing asked of scale-down (or no set): decided from the set alone. */
		scaledown_reads_release(&reads);
		free(ns);
		return 0;
	}
	bool dropped = false;
	/* A state not sealed by us reads as lost: the planner rebuilds it from the cluster. */
	json_t *sts = reads.sts ? state_seal_drop_unsealed(sc->deps.seal, reads.sts, ANNOTATION_SCALEDOWN_STATE, &dropped)
				: NULL;
	if (dropped) {
		log_warn("scaledown", "%s: %s is not sealed by this operator; ignored", key, ANNOTATION_SCALEDOWN_STATE);
		event_record(sc->deps.events, sts, "Warning", "CleanupStateUntrusted",
			     ANNOTATION_SCALEDOWN_STATE " was not written by this operator (its seal is missing or does "
			     "not match); it is ignored and written anew from what the cluster shows");
	}
	json_t *pvcs = reads.pvcs, *pods = reads.pods;
	struct scaledown_inputs in = {sts, pvcs, pods, now_ms()};
	struct scaledown_action a;
	scaledown_plan(&in, &a);

	int result = 0;
	const char *step = scaledown_action_name(&a);
	if (a.step != SCALEDOWN_NOTHING && a.step != SCALEDOWN_WAIT)
		log_debug("scaledown", "%s: %s %s", key, step, a.object);
	struct kube_error err = {0};
	bool stale = false;
	if (dropped && a.step == SCALEDOWN_NOTHING) {
		/* Nothing to record: the unsealed state goes, or it would be warned about on every pass. */
		json_t *meta = json_pack("{s:{s:n, s:n}}", "annotations", ANNOTATION_SCALEDOWN_STATE,
					 ANNOTATION_SCALEDOWN_STATE STATE_SEAL_SUFFIX);
		if (patch_statefulset(sc, sts, meta, &err) < 0)
			log_warn("scaledown", "%s: removing the unsealed state: %s", key, err.message);
		json_decref(meta);
	}
	if (perform(sc, sts, &a, &stale, &err) < 0) {
		log_warn("scaledown", "%s: %s %s failed: %s", key, step, a.object, err.message);
		result = -1;
	} else if (stale) {
		log_debug("scaledown", "%s: %s %s: the cluster moved on; looking again", key, step, a.object);
		*requeue_after_ms = REQUEUE_STALE_MS;
	} else {
		if (a.event_reason && sts)
			event_record(sc->deps.events, sts, a.event_type, a.event_reason, "%s", a.event_message);
		if (a.counts && sc->deps.obs)
			observability_count(sc->deps.obs, a.counts, 1);
		if (a.step == SCALEDOWN_WAIT)
			*requeue_after_ms = a.requeue_ms;
		else if (a.step != SCALEDOWN_NOTHING && a.step != SCALEDOWN_REFUSE)
			*requeue_after_ms = a.requeue_ms > 0 && a.requeue_ms < REQUEUE_AFTER_STEP_MS ? a.requeue_ms
												 : REQUEUE_AFTER_STEP_MS;
		crash_hook_after(&sc->crash, "scaledown", step);
	}
	scaledown_action_release(&a);
	scaledown_reads_release(&reads);
	json_decref(sts);
	free(ns);
	return result;
}

void scaledown_caches_index(const struct scaledown_caches *c)
{
	set_index_ensure(c->pvcs, set_index_claim);
	set_index_ensure(c->pods, set_index_pod);
}

void scaledown_read(const struct scaledown_caches *c, const char *key, struct scaledown_reads *out)
{
	memset(out, 0, sizeof(*out));
	out->sts = store_get(c->statefulsets, key);
	out->asks_nothing = !out->sts || scaledown_plan_asks_nothing(out->sts);
	if (out->asks_nothing)
		return;
	/* Only what may be the set's own (set_index.h): its claims and its pods, cleanup pods included. */
	out->pvcs = store_by_index(c->pvcs, SET_INDEX, key);
	out->pods = store_by_index(c->pods, SET_INDEX, key);
}

void scaledown_reads_release(struct scaledown_reads *r)
{
	json_decref(r->sts);
	json_decref(r->pvcs);
	json_decref(r->pods);
	memset(r, 0, sizeof(*r));
}

static void free_ctx(void *ctx)
{
	free(ctx);
}

struct controller *scaledown_controller_new(const struct scaledown_deps *deps)
{
	struct scaledown_ctx *sc = xcalloc(1, sizeof(*sc));
	sc->deps = *deps;
	crash_hook_init(&sc->crash);
	struct controller_options co = {
		.name = "scaledown", .workers = deps->workers, .reconcile = reconcile, .ctx = sc, .free_ctx = free_ctx};
	sc->controller = controller_new(&co);

	struct manager *m = deps->manager;
	struct informer *sts = manager_informer(m, &KUBE_STATEFULSETS);
	struct informer *pvcs = manager_informer(m, &KUBE_PVCS);
	struct informer *pods = manager_informer(m, &KUBE_PODS);
	sc->caches.statefulsets = informer_store(sts);
	sc->caches.pvcs = informer_store(pvcs);
	sc->caches.pods = informer_store(pods);
	scaledown_caches_index(&sc->caches);

	struct informer_handlers own = controller_object_handlers(sc->controller);
	informer_add_handlers(sts, &own);
	struct informer_handlers hc = {enqueue_for_claim, claim_update, enqueue_for_claim, sc};
	informer_add_handlers(pvcs, &hc);
	struct informer_handlers hp = {enqueue_for_pod, pod_update, enqueue_for_pod, sc};
	informer_add_handlers(pods, &hp);
	return sc->controller;
}
