/*
 * The scale-down cleanup controller (SPEC section "scaledown"): reconciles
 * StatefulSets that carry a cleanup pod template, one step at a time, as
 * scaledown_plan.c decides, on the shared reconciler (runtime/reconciler.h).
 * Before the steps that cannot be taken back it checks the live objects,
 * not the cache: a cleanup pod starts only while its claims are still there
 * with the same UIDs and the StatefulSet is as the planner saw it (so a
 * success or a failure just recorded is never followed by a second run), a
 * StatefulSet's pod is stopped only while the set still controls it, and
 * the finalizer goes only when no cleanup pod is left.
 */
#ifndef SOP_SCALEDOWN_CONTROLLER_H
#define SOP_SCALEDOWN_CONTROLLER_H

#include <stdbool.h>

#include "controllers/controller_deps.h"
#include "runtime/controller.h"
#include "runtime/store.h"

/* Registers the caches it reads; deps is copied. A new controller: manager_add_controller takes it. */
struct controller *scaledown_controller_new(const struct controller_deps *deps);

/* The caches the controller reads (borrowed). */
struct scaledown_caches {
	struct store *statefulsets, *pvcs, *pods;
};

/* Adds the indexes scaledown_read needs; before the caches start. */
void scaledown_caches_index(const struct scaledown_caches *c);

/* What one reconcile reads; each a new reference or NULL. */
struct scaledown_reads {
	json_t *sts, *pvcs, *pods;
	bool asks_nothing; /* no set, or scaledown_plan_asks_nothing: pvcs and pods were not read */
};

/*
 * Reads what a reconcile of StatefulSet key ("ns/name") decides on: the set
 * as cached and, unless it asks nothing of scale-down
 * (scaledown_plan_asks_nothing; pvcs and pods then stay NULL), only the
 * claims and pods that may be its own (set_index.h).
 */
void scaledown_read(const struct scaledown_caches *c, const char *key, struct scaledown_reads *out);
/* Drops the references out holds and empties it. */
void scaledown_reads_release(struct scaledown_reads *r);

#endif
