#include "controllers/cluster/cluster_controller.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "controllers/cluster/cluster_plan.h"
#include "controllers/set_index.h"
#include "controllers/state_seal.h"
#include "runtime/crash_hook.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define REQUEUE_AFTER_STEP_MS 2000L
#define REQUEUE_STALE_MS 200L
/* A deletion the cache has not shown after this long is no longer waited for. */
#define DELETED_MEMORY_MS 30000LL

struct cluster_ctx {
	struct cluster_deps deps;
	struct controller *controller;
	struct cluster_caches caches;
	struct crash_hook crash;
	pthread_mutex_t lock;
	struct hashmap deleted;      /* key -> json array of {"uid", "at"}: pods this controller deleted */
	struct hashmap create_error; /* key -> string: the last refused creation */
};

static long long now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* ---- which StatefulCluster an event concerns ---- */

static void enqueue_owner(void *ctx, const json_t *obj)
{
	struct cluster_ctx *cc = ctx;
	const char *ns = kube_obj_str(obj, "metadata.namespace");
	size_t i;
	const json_t *ref;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref) {
		const char *kind = kube_obj_str(ref, "kind"), *name = kube_obj_str(ref, "name");
		if (ns && kind && name && !strcmp(kind, CLUSTER_KIND)) {
			char *key = xasprintf("%s/%s", ns, name);
			controller_enqueue(cc->controller, key);
			free(key);
		}
	}
	/* Claims kept after their member left may have no owner: their label names the cluster. */
	const char *cluster = json_string_value(
		json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), LABEL_CLUSTER));
	if (ns && cluster) {
		char *key = xasprintf("%s/%s", ns, cluster);
		controller_enqueue(cc->controller, key);
		free(key);
	}
}

static void owner_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_owner(ctx, obj);
}

/* A node changed: every StatefulCluster may have members there (there are few of both). */
static void enqueue_all(void *ctx, const json_t *node)
{
	struct cluster_ctx *cc = ctx;
	(void)node;
	size_t n;
	char **keys = store_keys(cc->caches.clusters, &n);
	for (size_t i = 0; i < n; i++) {
		controller_enqueue(cc->controller, keys[i]);
		free(keys[i]);
	}
	free(keys);
}

static void node_update(void *ctx, const json_t *old, const json_t *obj)
{
	/* Heartbeats change only times; a change of the Ready condition's status is what counts. */
	json_t *oc = json_object_get(json_object_get(old, "status"), "conditions");
	json_t *nc = json_object_get(json_object_get(obj, "status"), "conditions");
	size_t i, j;
	json_t *x, *y;
	json_array_foreach(nc, i, x) {
		const char *type = kube_obj_str(x, "type");
		if (!type || strcmp(type, "Ready"))
			continue;
		bool same = false;
		json_array_foreach(oc, j, y) {
			const char *t = kube_obj_str(y, "type");
			if (t && !strcmp(t, "Ready") && kube_obj_str(y, "status") && kube_obj_str(x, "status") &&
			    !strcmp(kube_obj_str(y, "status"), kube_obj_str(x, "status")))
				same = true;
		}
		if (!same)
			enqueue_all(ctx, obj);
	}
}

/* ---- what the controller remembers ---- */

static json_t *deleted_uids(struct cluster_ctx *cc, const char *key)
{
	json_t *out = json_array();
	pthread_mutex_lock(&cc->lock);
	json_t *list = hashmap_get(&cc->deleted, key);
	long long now = now_ms();
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		if (json_integer_value(json_object_get(e, "at")) + DELETED_MEMORY_MS > now)
			json_array_append(out, json_object_get(e, "uid"));
	}
	pthread_mutex_unlock(&cc->lock);
	return out;
}

static void remember_deleted(struct cluster_ctx *cc, const char *key, const char *uid)
{
	pthread_mutex_lock(&cc->lock);
	json_t *list = hashmap_get(&cc->deleted, key);
	json_t *fresh = json_array();
	long long now = now_ms();
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		if (json_integer_value(json_object_get(e, "at")) + DELETED_MEMORY_MS > now)
			json_array_append(fresh, e);
	}
	json_array_append_new(fresh, json_pack("{s:s, s:I}", "uid", uid, "at", (json_int_t)now));
	json_decref(hashmap_put(&cc->deleted, key, fresh));
	pthread_mutex_unlock(&cc->lock);
}

static char *create_error(struct cluster_ctx *cc, const char *key)
{
	pthread_mutex_lock(&cc->lock);
	const char *e = hashmap_get(&cc->create_error, key);
	char *copy = e ? xstrdup(e) : NULL;
	pthread_mutex_unlock(&cc->lock);
	return copy;
}

static void set_create_error(struct cluster_ctx *cc, const char *key, const char *message)
{
	pthread_mutex_lock(&cc->lock);
	free(message ? hashmap_put(&cc->create_error, key, xstrdup(message)) : hashmap_remove(&cc->create_error, key));
	pthread_mutex_unlock(&cc->lock);
}

/* ---- performing a step ---- */

static int patch_state(struct cluster_ctx *cc, const json_t *cluster, const json_t *state, struct kube_error *err)
{
	char *text = json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS);
	/* resourceVersion in a merge patch is a precondition: a decision on a stale cache conflicts. */
	json_t *patch = json_pack("{s:{s:{s:s}, s:s?}}", "metadata", "annotations", ANNOTATION_CLUSTER_STATE, text,
				  "resourceVersion", kube_obj_str(cluster, "metadata.resourceVersion"));
	state_seal_annotate(cc->deps.seal, json_object_get(json_object_get(patch, "metadata"), "annotations"),
			    kube_obj_str(cluster, "metadata.namespace"), kube_obj_str(cluster, "metadata.name"),
			    ANNOTATION_CLUSTER_STATE);
	int r = kube_patch(cc->deps.client, &KUBE_STATEFULCLUSTERS, kube_obj_str(cluster, "metadata.namespace"),
			   kube_obj_str(cluster, "metadata.name"), NULL, KUBE_PATCH_MERGE, patch, NULL, err);
	json_decref(patch);
	free(text);
	return r;
}

static const struct kube_resource *created_resource(enum cluster_step s)
{
	return s == CLUSTER_CREATE_POD ? &KUBE_PODS : s == CLUSTER_CREATE_CLAIM ? &KUBE_PVCS : &KUBE_CONTROLLERREVISIONS;
}

static const struct kube_resource *deleted_resource(enum cluster_step s)
{
	return s == CLUSTER_DELETE_POD ? &KUBE_PODS : s == CLUSTER_DELETE_CLAIM ? &KUBE_PVCS : &KUBE_CONTROLLERREVISIONS;
}

static int perform(struct cluster_ctx *cc, const char *key, const json_t *cluster, const struct cluster_action *a,
		   bool *stale, struct kube_error *err)
{
	const char *ns = kube_obj_str(cluster, "metadata.namespace");
	int r = 0;
	switch (a->step) {
	case CLUSTER_NOTHING:
	case CLUSTER_REFUSE:
	case CLUSTER_WAIT:
		break;
	case CLUSTER_SET_STATE:
		r = patch_state(cc, cluster, a->body, err);
		break;
	case CLUSTER_CREATE_REVISION:
	case CLUSTER_CREATE_CLAIM:
	case CLUSTER_CREATE_POD:
		r = kube_create(cc->deps.client, created_resource(a->step), ns, a->body, NULL, err);
		if (r == 0 && a->step != CLUSTER_CREATE_REVISION) {
			set_create_error(cc, key, NULL);
		} else if (r < 0 && err->code != 409 && a->step != CLUSTER_CREATE_REVISION) {
			char *msg = xasprintf("creating %s: %s", a->object, err->message);
			set_create_error(cc, key, msg);
			free(msg);
		}
		break;
	case CLUSTER_PATCH_CLAIM:
		r = kube_patch(cc->deps.client, &KUBE_PVCS, ns, a->object, NULL, KUBE_PATCH_MERGE, a->body, NULL, err);
		break;
	case CLUSTER_DELETE_POD:
	case CLUSTER_DELETE_CLAIM:
	case CLUSTER_DELETE_REVISION: {
		long zero = 0;
		struct kube_delete_options o = {.precondition_uid = a->uid[0] ? a->uid : NULL,
						.grace_period_seconds = a->force ? &zero : NULL};
		r = kube_delete(cc->deps.client, deleted_resource(a->step), ns, a->object, &o, err);
		if (r == 0 && a->step == CLUSTER_DELETE_POD)
			remember_deleted(cc, key, a->uid);
		break;
	}
	case CLUSTER_UPDATE_STATUS: {
		/* Preconditioned too: a status computed from an older object must not replace a newer one. */
		json_t *patch = json_pack("{s:O, s:{s:s?}}", "status", a->body, "metadata", "resourceVersion",
					  kube_obj_str(cluster, "metadata.resourceVersion"));
		r = kube_patch(cc->deps.client, &KUBE_STATEFULCLUSTERS, ns, kube_obj_str(cluster, "metadata.name"), "status",
			       KUBE_PATCH_MERGE, patch, NULL, err);
		json_decref(patch);
		break;
	}
	}
	/* Conflict, already there, already gone: the cluster moved on; look again. */
	if (r < 0 && (err->code == 409 || err->code == 404)) {
		*stale = true;
		r = 0;
	}
	return r;
}

/* The cached nodes (a new array) that pods run on; a node missing from the cache is left out. */
static json_t *nodes_of(struct store *nodes, const json_t *pods)
{
	json_t *out = json_array();
	size_t i, j;
	json_t *pod, *n;
	json_array_foreach(pods, i, pod) {
		const char *name = kube_obj_str(pod, "spec.nodeName");
		if (!name)
			continue; /* not scheduled yet */
		bool seen = false;
		json_array_foreach(out, j, n) seen |= !strcmp(kube_obj_str(n, "metadata.name"), name);
		json_t *node = seen ? NULL : store_get(nodes, name);
		if (node)
			json_array_append_new(out, node);
	}
	return out;
}

void cluster_caches_index(const struct cluster_caches *c)
{
	set_index_ensure(c->pods, set_index_pod);
	set_index_ensure(c->pvcs, set_index_claim);
	if (!store_has_index(c->revisions, "owner"))
		store_add_index(c->revisions, "owner", store_index_owner_uid);
}

void cluster_read(const struct cluster_caches *c, const char *key, struct cluster_reads *out)
{
	memset(out, 0, sizeof(*out));
	out->cluster = store_get(c->clusters, key);
	/* Only what may be its own (set_index.h), and the nodes its pods run on. */
	out->pods = store_by_index(c->pods, SET_INDEX, key);
	out->pvcs = store_by_index(c->pvcs, SET_INDEX, key);
	out->revisions = out->cluster ? store_by_index(c->revisions, "owner", kube_obj_str(out->cluster, "metadata.uid"))
				      : json_array();
	out->nodes = c->nodes ? nodes_of(c->nodes, out->pods) : NULL;
}

void cluster_reads_release(struct cluster_reads *r)
{
	json_decref(r->cluster);
	json_decref(r->pods);
	json_decref(r->pvcs);
	json_decref(r->revisions);
	json_decref(r->nodes);
	memset(r, 0, sizeof(*r));
}

static int reconcile(void *ctx, const char *key, long *requeue_after_ms)
{
	struct cluster_ctx *cc = ctx;
	const char *slash = strchr(key, '/');
	if (!slash)
		return 0;
	char *ns = xstrndup(key, (size_t)(slash - key));
	struct cluster_reads reads;
	cluster_read(&cc->caches, key, &reads);
	bool dropped = false;
	/* A state not sealed by us reads as lost: the planner rebuilds it from pods and claims. */
	json_t *cluster = reads.cluster ? state_seal_drop_unsealed(cc->deps.seal, reads.cluster,
								   ANNOTATION_CLUSTER_STATE, &dropped)
					: NULL;
	if (dropped) {
		log_warn("cluster", "%s: %s is not sealed by this operator; ignored", key, ANNOTATION_CLUSTER_STATE);
		event_record(cc->deps.events, cluster, "Warning", "ClusterStateUntrusted",
			     ANNOTATION_CLUSTER_STATE " was not written by this operator (its seal is missing or does "
			     "not match); it is ignored and rebuilt from the members' pods and claims");
	}
	json_t *pods = reads.pods, *pvcs = reads.pvcs, *revisions = reads.revisions, *nodes = reads.nodes;
	json_t *deleted = deleted_uids(cc, key);
	char *failure = create_error(cc, key);
	struct cluster_inputs in = {cluster, pods, pvcs, revisions, nodes, now_ms(), failure, deleted};
	struct cluster_action a;
	cluster_plan(&in, &a);

	int result = 0;
	const char *step = cluster_action_name(&a);
	if (a.step != CLUSTER_NOTHING && a.step != CLUSTER_WAIT)
		log_debug("cluster", "%s: %s %s", key, step, a.object);
	struct kube_error err = {0};
	bool stale = false;
	if (perform(cc, key, cluster, &a, &stale, &err) < 0) {
		log_warn("cluster", "%s: %s %s failed: %s", key, step, a.object, err.message);
		if (a.step == CLUSTER_CREATE_POD || a.step == CLUSTER_CREATE_CLAIM)
			event_record(cc->deps.events, cluster, "Warning", "CreateFailed", "creating %s: %s", a.object,
				     err.message);
		result = -1;
	} else if (stale) {
		*requeue_after_ms = REQUEUE_STALE_MS;
	} else {
		if (a.event_reason && cluster)
			event_record(cc->deps.events, cluster, a.event_type, a.event_reason, "%s", a.event_message);
		if (a.counts && cc->deps.obs)
			observability_count(cc->deps.obs, a.counts, 1);
		if (a.step == CLUSTER_WAIT)
			*requeue_after_ms = a.requeue_ms;
		else if (a.step != CLUSTER_NOTHING && a.step != CLUSTER_REFUSE)
			/* Members start in parallel: the next step right away, the cache catching up. */
			*requeue_after_ms = a.requeue_ms > 0 && a.requeue_ms < REQUEUE_AFTER_STEP_MS ? a.requeue_ms
												 : REQUEUE_AFTER_STEP_MS;
		else if (a.requeue_ms > 0)
			*requeue_after_ms = a.requeue_ms;
		crash_hook_after(&cc->crash, "cluster", step);
	}
	cluster_action_release(&a);
	free(failure);
	json_decref(deleted);
	cluster_reads_release(&reads);
	json_decref(cluster);
	free(ns);
	return result;
}

static void free_ctx(void *ctx)
{
	struct cluster_ctx *cc = ctx;
	hashmap_release(&cc->deleted, (void (*)(void *))json_decref);
	hashmap_release(&cc->create_error, free);
	pthread_mutex_destroy(&cc->lock);
	free(cc);
}

struct controller *cluster_controller_new(const struct cluster_deps *deps)
{
	struct cluster_ctx *cc = xcalloc(1, sizeof(*cc));
	cc->deps = *deps;
	crash_hook_init(&cc->crash);
	pthread_mutex_init(&cc->lock, NULL);
	hashmap_init(&cc->deleted);
	hashmap_init(&cc->create_error);
	struct controller_options co = {
		.name = "cluster", .workers = deps->workers, .reconcile = reconcile, .ctx = cc, .free_ctx = free_ctx};
	cc->controller = controller_new(&co);

	struct manager *m = deps->manager;
	struct informer *clusters = manager_informer(m, &KUBE_STATEFULCLUSTERS);
	struct informer *pods = manager_informer(m, &KUBE_PODS);
	struct informer *pvcs = manager_informer(m, &KUBE_PVCS);
	/* Ours only: every StatefulSet has revisions too, each holding its pod template. */
	struct informer *revisions = manager_informer_selected(m, &KUBE_CONTROLLERREVISIONS, LABEL_CLUSTER);
	cc->caches.clusters = informer_store(clusters);
	cc->caches.pods = informer_store(pods);
	cc->caches.pvcs = informer_store(pvcs);
	cc->caches.revisions = informer_store(revisions);
	cluster_caches_index(&cc->caches);

	struct informer_handlers own = controller_object_handlers(cc->controller);
	informer_add_handlers(clusters, &own);
	struct informer_handlers h = {enqueue_owner, owner_update, enqueue_owner, cc};
	informer_add_handlers(pods, &h);
	informer_add_handlers(pvcs, &h);
	informer_add_handlers(revisions, &h);
	if (deps->can_read_nodes) {
		struct informer *nodes = manager_informer(m, &KUBE_NODES);
		cc->caches.nodes = informer_store(nodes);
		struct informer_handlers hn = {enqueue_all, node_update, enqueue_all, cc};
		informer_add_handlers(nodes, &hn);
	}
	return cc->controller;
}
