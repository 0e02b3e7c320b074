#include "runtime/informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/watch_decoder.h"
#include "util/clock.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define MAX_HANDLERS 8
#define BACKOFF_INITIAL_MS 800
#define BACKOFF_MAX_MS 30000
#define WATCH_TIMEOUT_MIN_S 300
#define WATCH_TIMEOUT_MAX_S 600
/* A watch open this long was accepted by a working server, even if the cluster was quiet. */
#define WATCH_HEALTHY_MS 5000
/* Objects left out for their size that the informer remembers having reported; then it forgets them all. */
#define REFUSED_MAX 1024

/*
 * One LIST page at a time in the whole process: informers syncing side by
 * side would each hold a page of text at once. Sync takes the sum of the
 * LIST times instead of the longest; peak memory holds one page.
 */
static pthread_mutex_t list_page_lock = PTHREAD_MUTEX_INITIALIZER;

struct informer {
	struct kube_client *client;
	const struct kube_resource *resource;
	char *namespace;
	char *label_selector;
	long page_size;
	void (*transform)(json_t *obj);
	void (*on_refused)(void *ctx, const struct kube_resource *r, const struct kube_object_id *id, const char *why);
	void *refused_ctx;

	struct informer_handlers handlers[MAX_HANDLERS];
	int nhandlers;
	struct store *store;

	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* signalled on sync and on stop */
	bool synced;

	char *rv;                /* last resourceVersion seen; informer thread only */
	bool expired;            /* the watch reported 410 Gone; informer thread only */
	bool unreadable;         /* the watch skipped an event it could not name: relist; informer thread only */
	struct hashmap refused;  /* key -> "uid/resourceVersion" reported; informer thread only */
	atomic_ulong lists, watch_restarts, events, refused_total;
	_Atomic double list_wait_ms, list_total_ms;
};


struct informer *informer_new(struct kube_client *client, const struct informer_options *opts)
{
	struct informer *inf = xcalloc(1, sizeof(*inf));
	inf->client = client;
	inf->resource = opts->resource;
	inf->namespace = opts->namespace && *opts->namespace ? xstrdup(opts->namespace) : NULL;
	inf->label_selector = opts->label_selector ? xstrdup(opts->label_selector) : NULL;
	inf->page_size = opts->page_size > 0 ? opts->page_size : 100;
	inf->transform = opts->transform;
	inf->on_refused = opts->on_refused;
	inf->refused_ctx = opts->refused_ctx;
	hashmap_init(&inf->refused);
	inf->store = store_new();
	pthread_mutex_init(&inf->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->cond, &ca);
	pthread_condattr_destroy(&ca);
	return inf;
}

void informer_free(struct informer *inf)
{
	if (!inf)
		return;
	informer_stop(inf);
	store_free(inf->store);
	pthread_mutex_destroy(&inf->lock);
	pthread_cond_destroy(&inf->cond);
	free(inf->namespace);
	free(inf->label_selector);
	free(inf->rv);
	hashmap_release(&inf->refused, free);
	free(inf);
}

void informer_add_handlers(struct informer *inf, const struct informer_handlers *h)
{
	if (inf->nhandlers == MAX_HANDLERS || inf->started)
		abort(); /* a programming error */
	inf->handlers[inf->nhandlers++] = *h;
}

struct store *informer_store(struct informer *inf)
{
	return inf->store;
}

const struct kube_resource *informer_resource(const struct informer *inf)
{
	return inf->resource;
}

static void set_rv(struct informer *inf, const char *rv)
{
	if (!rv || !*rv)
		return;
	free(inf->rv);
	inf->rv = xstrdup(rv);
}

static void trim(struct informer *inf, json_t *obj)
{
	json_object_del(json_object_get(obj, "metadata"), "managedFields");
	if (inf->transform)
		inf->transform(obj);
}

/* Stores obj and tells the handlers; obj is borrowed and may be trimmed. */
static void apply_upsert(struct informer *inf, json_t *obj)
{
	trim(inf, obj);
	json_t *old = NULL;
	if (!store_upsert(inf->store, obj, &old))
		return; /* same resourceVersion: already seen */
	for (int i = 0; i < inf->nhandlers; i++) {
		const struct informer_handlers *h = &inf->handlers[i];
		if (old && h->on_update)
			h->on_update(h->ctx, old, obj);
		else if (!old && h->on_add)
			h->on_add(h->ctx, obj);
	}
	json_decref(old);
}

/* Removes key (refused: left out for its size, see store_refuse) and tells the handlers. */
static void apply_remove(struct informer *inf, const char *key, const json_t *last, bool refused)
{
	json_t *old = NULL;
	if (!(refused ? store_refuse(inf->store, key, &old) : store_delete(inf->store, key, &old)))
		return;
	for (int i = 0; i < inf->nhandlers; i++)
		if (inf->handlers[i].on_delete)
			inf->handlers[i].on_delete(inf->handlers[i].ctx, last ? last : old);
	json_decref(old);
}

static void apply_delete(struct informer *inf, const char *key, const json_t *last)
{
	apply_remove(inf, key, last, false);
}

/* "namespace/name" or "name", as kube_obj_key makes it. New string. */
static char *id_key(const struct kube_object_id *id)
{
	return id->namespace[0] ? xasprintf("%s/%s", id->namespace, id->name) : xstrdup(id->name);
}

/*
 * An object left out for its size: counted each time, logged and handed to
 * on_refused once per uid and resourceVersion (a relist meets it again).
 */
static void report_refused(struct informer *inf, const struct kube_object_id *id, const char *why)
{
	atomic_fetch_add(&inf->refused_total, 1);
	char *key = id_key(id);
	char *seen = xasprintf("%s/%s", id->uid, id->resource_version);
	const char *before = hashmap_get(&inf->refused, key);
	if (before && !strcmp(before, seen)) {
		free(seen);
		free(key);
		return;
	}
	if (!before && hashmap_len(&inf->refused) >= REFUSED_MAX)
		hashmap_release(&inf->refused, free);
	free(hashmap_put(&inf->refused, key, seen));
	log_warn("informer", "%s %s (uid %s, resourceVersion %s) left out of the cache: %s", inf->resource->kind,
		 key[0] ? key : "(no name)", id->uid[0] ? id->uid : "?",
		 id->resource_version[0] ? id->resource_version : "?", why);
	if (inf->on_refused && id->name[0])
		inf->on_refused(inf->refused_ctx, inf->resource, id, why);
	free(key);
}

/* Sleeps up to ms, returning early when stopped. */
static void wait_ms(struct informer *inf, long ms)
{
	struct timespec until = clock_mono_deadline(ms);
	pthread_mutex_lock(&inf->lock);
	while (!atomic_load(&inf->stop) &&
	       pthread_cond_timedwait(&inf->cond, &inf->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&inf->lock);
}

struct relist_ctx {
	struct informer *inf;
	struct hashmap seen; /* keys the list had */
};

/*
 * An item of a LIST page too large to read: left out (store_refuse) and
 * among the list's keys, so the relist does not take it for gone; one
 * without a name is simply not in the list.
 */
static int relist_refused(void *ctx, const char *type, const struct kube_object_id *id, const char *why)
{
	(void)type;
	struct relist_ctx *rc = ctx;
	report_refused(rc->inf, id, why);
	if (id->name[0]) {
		char *key = id_key(id);
		hashmap_put(&rc->seen, key, (void *)1);
		apply_remove(rc->inf, key, NULL, true);
		free(key);
	}
	return 0;
}

/* One item of a LIST page: cache it and remember that the list had it. */
static void relist_item(void *ctx, json_t *item)
{
	struct relist_ctx *rc = ctx;
	/* Items of a list carry no kind; the cache should look like a GET. */
	json_object_set_new(item, "kind", json_string(rc->inf->resource->kind));
	json_object_set_new(item, "apiVersion", json_string(rc->inf->resource->api_version));
	char *key = kube_obj_key(item);
	hashmap_put(&rc->seen, key, (void *)1);
	free(key);
	apply_upsert(rc->inf, item);
}

/*
 * LIST page by page, applying each item as it is parsed, so memory holds
 * one page's text and one object's tree; then remove what the list no
 * longer has.
 */
static int relist(struct informer *inf)
{
	struct relist_ctx rc = {.inf = inf, .seen = HASHMAP_INIT};
	char *cont = NULL;
	char *list_rv = NULL;
	struct kube_error err;
	int result = 0;
	double start = clock_mono_ms(), waited = 0;
	long limit = inf->page_size;
	for (;;) {
		struct kube_list_options lo = {.label_selector = inf->label_selector,
					       .limit = limit,
					       .continue_token = cont,
					       .on_oversize = relist_refused};
		char *next = NULL, *rv = NULL;
		pthread_mutex_lock(&list_page_lock);
		double t = clock_mono_ms();
		int lrc = kube_list_page_each(inf->client, inf->resource, inf->namespace, &lo, relist_item,
					      &rc, &next, &rv, &err);
		waited += clock_mono_ms() - t;
		pthread_mutex_unlock(&list_page_lock);
		if (lrc == KUBE_ETOOLARGE && limit > 1) {
			/*
			 * Anyone who may create objects can make a page of large
			 * ones pass the client's cap: fewer per page, down to
			 * one, which the cap always holds.
			 */
			limit /= 2;
			log_warn("informer", "list %s: a page was larger than the client accepts; asking for %ld at a time",
				 inf->resource->plural, limit);
			continue;
		}
		FREE_AND_NULL(cont);
		if (lrc < 0) {
			log_warn("informer", "list %s failed: %s (%s)", inf->resource->plural,
				 err.message, err.reason[0] ? err.reason : "no reason");
			if (lo.continue_token == NULL || err.code != 410) {
				result = -1;
				break;
			}
			/* The continue token expired: start the snapshot over. */
			hashmap_release(&rc.seen, NULL);
			continue;
		}
		cont = next;
		if (!cont) {
			list_rv = rv;
			break;
		}
		free(rv);
		if (atomic_load(&inf->stop)) {
			result = -1;
			break;
		}
	}
	if (!result) {
		size_t n;
		char **keys = store_keys(inf->store, &n);
		for (size_t i = 0; i < n; i++) {
			if (!hashmap_get(&rc.seen, keys[i]))
				apply_delete(inf, keys[i], NULL);
			free(keys[i]);
		}
		free(keys);
		set_rv(inf, list_rv);
		atomic_fetch_add(&inf->lists, 1);
		double total = clock_mono_ms() - start;
		atomic_store(&inf->list_wait_ms, atomic_load(&inf->list_wait_ms) + waited);
		atomic_store(&inf->list_total_ms, atomic_load(&inf->list_total_ms) + total);
		pthread_mutex_lock(&inf->lock);
		if (!inf->synced)
			log_info("informer", "%s synced: %zu objects in %.0f ms (%.0f ms waiting for "
				 "LIST responses)",
				 inf->resource->plural, store_len(inf->store), total, waited);
		inf->synced = true;
		pthread_cond_broadcast(&inf->cond);
		pthread_mutex_unlock(&inf->lock);
	}
	free(cont);
	free(list_rv);
	hashmap_release(&rc.seen, NULL);
	return result;
}

static int on_watch_event(void *ctx, const char *type, json_t *object)
{
	struct informer *inf = ctx;
	if (!strcmp(type, "ERROR")) {
		long code = watch_error_code(object);
		if (code == 410) {
			inf->expired = true;
		} else {
			const char *msg = json_string_value(json_object_get(object, "message"));
			log_warn("informer", "watch %s: error %ld: %s", inf->resource->plural, code,
				 msg ? msg : "(no message)");
		}
		return 1;
	}
	const char *rv = kube_obj_str(object, "metadata.resourceVersion");
	atomic_fetch_add(&inf->events, 1);
	if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) {
		apply_upsert(inf, object);
	} else if (!strcmp(type, "DELETED")) {
		char *key = kube_obj_key(object);
		trim(inf, object);
		apply_delete(inf, key, object);
		free(key);
	} else if (strcmp(type, "BOOKMARK")) {
		log_warn("informer", "watch %s: unknown event type %s", inf->resource->plural, type);
	}
	set_rv(inf, rv);
	return 0;
}

/*
 * An event too large to read: the object is treated as gone (a copy
 * cached before would be stale) and the watch goes on past it. One that
 * cannot even be named cannot be taken out by key, nor its version known:
 * the watch ends and the informer relists, which leaves it out.
 */
static int on_watch_refused(void *ctx, const char *type, const struct kube_object_id *id, const char *why)
{
	struct informer *inf = ctx;
	if (!id->name[0] || !id->resource_version[0]) {
		report_refused(inf, id, why);
		inf->unreadable = true;
		return 1;
	}
	atomic_fetch_add(&inf->events, 1);
	char *key = id_key(id);
	bool deleted = !strcmp(type, "DELETED");
	if (deleted)
		free(hashmap_remove(&inf->refused, key));
	else
		report_refused(inf, id, why);
	apply_remove(inf, key, NULL, !deleted);
	free(key);
	set_rv(inf, id->resource_version);
	return 0;
}

static long next_backoff(long backoff)
{
	if (!backoff)
		return BACKOFF_INITIAL_MS;
	return backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
}

/*
 * The backoff grows with every attempt that fails or brings nothing (a
 * LIST error, a watch ended by an ERROR event or at once with an empty
 * body: reconnecting at once would hammer the server thousands of times a
 * second), and starts over only once a watch has delivered events or
 * stayed open a while.
 */
static void *informer_run(void *arg)
{
	struct informer *inf = arg;
	bool need_list = true;
	long backoff = 0;
	while (!atomic_load(&inf->stop)) {
		if (backoff) {
			wait_ms(inf, backoff);
			if (atomic_load(&inf->stop))
				break;
		}
		if (need_list) {
			if (relist(inf) < 0) {
				backoff = next_backoff(backoff);
				continue;
			}
			need_list = false;
		}
		struct kube_watch_options wo = {
			.resource_version = inf->rv,
			.label_selector = inf->label_selector,
			.timeout_seconds = WATCH_TIMEOUT_MIN_S +
					   rand() % (WATCH_TIMEOUT_MAX_S - WATCH_TIMEOUT_MIN_S + 1),
			.allow_bookmarks = true,
			.on_oversize = on_watch_refused,
		};
		struct kube_error err;
		unsigned long before = atomic_load(&inf->events);
		inf->expired = false;
		inf->unreadable = false;
		double started = clock_mono_ms();
		int rc = kube_watch(inf->client, inf->resource, inf->namespace, &wo, on_watch_event, inf,
				    &inf->stop, &err);
		if (rc == KUBE_ESTOPPED || atomic_load(&inf->stop))
			break;
		atomic_fetch_add(&inf->watch_restarts, 1);
		bool healthy = atomic_load(&inf->events) != before ||
			       clock_mono_ms() - started >= WATCH_HEALTHY_MS;
		if (healthy)
			backoff = 0; /* it worked until it ended: start the backoff anew */
		if (inf->expired || (rc == KUBE_EHTTP && err.code == 410)) {
			/* At once after a healthy watch; a fresh list's version expiring at once is not. */
			if (!healthy)
				backoff = next_backoff(backoff);
			log_info("informer", "watch %s: resourceVersion %s expired; relisting%s",
				 inf->resource->plural, inf->rv ? inf->rv : "", backoff ? " after a backoff" : "");
			need_list = true;
		} else if (inf->unreadable) {
			log_warn("informer", "watch %s: an event too large to read did not say which object; relisting",
				 inf->resource->plural);
			need_list = true;
		} else if (rc == KUBE_OK && healthy) {
			/* The server ended it (timeoutSeconds): reopen at once. */
		} else {
			backoff = next_backoff(backoff);
			log_warn("informer", "watch %s ended: %s; reconnecting in %ld ms",
				 inf->resource->plural,
				 rc == KUBE_OK ? "no events (an ERROR event or an empty answer)" : err.message,
				 backoff);
		}
	}
	return NULL;
}

int informer_start(struct informer *inf)
{
	if (inf->started)
		return 0;
	atomic_store(&inf->stop, false);
	if (pthread_create(&inf->thread, NULL, informer_run, inf))
		return -1;
	inf->started = true;
	return 0;
}

void informer_request_stop(struct informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	atomic_store(&inf->stop, true);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
}

void informer_stop(struct informer *inf)
{
	if (!inf->started)
		return;
	informer_request_stop(inf);
	pthread_join(inf->thread, NULL);
	inf->started = false;
}

bool informer_has_synced(struct informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	bool s = inf->synced;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

bool informer_wait_synced(struct informer *inf, long timeout_ms)
{
	struct timespec until = clock_mono_deadline(timeout_ms >= 0 ? timeout_ms : 0);
	pthread_mutex_lock(&inf->lock);
	while (!inf->synced && !atomic_load(&inf->stop)) {
		int rc = timeout_ms >= 0 ? pthread_cond_timedwait(&inf->cond, &inf->lock, &until)
					 : pthread_cond_wait(&inf->cond, &inf->lock);
		if (rc == ETIMEDOUT)
			break;
	}
	bool s = inf->synced;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

void informer_get_stats(struct informer *inf, struct informer_stats *out)
{
	out->lists = atomic_load(&inf->lists);
	out->watch_restarts = atomic_load(&inf->watch_restarts);
	out->events = atomic_load(&inf->events);
	out->refused = atomic_load(&inf->refused_total);
	out->list_wait_ms = atomic_load(&inf->list_wait_ms);
	out->list_total_ms = atomic_load(&inf->list_total_ms);
}
