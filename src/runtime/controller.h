/*
 * A controller: N worker threads that take keys from a work queue and call
 * the reconciler, one worker per key at a time. A failed reconcile is
 * retried with per-key exponential backoff; a reconcile may also ask to be
 * called again after a delay (to poll progress it cannot watch).
 *
 * Threads: controller_start/stop from one controlling thread; enqueue and
 * the handlers from any thread.
 */
#ifndef SOP_RUNTIME_CONTROLLER_H
#define SOP_RUNTIME_CONTROLLER_H

#include <jansson.h>
#include <stdint.h>

#include "runtime/duration_histogram.h"
#include "runtime/informer.h"
#include "runtime/workqueue.h"

/*
 * Reconciles key ("namespace/name"). Returns 0 on success, negative on
 * failure (the key is retried with backoff). *requeue_after_ms, 0 on entry,
 * may be set to have the key reconciled again after that delay.
 */
typedef int (*reconcile_fn)(void *ctx, const char *key, long *requeue_after_ms);

struct controller_options {
	const char *name;        /* "resize", "scaledown", "cluster" */
	int workers;             /* default 1 */
	reconcile_fn reconcile;
	void *ctx;
	void (*free_ctx)(void *ctx); /* called by controller_free; may be NULL */
};

/* How a reconcile ended, as controller-runtime's reconcile_total{result} counts it. */
enum reconcile_result {
	RECONCILE_RESULT_SUCCESS,       /* done, nothing asked */
	RECONCILE_RESULT_ERROR,         /* failed: retried with backoff */
	RECONCILE_RESULT_REQUEUE,       /* asked again at once (never here: kept for the stock label set) */
	RECONCILE_RESULT_REQUEUE_AFTER, /* asked again after a delay */
	RECONCILE_RESULTS
};
/* "success", "error", "requeue", "requeue_after". Static. */
const char *reconcile_result_name(enum reconcile_result r);

struct controller_stats {
	uint64_t reconciles;
	uint64_t errors;
	uint64_t by_result[RECONCILE_RESULTS];
	struct duration_snapshot duration; /* each reconcile */
	uint64_t reactions;                /* reconciles that wrote to the API server */
	struct duration_snapshot reaction; /* from their key being queued to their first write */
};


struct controller;

struct controller *controller_new(const struct controller_options *opts);
void controller_free(struct controller *c);
const char *controller_name(const struct controller *c);
/* Borrowed; valid until controller_free. */
struct workqueue *controller_queue(struct controller *c);

void controller_enqueue(struct controller *c, const char *key);
void controller_enqueue_after(struct controller *c, const char *key, long delay_ms);
/* Enqueues "ns/name"; nothing when either is NULL. */
void controller_enqueue_name(struct controller *c, const char *ns, const char *name);
/* Handlers that enqueue the key of every object added, updated or deleted. */
struct informer_handlers controller_object_handlers(struct controller *c);

/*
 * Maps a watched object (borrowed) to the keys of c it concerns, by
 * calling controller_enqueue* for each: enqueue-by-mapping, as
 * controller-runtime's handler.EnqueueRequestsFromMapFunc.
 */
typedef void (*controller_map_fn)(void *ctx, struct controller *c, const json_t *obj);
/*
 * Handlers that call map with every object added, updated (the new one) or
 * deleted. Their closure lives as long as c.
 */
struct informer_handlers controller_mapped_handlers(struct controller *c, controller_map_fn map, void *ctx);
/* Enqueue-for-owner: each owner reference of that kind, in the object's namespace. */
struct informer_handlers controller_owner_handlers(struct controller *c, const char *kind);
/* The object whose name label `label` gives, in the object's namespace. */
struct informer_handlers controller_label_handlers(struct controller *c, const char *label);

int controller_start(struct controller *c) __attribute__((warn_unused_result));
/* Stops taking keys, lets each worker finish its current reconcile, joins them. */
void controller_stop(struct controller *c);
void controller_get_stats(struct controller *c, struct controller_stats *out);

/*
 * Tells the reconcile running on this thread, if any, that it sends a write
 * to the API server now (sent_ns, clock_mono_ns): its first one counts as
 * the controller's reaction, from the key being queued (by a watch event,
 * a requeue or a retry) to that write, and is logged at debug level. Writes
 * from other threads (the event recorder's) are ignored.
 */
void controller_note_write(uint64_t sent_ns);

#endif
