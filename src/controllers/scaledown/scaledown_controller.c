#include "controllers/scaledown/scaledown_controller.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/claim_names.h"
#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/set_index.h"
#include "controllers/state_seal.h"
#include "runtime/reconciler.h"
#include "util/log.h"
#include "util/xalloc.h"

struct scaledown_ctx {
	struct controller_deps deps;
	struct scaledown_caches caches;
};

/* What one reconcile decides on. */
struct snapshot {
	struct scaledown_reads reads;
	json_t *sts;  /* reads.sts as the planner may read it: an unsealed state dropped (new reference) */
	bool dropped; /* ...and it was */
	bool checked; /* the live checks passed: an error after them is the API server's answer to the step */
};

/* ---- reading ---- */

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

static void release_snapshot(void *ctx, void *snapshot)
{
	struct snapshot *s = snapshot;
	(void)ctx;
	scaledown_reads_release(&s->reads);
	json_decref(s->sts);
	free(s);
}

static void *read_snapshot(void *ctx, const struct reconcile_key *k)
{
	struct scaledown_ctx *sc = ctx;
	struct snapshot *s = xcalloc(1, sizeof(*s));
	scaledown_read(&sc->caches, k->key, &s->reads);
	if (s->reads.asks_nothing) {
		/* Nothing asked of scale-down (or no set): decided from the set alone. */
		release_snapshot(ctx, s);
		return NULL;
	}
	/* A state not sealed by us reads as lost: the planner rebuilds it from the cluster. */
	s->sts = state_seal_drop_unsealed(sc->deps.seal, s->reads.sts, ANNOTATION_SCALEDOWN_STATE, &s->dropped);
	if (s->dropped) {
		log_warn("scaledown", "%s: %s is not sealed by this operator; ignored", k->key,
			 ANNOTATION_SCALEDOWN_STATE);
		event_record(sc->deps.events, s->sts, "Warning", "CleanupStateUntrusted",
			     ANNOTATION_SCALEDOWN_STATE " was not written by this operator (its seal is missing or "
			     "does not match); it is ignored and written anew from what the cluster shows");
	}
	return s;
}

/* ---- deciding ---- */

static void plan(void *ctx, const struct reconcile_key *k, void *snapshot, long long now_ms, struct action *a)
{
	struct snapshot *s = snapshot;
	(void)ctx;
	struct scaledown_inputs in = {s->sts, s->reads.pvcs, s->reads.pods, now_ms};
	scaledown_plan(&in, a);
	if (s->dropped && a->verb == ACTION_NOTHING) {
		/* Nothing to record: the unsealed state goes, or it would be warned about on every pass. */
		action_patch(a, "RemoveUnsealedState", &KUBE_STATEFULSETS, k->name,
			     json_pack("{s:{s:{s:n}}}", "metadata", "annotations", ANNOTATION_SCALEDOWN_STATE));
		action_patch_precondition(a, kube_obj_str(s->sts, "metadata.resourceVersion"), NULL);
		a->answers = ACTION_STALE_409;
	}
}

static const json_t *about(void *ctx, void *snapshot)
{
	(void)ctx;
	return ((struct snapshot *)snapshot)->sts;
}

/*
 * Seals the scaledown-state a patch of the set writes (a null one takes its
 * seal away too), for the set the planner saw: its resourceVersion is the
 * patch's precondition, so the seal's UID is the patched object's.
 */
static void prepare(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a)
{
	struct scaledown_ctx *sc = ctx;
	struct snapshot *s = snapshot;
	(void)k;
	json_t *ann = json_object_get(json_object_get(a->body, "metadata"), "annotations");
	struct state_seal_scope scope = state_seal_scope_of(s->sts);
	if (a->resource == &KUBE_STATEFULSETS && json_object_get(ann, ANNOTATION_SCALEDOWN_STATE))
		state_seal_annotate(sc->deps.seal, ann, &scope, ANNOTATION_SCALEDOWN_STATE);
}

/* ---- live checks before the steps that cannot be taken back: 0 go on, 1 moved on, -1 error ---- */

/* The live StatefulSet is not the one the planner saw (or is gone). */
static int statefulset_moved(struct scaledown_ctx *sc, const struct reconcile_key *k, const json_t *sts,
			     struct kube_error *err)
{
	json_t *live = NULL;
	if (kube_get(sc->deps.client, &KUBE_STATEFULSETS, k->ns, k->name, &live, err) < 0)
		return err->code == 404 ? 1 : -1;
	const char *a = kube_obj_str(live, "metadata.resourceVersion");
	const char *b = kube_obj_str(sts, "metadata.resourceVersion");
	int moved = !a || !b || strcmp(a, b);
	json_decref(live);
	return moved;
}

/* Some claim the new cleanup pod would mount is gone, another of its name, or being deleted. */
static int claims_moved(struct scaledown_ctx *sc, const char *ns, const json_t *pod, struct kube_error *err)
{
	json_t *claims = kube_obj_annotation_json(pod, ANNOTATION_CLEANUP_CLAIMS);
	int moved = 0;
	const char *name;
	json_t *uid;
	json_object_foreach(claims, name, uid) {
		json_t *live = NULL;
		if (kube_get(sc->deps.client, &KUBE_PVCS, ns, name, &live, err) < 0) {
			moved = err->code == 404 ? 1 : -1;
			break;
		}
		const char *u = kube_obj_str(live, "metadata.uid");
		moved = !u || !json_is_string(uid) || strcmp(u, json_string_value(uid)) || kube_obj_terminating(live);
		json_decref(live);
		if (moved)
			break;
	}
	json_decref(claims);
	return moved;
}

/*
 * The StatefulSet's pod is stopped only while the set still controls it:
 * a deletion with orphan propagation takes the pods' owner references away
 * before our cache may show it, and an orphaned pod is not ours to stop.
 * Its live resourceVersion becomes the delete's precondition.
 */
static int pod_moved(struct scaledown_ctx *sc, const struct reconcile_key *k, const json_t *sts, struct action *a,
		     struct kube_error *err)
{
	json_t *live = NULL;
	if (kube_get(sc->deps.client, &KUBE_PODS, k->ns, a->name, &live, err) < 0)
		return err->code == 404 ? RECONCILE_DONE : -1; /* gone already: nothing to stop */
	const char *uid = kube_obj_str(live, "metadata.uid");
	const char *rv = kube_obj_str(live, "metadata.resourceVersion");
	int moved = !uid || strcmp(uid, a->uid) || !kube_obj_controlled_by(live, kube_obj_str(sts, "metadata.uid"));
	if (!moved)
		snprintf(a->resource_version, sizeof(a->resource_version), "%s", rv ? rv : "");
	json_decref(live);
	return moved;
}

/* A cleanup pod of the set is on the server: the cache may not show one just made. */
static int cleanup_pod_left(struct scaledown_ctx *sc, const struct reconcile_key *k, struct kube_error *err)
{
	char *selector = xasprintf("%s=%s", LABEL_CLEANUP_FOR, k->name);
	json_t *items = NULL;
	int r = kube_list_all(sc->deps.client, &KUBE_PODS, k->ns, selector, 0, &items, NULL, err);
	free(selector);
	if (r == 0)
		r = json_array_size(items) > 0;
	json_decref(items);
	return r < 0 ? -1 : r;
}

static int check(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a, struct kube_error *err)
{
	struct scaledown_ctx *sc = ctx;
	struct snapshot *s = snapshot;
	const char *step = action_name(a);
	int r = 0;
	if (!strcmp(step, SCALEDOWN_CREATE_POD)) {
		/* A success or a failure just recorded on the set is never followed by a second run. */
		r = statefulset_moved(sc, k, s->sts, err);
		if (r == 0)
			r = claims_moved(sc, k->ns, a->body, err);
	} else if (!strcmp(step, SCALEDOWN_STOP_POD)) {
		r = pod_moved(sc, k, s->sts, a, err);
	} else if (!strcmp(step, SCALEDOWN_REMOVE_FINALIZER) && kube_obj_terminating(s->sts) &&
		   !scaledown_plan_orphaning(s->sts, s->reads.pods)) {
		r = cleanup_pod_left(sc, k, err);
	}
	s->checked = r == 0;
	return r;
}

/* A cleanup pod the API server refuses is the user's to fix (422: the template; 403: RBAC or quota). */
static void performed(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a, int r,
		      const struct kube_error *err)
{
	struct scaledown_ctx *sc = ctx;
	struct snapshot *s = snapshot;
	(void)k;
	if (r < 0 && s->checked && a->verb == ACTION_CREATE && (err->code == 422 || err->code == 403))
		event_record(sc->deps.events, s->sts, "Warning", "CleanupPodRejected",
			     "the API server refused cleanup pod %s: %s; %s", a->name, err->message,
			     err->code == 422 ? "fix the template in the annotation"
					      : "check the operator's RBAC and the namespace's ResourceQuota");
}

/* ---- which StatefulSet an event concerns ---- */

struct claim_event {
	struct scaledown_ctx *sc;
	struct controller *c;
	const char *ns;
};

static void enqueue_if_statefulset(void *ctx, const char *sts)
{
	struct claim_event *ce = ctx;
	char *key = xasprintf("%s/%s", ce->ns, sts);
	char *rv = store_resource_version(ce->sc->caches.statefulsets, key);
	if (rv)
		controller_enqueue(ce->c, key);
	free(rv);
	free(key);
}

/* A claim: each StatefulSet in the cache whose claim its name may be. */
static void enqueue_for_claim(void *ctx, struct controller *c, const json_t *pvc)
{
	struct claim_event ce = {ctx, c, kube_obj_str(pvc, "metadata.namespace")};
	if (ce.ns)
		claim_statefulset_candidates(kube_obj_str(pvc, "metadata.name"), enqueue_if_statefulset, &ce);
}

struct controller *scaledown_controller_new(const struct controller_deps *deps)
{
	static const struct reconciler_ops ops = {
		.name = "scaledown", .read = read_snapshot, .release = release_snapshot, .plan = plan,
		.about = about, .prepare = prepare, .check = check, .performed = performed};
	struct scaledown_ctx *sc = xcalloc(1, sizeof(*sc));
	sc->deps = *deps;
	struct informer *sts = manager_informer(deps->manager, &KUBE_STATEFULSETS);
	struct informer *pvcs = manager_informer(deps->manager, &KUBE_PVCS);
	struct informer *pods = manager_informer(deps->manager, &KUBE_PODS);
	sc->caches = (struct scaledown_caches){informer_store(sts), informer_store(pvcs), informer_store(pods)};
	scaledown_caches_index(&sc->caches);
	struct reconciler_deps rd = {.client = deps->client, .events = deps->events,
				     .count = deps->obs ? observability_count : NULL, .counter = deps->obs,
				     .workers = deps->workers};
	struct controller *c = reconciler_new(&ops, sc, free, &rd);

	struct informer_handlers h = controller_object_handlers(c);
	informer_add_handlers(sts, &h);
	h = controller_mapped_handlers(c, enqueue_for_claim, sc);
	informer_add_handlers(pvcs, &h);
	/* A cleanup pod wakes the set it cleans for; a StatefulSet's pod, its set. */
	h = controller_label_handlers(c, LABEL_CLEANUP_FOR);
	informer_add_handlers(pods, &h);
	h = controller_owner_handlers(c, "StatefulSet");
	informer_add_handlers(pods, &h);
	return c;
}
