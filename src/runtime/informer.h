/*
 * An informer keeps a store in step with one resource type: it LISTs (in
 * pages), then WATCHes from the list's resourceVersion with bookmarks,
 * resumes a cut watch from the last resourceVersion it saw (so no event is
 * lost or repeated), relists when that version has expired (410 Gone), and
 * backs off 0.8 s -> 30 s between attempts that fail or bring nothing (a
 * watch ended by an ERROR event or at once with an empty answer). The
 * backoff starts over once a watch has delivered events or stayed open 5 s.
 * Each watch asks the server to end it after a random 5-10 minutes, so
 * load spreads out.
 *
 * Handlers run on the informer's own thread after the store is updated;
 * they must be quick (enqueue a key) and must not call informer_stop().
 * Objects are cached without metadata.managedFields (never needed to
 * decide, and often half the object).
 *
 * An object whose parsed tree would pass KUBE_OBJECT_MAX_PARSED (a LIST
 * item or a watch event) is not cached: the cache goes on as if it were
 * gone (a copy cached before is removed, on_delete is called), the cache
 * syncs without it, and it is counted (stats.refused), logged and handed to
 * on_refused once per uid and resourceVersion. What each controller does
 * without it: docs/design.md, "Parse budgets". Every object the store holds
 * was thus parsed under the budget, and so is every read of it (the store
 * keeps the text of a subset of what was parsed).
 *
 * Threads: informer_start/stop from one controlling thread; the store,
 * has_synced and stats from any thread.
 */
#ifndef SOP_RUNTIME_INFORMER_H
#define SOP_RUNTIME_INFORMER_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "runtime/store.h"

struct informer_handlers {
	void (*on_add)(void *ctx, const json_t *obj);
	void (*on_update)(void *ctx, const json_t *old, const json_t *obj);
	/* obj is the last state known: from the DELETED event, or the cache after a relist. */
	void (*on_delete)(void *ctx, const json_t *obj);
	void *ctx;
};

struct informer_options {
	const struct kube_resource *resource;
	const char *namespace;      /* NULL or "" = all namespaces */
	const char *label_selector; /* optional */
	long page_size;             /* LIST page size; default 100 */
	/* Optional: trims an object (in place) before it is cached. */
	void (*transform)(json_t *obj);
	/* Optional: an object left out for its size, once per uid and resourceVersion (informer thread). */
	void (*on_refused)(void *ctx, const struct kube_resource *r, const struct kube_object_id *id, const char *why);
	void *refused_ctx;
};

struct informer_stats {
	unsigned long lists;          /* LIST cycles completed */
	unsigned long watch_restarts; /* watches that ended and were reopened */
	unsigned long events;         /* watch events applied */
	unsigned long refused;        /* objects left out for their size (each time: a relist counts again) */
	double list_wait_ms;          /* time spent waiting for LIST responses, all cycles */
	double list_total_ms;         /* time of the LIST cycles, waiting and applying */
};

struct informer;

/* The client is borrowed and must outlive the informer. */
struct informer *informer_new(struct kube_client *client, const struct informer_options *opts);
void informer_free(struct informer *inf);

/* Before informer_start. At most 8 handler sets. */
void informer_add_handlers(struct informer *inf, const struct informer_handlers *h);
/* Borrowed; valid until informer_free. Add indexes before informer_start. */
struct store *informer_store(struct informer *inf);
const struct kube_resource *informer_resource(const struct informer *inf);

int informer_start(struct informer *inf) __attribute__((warn_unused_result));
/* Asks the thread to stop and returns at once (to stop many in parallel). */
void informer_request_stop(struct informer *inf);
/* Stops the thread (within about a second) and joins it. */
void informer_stop(struct informer *inf);

/* True once the first LIST has been applied to the store. */
bool informer_has_synced(struct informer *inf);
/* Waits until synced or timeout_ms passed (negative = no limit); returns has_synced. */
bool informer_wait_synced(struct informer *inf, long timeout_ms);
void informer_get_stats(struct informer *inf, struct informer_stats *out);

#endif
