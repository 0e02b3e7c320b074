/*
 * The manager owns the shared informers and the controllers and runs them
 * in order: start the caches, wait until each has synced, start the
 * controllers; on stop, the reverse: stop taking work and let each worker
 * finish its current step, then stop the caches.
 *
 * Threads: manager_request_stop may be called from any thread (e.g. the
 * signal thread); everything else from the thread that runs the manager.
 */
#ifndef SOP_RUNTIME_MANAGER_H
#define SOP_RUNTIME_MANAGER_H

#include <stdbool.h>

#include "client/kube_client.h"
#include "runtime/controller.h"
#include "runtime/events.h"
#include "runtime/informer.h"
#include "runtime/leader.h"

struct manager_options {
	const char *namespace;   /* NULL = all namespaces */
	long sync_timeout_ms;    /* give up starting when caches are not synced by then; default 120 s */
};

struct manager;

/* client borrowed; must outlive the manager. */
struct manager *manager_new(struct kube_client *client, const struct manager_options *opts);
void manager_free(struct manager *m);

/* The shared informer for r in the manager's scope, made on first call. Borrowed. */
struct informer *manager_informer(struct manager *m, const struct kube_resource *r);
/* Like manager_informer, for the objects that match label_selector (a separate cache). */
struct informer *manager_informer_selected(struct manager *m, const struct kube_resource *r,
					   const char *label_selector);
/*
 * Objects the caches leave out for their size (informer.h) get a Warning
 * Event ObjectTooLarge from events (borrowed; must outlive the manager),
 * once per uid and resourceVersion. Before the first informer is made.
 */
void manager_report_refused(struct manager *m, struct event_recorder *events);

/*
 * Objects of r are trimmed by transform (informer_options.transform) before
 * they are cached, in every cache of r the manager makes. Before the first
 * informer of r is made; at most 4 resources.
 */
void manager_set_transform(struct manager *m, const struct kube_resource *r, void (*transform)(json_t *obj));

/* Takes ownership of c. */
void manager_add_controller(struct manager *m, struct controller *c);

/*
 * Runs controllers only while le (borrowed; started and stopped by the
 * manager) holds the Lease. Caches sync before that on every replica, so
 * a standby takes over with warm caches and serves from them meanwhile
 * (the webhook, /readyz).
 */
void manager_set_leader(struct manager *m, struct leader_elector *le);

/*
 * fn(ctx) runs once the caches have synced and, with leader election, the
 * Lease is held, right before the controllers start: work only the leader
 * may do, before anything else acts.
 */
void manager_set_before_controllers(struct manager *m, void (*fn)(void *ctx), void *ctx);

/* True once every informer has synced (for /readyz). */
bool manager_synced(struct manager *m);
/*
 * Another condition of readiness (e.g. the webhook can answer): ready(ctx)
 * says false with *why (borrowed, static) what is missing. Before
 * manager_run; called from any thread once the caches have synced.
 */
void manager_add_ready_check(struct manager *m, bool (*ready)(void *ctx, const char **why), void *ctx);
/*
 * Ready = able to serve, on every replica, leading or not: the caches have
 * synced and every check passes. Leadership is the Lease's (and a metric's)
 * to show, never readiness. *why (borrowed) says what is missing, or "ok"
 * and whether this replica leads.
 */
bool manager_ready(struct manager *m, const char **why);

/* For metrics: the informers and controllers (borrowed). */
int manager_informer_count(struct manager *m);
struct informer *manager_informer_at(struct manager *m, int i);
int manager_controller_count(struct manager *m);
struct controller *manager_controller_at(struct manager *m, int i);

/*
 * Runs until manager_request_stop. Returns 0 after a clean stop, -1 when
 * the caches could not sync in time or a controller could not start.
 */
int manager_run(struct manager *m) __attribute__((warn_unused_result));
void manager_request_stop(struct manager *m);

#endif
