#include "controllers/cluster/cluster_controller.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/cluster/cluster_plan_internal.h"
#include "controllers/set_index.h"
#include "controllers/state_seal.h"
#include "runtime/reconciler.h"
#include "util/clock.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/xalloc.h"

/* A deletion the cache has not shown after this long is no longer waited for. */
#define DELETED_MEMORY_MS 30000LL
/*
 * A creation the cache has not shown after this long is no longer added to
 * it: past that a lagging watch costs a create answered 409 (the planner
 * looks again), never a pod deleted meanwhile shown for longer.
 */
#define CREATED_MEMORY_MS 5000LL

struct cluster_ctx {
	struct cluster_deps deps;
	struct controller *controller;
	struct cluster_caches caches;
	pthread_mutex_t lock;
	struct hashmap deleted;      /* key -> json array of {"uid", "at"}: pods this controller deleted */
	struct hashmap created;      /* key -> json array of {"object", "at"}: pods and claims it created */
	struct hashmap create_error; /* key -> string: the last refused creation */
};

/* What one reconcile decides on. */
struct snapshot {
	struct cluster_reads reads;
	json_t *cluster;    /* reads.cluster as the planner may trust it (its state dropped when not sealed) */
	json_t *deleted;    /* UIDs of the pods deleted lately (cluster_inputs.deleted_uids) */
	char *create_error; /* the last refused creation, or NULL */
};

/* ---- which StatefulCluster an event concerns ---- */

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

/*
 * Heartbeats change only times; a change of the Ready condition's status
 * is what counts. Its own handler: the mapped handlers do not see old.
 */
static void node_update(void *ctx, const json_t *old, const json_t *node)
{
	const json_t *now = cluster_condition(node, "Ready");
	const char *is = kube_obj_str(now, "status"), *was = kube_obj_str(cluster_condition(old, "Ready"), "status");
	if (now && (!is || !was || strcmp(is, was)))
		enqueue_all(ctx, node);
}

/* ---- what the controller remembers ---- */

/* The pods deleted for key within DELETED_MEMORY_MS: their UIDs, or their entries. New array; lock held. */
static json_t *deleted_lately(struct cluster_ctx *cc, const char *key, bool uids)
{
	json_t *out = json_array();
	long long now = clock_wall_ms();
	size_t i;
	json_t *e;
	json_array_foreach((json_t *)hashmap_get(&cc->deleted, key), i, e) {
		if (json_integer_value(json_object_get(e, "at")) + DELETED_MEMORY_MS > now)
			json_array_append(out, uids ? json_object_get(e, "uid") : e);
	}
	return out;
}

static void remember_deleted(struct cluster_ctx *cc, const char *key, const char *uid)
{
	pthread_mutex_lock(&cc->lock);
	json_t *fresh = deleted_lately(cc, key, false);
	json_array_append_new(fresh, json_pack("{s:s, s:I}", "uid", uid, "at", (json_int_t)clock_wall_ms()));
	json_decref(hashmap_put(&cc->deleted, key, fresh));
	pthread_mutex_unlock(&cc->lock);
}

/*
 * Remembers obj (borrowed: the API server's answer to a create) until the
 * cache shows it: the next plan, at once, sees the member's claim or pod
 * there, so the members start one request after another instead of one
 * watch event after another (bench/cluster-start), and the object is not
 * created twice.
 */
static void remember_created(struct cluster_ctx *cc, const char *key, const json_t *obj)
{
	pthread_mutex_lock(&cc->lock);
	json_t *list = hashmap_get(&cc->created, key);
	if (!list) {
		list = json_array();
		hashmap_put(&cc->created, key, list);
	}
	json_array_append_new(list, json_pack("{s:O, s:I}", "object", obj, "at", (json_int_t)clock_wall_ms()));
	pthread_mutex_unlock(&cc->lock);
}

/*
 * Adds to pods and claims (the cache's) what this controller created for
 * key that the cache does not show yet; forgets what it shows now (by
 * name: the cache is then the truth), or what it has not shown for
 * CREATED_MEMORY_MS.
 */
static void add_created(struct cluster_ctx *cc, const char *key, json_t *pods, json_t *claims)
{
	long long now = clock_wall_ms();
	pthread_mutex_lock(&cc->lock);
	json_t *list = hashmap_get(&cc->created, key);
	for (size_t i = 0; i < json_array_size(list);) {
		json_t *e = json_array_get(list, i);
		json_t *obj = json_object_get(e, "object");
		const char *kind = kube_obj_str(obj, "kind");
		json_t *into = kind && !strcmp(kind, "Pod") ? pods : claims;
		if (kube_list_find(into, NULL, kube_obj_str(obj, "metadata.name")) ||
		    json_integer_value(json_object_get(e, "at")) + CREATED_MEMORY_MS <= now) {
			json_array_remove(list, i);
			continue;
		}
		json_array_append(into, obj);
		i++;
	}
	if (list && !json_array_size(list))
		json_decref(hashmap_remove(&cc->created, key));
	pthread_mutex_unlock(&cc->lock);
}

/* The cached nodes (a new array) that pods run on; a node missing from the cache is left out. */
static json_t *nodes_of(struct store *nodes, const json_t *pods)
{
	json_t *out = json_array();
	size_t i;
	json_t *pod;
	json_array_foreach(pods, i, pod) {
		const char *name = kube_obj_str(pod, "spec.nodeName");
		if (!name)
			continue; /* not scheduled yet */
		json_t *node = kube_list_find(out, NULL, name) ? NULL : store_get(nodes, name);
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
	const char *uid = kube_obj_str(out->cluster, "metadata.uid");
	out->revisions = out->cluster ? store_by_index(c->revisions, "owner", uid) : json_array();
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

/* ---- the reconciler's hooks ---- */

static void release_snapshot(void *ctx, void *snapshot)
{
	struct snapshot *s = snapshot;
	(void)ctx;
	cluster_reads_release(&s->reads);
	json_decref(s->cluster);
	json_decref(s->deleted);
	free(s->create_error);
	free(s);
}

static void *read_snapshot(void *ctx, const struct reconcile_key *k)
{
	struct cluster_ctx *cc = ctx;
	struct snapshot *s = xcalloc(1, sizeof(*s));
	cluster_read(&cc->caches, k->key, &s->reads);
	if (!s->reads.cluster) {
		/* Gone: the garbage collector takes its pods, revisions and the claims it owns. */
		pthread_mutex_lock(&cc->lock);
		json_decref(hashmap_remove(&cc->created, k->key));
		pthread_mutex_unlock(&cc->lock);
		release_snapshot(cc, s);
		return NULL;
	}
	add_created(cc, k->key, s->reads.pods, s->reads.pvcs);
	bool dropped = false;
	/* A state not sealed by us reads as lost: the planner rebuilds it from pods and claims. */
	s->cluster = state_seal_drop_unsealed(cc->deps.base.seal, s->reads.cluster, ANNOTATION_CLUSTER_STATE, &dropped);
	if (dropped) {
		log_warn("cluster", "%s: %s is not sealed by this operator; ignored", k->key, ANNOTATION_CLUSTER_STATE);
		event_record(cc->deps.base.events, s->cluster, "Warning", "ClusterStateUntrusted",
			     ANNOTATION_CLUSTER_STATE " was not written by this operator (its seal is missing or does "
			     "not match); it is ignored and rebuilt from the members' pods and claims");
	}
	pthread_mutex_lock(&cc->lock);
	s->deleted = deleted_lately(cc, k->key, true);
	const char *e = hashmap_get(&cc->create_error, k->key);
	s->create_error = e ? xstrdup(e) : NULL;
	pthread_mutex_unlock(&cc->lock);
	return s;
}

static void plan(void *ctx, const struct reconcile_key *k, void *snapshot, long long now_ms, struct action *a)
{
	struct snapshot *s = snapshot;
	(void)ctx;
	(void)k;
	struct cluster_inputs in = {.cluster = s->cluster, .pods = s->reads.pods, .pvcs = s->reads.pvcs,
				    .revisions = s->reads.revisions, .nodes = s->reads.nodes, .now_ms = now_ms,
				    .create_error = s->create_error, .deleted_uids = s->deleted};
	cluster_plan(&in, a);
}

static const json_t *about(void *ctx, void *snapshot)
{
	(void)ctx;
	return ((struct snapshot *)snapshot)->cluster;
}

/*
 * Seals the state a SetState step writes, for the StatefulCluster the
 * planner saw (its UID): the next read trusts only that. Written to a newer
 * object of the same name, it does not hold there and reads as lost.
 * After a member's claim or pod is created, the next step is planned at
 * once: the created object is remembered (remember_created).
 */
static void prepare(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a)
{
	struct cluster_ctx *cc = ctx;
	struct snapshot *s = snapshot;
	(void)k;
	struct state_seal_scope scope = state_seal_scope_of(s->cluster);
	if (a->state)
		state_seal_annotate(cc->deps.base.seal, json_object_get(json_object_get(a->body, "metadata"), "annotations"),
				    &scope, ANNOTATION_CLUSTER_STATE);
	if (a->verb == ACTION_CREATE && (a->resource == &KUBE_PODS || a->resource == &KUBE_PVCS))
		a->requeue_ms = 1;
}

/* Remembers what the next plans need: the pods deleted, the last creation refused (ReplicaFailure). */
static void performed(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a, int r,
		      const struct kube_error *err)
{
	struct cluster_ctx *cc = ctx;
	struct snapshot *s = snapshot;
	/* r is 0 on a 404 or 409 too (every step takes them as "the cluster moved on"): nothing was done then. */
	bool done = r == 0 && err->code != 404 && err->code != 409;
	if (done && a->verb == ACTION_DELETE && a->resource == &KUBE_PODS)
		remember_deleted(cc, k->key, a->uid);
	if (done && a->created && (a->resource == &KUBE_PODS || a->resource == &KUBE_PVCS))
		remember_created(cc, k->key, a->created);
	if (a->verb != ACTION_CREATE || a->resource == &KUBE_CONTROLLERREVISIONS)
		return;
	pthread_mutex_lock(&cc->lock);
	if (done)
		free(hashmap_remove(&cc->create_error, k->key));
	else if (err->code != 409) /* 409: it exists already, which is no refusal */
		free(hashmap_put(&cc->create_error, k->key, xasprintf("creating %s: %s", a->name, err->message)));
	pthread_mutex_unlock(&cc->lock);
	if (r < 0)
		event_record(cc->deps.base.events, s->cluster, "Warning", "CreateFailed", "creating %s: %s", a->name,
			     err->message);
}

/*
 * Members' claims, and their pods, go together: none needs another of its
 * kind. The next plan sees the object asked for (its body) as made.
 */
static bool batch(void *ctx, void *snapshot, const struct action *a)
{
	struct snapshot *s = snapshot;
	(void)ctx;
	json_t *into = a->resource == &KUBE_PODS ? s->reads.pods : a->resource == &KUBE_PVCS ? s->reads.pvcs : NULL;
	if (a->verb != ACTION_CREATE || !into || !a->body)
		return false;
	json_array_append(into, a->body);
	return true;
}

static void free_ctx(void *ctx)
{
	struct cluster_ctx *cc = ctx;
	hashmap_release(&cc->deleted, (void (*)(void *))json_decref);
	hashmap_release(&cc->created, (void (*)(void *))json_decref);
	hashmap_release(&cc->create_error, free);
	pthread_mutex_destroy(&cc->lock);
	free(cc);
}

struct controller *cluster_controller_new(const struct cluster_deps *deps)
{
	static const struct reconciler_ops ops = {.name = "cluster", .read = read_snapshot, .release = release_snapshot,
						  .plan = plan, .about = about, .prepare = prepare,
						  .performed = performed, .batch = batch};
	struct cluster_ctx *cc = xcalloc(1, sizeof(*cc));
	cc->deps = *deps;
	pthread_mutex_init(&cc->lock, NULL);
	hashmap_init(&cc->deleted);
	hashmap_init(&cc->created);
	hashmap_init(&cc->create_error);
	struct reconciler_deps rd = {.client = deps->base.client, .events = deps->base.events,
				     .count = deps->base.obs ? observability_count : NULL, .counter = deps->base.obs,
				     .workers = deps->base.workers};
	struct controller *c = reconciler_new(&ops, cc, free_ctx, &rd);
	cc->controller = c;

	struct manager *m = deps->base.manager;
	struct informer *clusters = manager_informer(m, &KUBE_STATEFULCLUSTERS);
	struct informer *members[] = {
		manager_informer(m, &KUBE_PODS),
		manager_informer(m, &KUBE_PVCS),
		/* Ours only: every StatefulSet has revisions too, each holding its pod template. */
		manager_informer_selected(m, &KUBE_CONTROLLERREVISIONS, LABEL_CLUSTER),
	};
	cc->caches = (struct cluster_caches){informer_store(clusters), informer_store(members[0]),
					     informer_store(members[1]), informer_store(members[2]), NULL};
	cluster_caches_index(&cc->caches);

	struct informer_handlers own = controller_object_handlers(c);
	informer_add_handlers(clusters, &own);
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		struct informer_handlers by_owner = controller_owner_handlers(c, CLUSTER_KIND);
		/* Claims kept after their member left may have no owner: their label names the cluster. */
		struct informer_handlers by_label = controller_label_handlers(c, LABEL_CLUSTER);
		informer_add_handlers(members[i], &by_owner);
		informer_add_handlers(members[i], &by_label);
	}
	if (deps->can_read_nodes) {
		struct informer *nodes = manager_informer(m, &KUBE_NODES);
		cc->caches.nodes = informer_store(nodes);
		struct informer_handlers hn = {enqueue_all, node_update, enqueue_all, cc};
		informer_add_handlers(nodes, &hn);
	}
	return c;
}
