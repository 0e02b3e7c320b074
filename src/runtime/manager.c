#include "runtime/manager.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "runtime/events.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#define MAX_INFORMERS 16
#define MAX_CONTROLLERS 8
#define MAX_READY_CHECKS 4
#define MAX_TRANSFORMS 4

/* Refusals reported at once beyond this are logged only (the informer logs each). */
#define MAX_REFUSED_PENDING 32

struct manager {
	struct kube_client *client;
	char *namespace;
	long sync_timeout_ms;
	struct informer *informers[MAX_INFORMERS];
	char *selectors[MAX_INFORMERS]; /* each informer's label selector, or NULL */
	int ninformers;
	struct controller *controllers[MAX_CONTROLLERS];
	int ncontrollers;
	struct leader_elector *leader;
	struct event_recorder *events; /* for objects left out of a cache, or NULL */
	struct {
		const struct kube_resource *resource;
		void (*fn)(json_t *obj); /* informer_options.transform */
	} transforms[MAX_TRANSFORMS];
	int ntransforms;
	/*
	 * Events about objects left out, waiting for the manager's thread: an
	 * informer finds them inside its own transfer, where its thread's
	 * HTTP handle is busy and must not be used again (guarded by lock).
	 */
	json_t *refused[MAX_REFUSED_PENDING]; /* {"object":..., "message":...} */
	int nrefused;
	void (*before_controllers)(void *ctx);
	void *before_ctx;
	/* Written before manager_run only; read after synced is seen under lock, which orders them. */
	struct {
		bool (*ready)(void *ctx, const char **why);
		void *ctx;
	} checks[MAX_READY_CHECKS];
	int nchecks;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool synced;
};

struct manager *manager_new(struct kube_client *client, const struct manager_options *opts)
{
	struct manager *m = xcalloc(1, sizeof(*m));
	m->client = client;
	m->namespace = opts && opts->namespace ? xstrdup(opts->namespace) : NULL;
	m->sync_timeout_ms = opts && opts->sync_timeout_ms > 0 ? opts->sync_timeout_ms : 120000;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	return m;
}

void manager_free(struct manager *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->ncontrollers; i++)
		controller_free(m->controllers[i]);
	for (int i = 0; i < m->ninformers; i++) {
		informer_free(m->informers[i]);
		free(m->selectors[i]);
	}
	for (int i = 0; i < m->nrefused; i++)
		json_decref(m->refused[i]);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	free(m->namespace);
	free(m);
}

/*
 * informer_options.on_refused, on an informer's thread in the middle of its
 * transfer: the Warning Event about the object, named from what could be
 * read of it, is queued for the manager's thread (manager_run) to record.
 */
static void refused_event(void *ctx, const struct kube_resource *r, const struct kube_object_id *id, const char *why)
{
	struct manager *m = ctx;
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "kind", r->kind, "apiVersion", r->api_version,
				"metadata", "name", id->name, "uid", id->uid, "resourceVersion", id->resource_version);
	if (!obj)
		abort();
	if (id->namespace[0])
		json_object_set_new(json_object_get(obj, "metadata"), "namespace", json_string(id->namespace));
	char *msg = xasprintf("stateful-operator cannot read this %s (resourceVersion %s): %s; it acts as if the %s "
			      "did not exist until it is made smaller",
			      r->kind, id->resource_version[0] ? id->resource_version : "?", why, r->kind);
	json_t *item = json_pack("{s:o, s:s}", "object", obj, "message", msg);
	free(msg);
	if (!item)
		abort();
	pthread_mutex_lock(&m->lock);
	if (m->nrefused < MAX_REFUSED_PENDING) {
		m->refused[m->nrefused++] = item;
		item = NULL;
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
	if (item)
		log_warn("manager", "%s %s: no Event about its size (%d already waiting)", r->kind, id->name,
			 MAX_REFUSED_PENDING);
	json_decref(item);
}

/* Records the queued Events about objects left out; called on the manager's thread with lock held. */
static void record_refused(struct manager *m)
{
	while (m->nrefused > 0) {
		json_t *item = m->refused[--m->nrefused];
		m->refused[m->nrefused] = NULL;
		pthread_mutex_unlock(&m->lock);
		const json_t *obj = json_object_get(item, "object");
		if (event_record(m->events, obj, EVENT_WARNING, "ObjectTooLarge", "%s",
				 json_string_value(json_object_get(item, "message"))) < 0)
			log_warn("manager", "%s %s: no Event about its size", kube_obj_str(obj, "kind"),
				 kube_obj_str(obj, "metadata.name"));
		json_decref(item);
		pthread_mutex_lock(&m->lock);
	}
}

void manager_report_refused(struct manager *m, struct event_recorder *events)
{
	if (m->ninformers)
		abort(); /* a programming error: informers made before would not report */
	m->events = events;
}

void manager_set_transform(struct manager *m, const struct kube_resource *r, void (*transform)(json_t *obj))
{
	if (m->ntransforms == MAX_TRANSFORMS)
		abort(); /* a programming error */
	for (int i = 0; i < m->ninformers; i++)
		if (informer_resource(m->informers[i]) == r)
			abort(); /* a programming error: that cache would keep whole objects */
	m->transforms[m->ntransforms].resource = r;
	m->transforms[m->ntransforms++].fn = transform;
}

typedef void (*transform_fn)(json_t *obj);

/* The transform set for r, or NULL. */
static transform_fn transform_of(const struct manager *m, const struct kube_resource *r)
{
	for (int i = 0; i < m->ntransforms; i++)
		if (m->transforms[i].resource == r)
			return m->transforms[i].fn;
	return NULL;
}

struct informer *manager_informer_selected(struct manager *m, const struct kube_resource *r,
					   const char *label_selector)
{
	for (int i = 0; i < m->ninformers; i++) {
		const char *sel = m->selectors[i];
		if (informer_resource(m->informers[i]) == r &&
		    (sel && label_selector ? !strcmp(sel, label_selector) : sel == label_selector))
			return m->informers[i];
	}
	if (m->ninformers == MAX_INFORMERS)
		abort(); /* a programming error */
	struct informer_options o = {.resource = r,
				     .namespace = r->namespaced ? m->namespace : NULL,
				     .label_selector = label_selector,
				     .transform = transform_of(m, r),
				     .on_refused = m->events ? refused_event : NULL,
				     .refused_ctx = m};
	m->selectors[m->ninformers] = label_selector ? xstrdup(label_selector) : NULL;
	return m->informers[m->ninformers++] = informer_new(m->client, &o);
}

struct informer *manager_informer(struct manager *m, const struct kube_resource *r)
{
	return manager_informer_selected(m, r, NULL);
}

void manager_add_controller(struct manager *m, struct controller *c)
{
	if (m->ncontrollers == MAX_CONTROLLERS)
		abort();
	m->controllers[m->ncontrollers++] = c;
}

void manager_set_before_controllers(struct manager *m, void (*fn)(void *ctx), void *ctx)
{
	m->before_controllers = fn;
	m->before_ctx = ctx;
}

void manager_set_leader(struct manager *m, struct leader_elector *le)
{
	m->leader = le;
}

int manager_informer_count(struct manager *m)
{
	return m->ninformers;
}

struct informer *manager_informer_at(struct manager *m, int i)
{
	return m->informers[i];
}

int manager_controller_count(struct manager *m)
{
	return m->ncontrollers;
}

struct controller *manager_controller_at(struct manager *m, int i)
{
	return m->controllers[i];
}

void manager_add_ready_check(struct manager *m, bool (*ready)(void *ctx, const char **why), void *ctx)
{
	if (m->nchecks == MAX_READY_CHECKS)
		abort(); /* a programming error */
	m->checks[m->nchecks].ready = ready;
	m->checks[m->nchecks++].ctx = ctx;
}

/*
 * Never "is leader": a standby that can serve is Ready too, or a Deployment
 * of two could never be Available nor roll out (its new pod would wait as a
 * standby). The reason still says which one this is, for a human.
 */
bool manager_ready(struct manager *m, const char **why)
{
	if (!manager_synced(m)) {
		*why = "caches not synced";
		return false;
	}
	for (int i = 0; i < m->nchecks; i++)
		if (!m->checks[i].ready(m->checks[i].ctx, why))
			return false;
	if (!m->leader)
		*why = "ok";
	else
		*why = leader_is_leader(m->leader) ? "ok (leading)" : "ok (standby: waiting for the Lease)";
	return true;
}

bool manager_synced(struct manager *m)
{
	pthread_mutex_lock(&m->lock);
	bool s = m->synced;
	pthread_mutex_unlock(&m->lock);
	return s;
}

static bool stopping(struct manager *m)
{
	pthread_mutex_lock(&m->lock);
	bool s = m->stop;
	pthread_mutex_unlock(&m->lock);
	return s;
}

void manager_request_stop(struct manager *m)
{
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	/*
	 * A standby waiting for the Lease must wake up. A leader keeps the
	 * Lease until its controllers have stopped (stop_all releases it).
	 */
	if (m->leader && !leader_is_leader(m->leader))
		leader_request_stop(m->leader);
}

static void stop_all(struct manager *m, int ncontrollers)
{
	for (int i = 0; i < ncontrollers; i++)
		controller_stop(m->controllers[i]);
	/* After the controllers: the Lease is released only once no step is in flight. */
	if (m->leader)
		leader_stop(m->leader);
	for (int i = 0; i < m->ninformers; i++)
		informer_request_stop(m->informers[i]);
	for (int i = 0; i < m->ninformers; i++)
		informer_stop(m->informers[i]);
}

int manager_run(struct manager *m)
{
	double start = clock_mono_ms();
	for (int i = 0; i < m->ninformers; i++) {
		if (informer_start(m->informers[i]) < 0) {
			log_error("manager", "cannot start informer thread");
			stop_all(m, 0);
			return -1;
		}
	}
	/* Wait in short slices so a stop request is seen while waiting. */
	for (int i = 0; i < m->ninformers; i++) {
		while (!informer_wait_synced(m->informers[i], 200)) {
			pthread_mutex_lock(&m->lock);
			record_refused(m);
			pthread_mutex_unlock(&m->lock);
			if (stopping(m)) {
				stop_all(m, 0);
				return 0;
			}
			if (clock_mono_ms() - start > (double)m->sync_timeout_ms) {
				log_error("manager", "caches for %s not synced after %ld ms; check the "
					  "API server address and the operator's RBAC",
					  informer_resource(m->informers[i])->plural, m->sync_timeout_ms);
				stop_all(m, 0);
				return -1;
			}
		}
	}
	log_info("manager", "all caches synced in %.0f ms", clock_mono_ms() - start);
	pthread_mutex_lock(&m->lock);
	m->synced = true;
	pthread_mutex_unlock(&m->lock);

	if (m->leader) {
		if (leader_start(m->leader) < 0) {
			log_error("manager", "cannot start leader election");
			stop_all(m, 0);
			return -1;
		}
		/* leader_wait returns false when a stop request woke it. */
		if (!leader_wait(m->leader) || stopping(m)) {
			stop_all(m, 0);
			return 0;
		}
	}

	if (m->before_controllers)
		m->before_controllers(m->before_ctx);
	int started = 0;
	for (; started < m->ncontrollers; started++) {
		if (controller_start(m->controllers[started]) < 0) {
			log_error("manager", "cannot start controller %s",
				  controller_name(m->controllers[started]));
			stop_all(m, started);
			return -1;
		}
	}
	pthread_mutex_lock(&m->lock);
	for (record_refused(m); !m->stop; record_refused(m))
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
	log_info("manager", "stopping: finishing current steps");
	stop_all(m, started);
	log_info("manager", "stopped");
	return 0;
}
