#include "runtime/controller.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "client/kube_client.h"
#include "runtime/heap_trim.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

struct controller {
	char *name;
	int nworkers;
	reconcile_fn reconcile;
	void *ctx;
	void (*free_ctx)(void *ctx);
	struct workqueue *queue;
	pthread_t *threads;
	int nstarted;
	atomic_uint_fast64_t reconciles, errors;
	atomic_uint_fast64_t by_result[RECONCILE_RESULTS];
	struct duration_histogram duration, reaction;
	struct mapping *mappings; /* the handlers' closures, freed with the controller */
};

/* A watched object to the keys it concerns (controller_mapped_handlers). */
struct mapping {
	struct controller *c;
	controller_map_fn map;
	void *ctx;
	char *arg; /* the kind or label of the built-in maps */
	struct mapping *next;
};

/* The reconcile this thread runs, until its first write (controller_note_write). */
static _Thread_local struct {
	struct controller *c; /* NULL: none, or its first write was noted */
	const char *key;
	uint64_t queued_ns;
} current;

struct controller *controller_new(const struct controller_options *opts)
{
	struct controller *c = xcalloc(1, sizeof(*c));
	c->name = xstrdup(opts->name);
	c->nworkers = opts->workers > 0 ? opts->workers : 1;
	c->reconcile = opts->reconcile;
	c->ctx = opts->ctx;
	c->free_ctx = opts->free_ctx;
	struct workqueue_options qo;
	workqueue_options_init(&qo);
	c->queue = workqueue_new(&qo);
	c->threads = xcalloc((size_t)c->nworkers, sizeof(*c->threads));
	duration_histogram_init(&c->duration);
	duration_histogram_init(&c->reaction);
	return c;
}

const char *reconcile_result_name(enum reconcile_result r)
{
	static const char *const names[RECONCILE_RESULTS] = {"success", "error", "requeue", "requeue_after"};
	return r < RECONCILE_RESULTS ? names[r] : "unknown";
}

void controller_free(struct controller *c)
{
	if (!c)
		return;
	controller_stop(c);
	if (c->free_ctx)
		c->free_ctx(c->ctx);
	workqueue_free(c->queue);
	while (c->mappings) {
		struct mapping *m = c->mappings;
		c->mappings = m->next;
		free(m->arg);
		free(m);
	}
	free(c->threads);
	free(c->name);
	free(c);
}

const char *controller_name(const struct controller *c)
{
	return c->name;
}

struct workqueue *controller_queue(struct controller *c)
{
	return c->queue;
}

void controller_enqueue(struct controller *c, const char *key)
{
	workqueue_add(c->queue, key);
}

void controller_enqueue_after(struct controller *c, const char *key, long delay_ms)
{
	workqueue_add_after(c->queue, key, delay_ms);
}

static void enqueue_obj(void *ctx, const json_t *obj)
{
	char *key = kube_obj_key(obj);
	controller_enqueue(ctx, key);
	free(key);
}

static void enqueue_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	enqueue_obj(ctx, obj);
}

struct informer_handlers controller_object_handlers(struct controller *c)
{
	struct informer_handlers h = {
		.on_add = enqueue_obj, .on_update = enqueue_update, .on_delete = enqueue_obj, .ctx = c};
	return h;
}

void controller_enqueue_name(struct controller *c, const char *ns, const char *name)
{
	if (!ns || !name)
		return;
	char *key = xasprintf("%s/%s", ns, name);
	controller_enqueue(c, key);
	free(key);
}

static void map_obj(void *ctx, const json_t *obj)
{
	struct mapping *m = ctx;
	m->map(m->ctx, m->c, obj);
}

static void map_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	map_obj(ctx, obj);
}

static struct informer_handlers mapped(struct controller *c, controller_map_fn map, void *ctx, const char *arg)
{
	struct mapping *m = xcalloc(1, sizeof(*m));
	m->c = c;
	m->map = map;
	m->ctx = ctx;
	m->arg = arg ? xstrdup(arg) : NULL;
	m->next = c->mappings;
	c->mappings = m;
	struct informer_handlers h = {.on_add = map_obj, .on_update = map_update, .on_delete = map_obj, .ctx = m};
	return h;
}

struct informer_handlers controller_mapped_handlers(struct controller *c, controller_map_fn map, void *ctx)
{
	return mapped(c, map, ctx, NULL);
}

struct owner_visit {
	struct controller *c;
	const char *ns;
};

static void enqueue_owner_name(void *ctx, const char *name)
{
	struct owner_visit *v = ctx;
	controller_enqueue_name(v->c, v->ns, name);
}

/* ctx is the mapping itself: its arg is the owner kind. */
static void map_owner(void *ctx, struct controller *c, const json_t *obj)
{
	struct mapping *m = ctx;
	struct owner_visit v = {c, kube_obj_str(obj, "metadata.namespace")};
	kube_obj_each_owner(obj, m->arg, enqueue_owner_name, &v);
}

static void map_label(void *ctx, struct controller *c, const json_t *obj)
{
	struct mapping *m = ctx;
	controller_enqueue_name(c, kube_obj_str(obj, "metadata.namespace"), kube_obj_label(obj, m->arg));
}

struct informer_handlers controller_owner_handlers(struct controller *c, const char *kind)
{
	struct informer_handlers h = mapped(c, map_owner, NULL, kind);
	((struct mapping *)h.ctx)->ctx = h.ctx;
	return h;
}

struct informer_handlers controller_label_handlers(struct controller *c, const char *label)
{
	struct informer_handlers h = mapped(c, map_label, NULL, label);
	((struct mapping *)h.ctx)->ctx = h.ctx;
	return h;
}

static void *worker(void *arg)
{
	struct controller *c = arg;
	char *key;
	uint64_t queued_ns;
	while ((key = workqueue_get_queued(c->queue, &queued_ns)) != NULL) {
		long requeue_after = 0;
		uint64_t start = clock_mono_ns();
		current.c = c;
		current.key = key;
		current.queued_ns = queued_ns;
		int rc = c->reconcile(c->ctx, key, &requeue_after);
		current.c = NULL;
		duration_histogram_observe(&c->duration, clock_mono_ns() - start);
		atomic_fetch_add(&c->reconciles, 1);
		enum reconcile_result result = rc < 0 ? RECONCILE_RESULT_ERROR
					       : requeue_after > 0 ? RECONCILE_RESULT_REQUEUE_AFTER
								   : RECONCILE_RESULT_SUCCESS;
		atomic_fetch_add(&c->by_result[result], 1);
		if (rc < 0) {
			atomic_fetch_add(&c->errors, 1);
			log_debug(c->name, "reconcile %s failed; retry %u", key,
				  workqueue_num_requeues(c->queue, key) + 1);
			workqueue_add_rate_limited(c->queue, key);
		} else {
			workqueue_forget(c->queue, key);
			if (requeue_after > 0)
				workqueue_add_after(c->queue, key, requeue_after);
		}
		workqueue_done(c->queue, key);
		free(key);
		if (!workqueue_len(c->queue))
			heap_trim_when_idle();
	}
	return NULL;
}

int controller_start(struct controller *c)
{
	for (; c->nstarted < c->nworkers; c->nstarted++) {
		if (pthread_create(&c->threads[c->nstarted], NULL, worker, c)) {
			controller_stop(c);
			return -1;
		}
	}
	log_info(c->name, "controller started with %d workers", c->nworkers);
	return 0;
}

void controller_stop(struct controller *c)
{
	if (!c->nstarted)
		return;
	workqueue_shutdown(c->queue);
	for (int i = 0; i < c->nstarted; i++)
		pthread_join(c->threads[i], NULL);
	c->nstarted = 0;
	log_info(c->name, "controller stopped");
}

void controller_get_stats(struct controller *c, struct controller_stats *out)
{
	out->reconciles = atomic_load(&c->reconciles);
	out->errors = atomic_load(&c->errors);
	for (int r = 0; r < RECONCILE_RESULTS; r++)
		out->by_result[r] = atomic_load(&c->by_result[r]);
	duration_histogram_read(&c->duration, &out->duration);
	duration_histogram_read(&c->reaction, &out->reaction);
	out->reactions = out->reaction.count;
}

void controller_note_write(uint64_t sent_ns)
{
	struct controller *c = current.c;
	if (!c)
		return;
	current.c = NULL;
	uint64_t ns = sent_ns > current.queued_ns ? sent_ns - current.queued_ns : 0;
	duration_histogram_observe(&c->reaction, ns);

	log_debug(c->name, "%s: first write %.3f ms after it was queued", current.key, (double)ns / 1e6);
}
