/*
 * The resize controller: for each StatefulSet key, reads the caches into
 * a snapshot and asks resize_plan for the next step; the reconcile driver
 * (runtime/reconciler.h) performs that one step, records it (Event,
 * metrics, crash hook) and requeues. What is the controller's own: the
 * seal on the state it writes, the live check that a PV is the set's
 * before any write to it, saving the StatefulSet from a fresh read, the
 * resize-status line after a step, and which StatefulSet an event on a
 * claim, PV, pod, Job or saved copy concerns. The crash tests name its
 * steps (resize_plan.h) in SOP_TEST_CRASH_AFTER (runtime/crash_hook.h).
 */
#ifndef SOP_RESIZE_CONTROLLER_H
#define SOP_RESIZE_CONTROLLER_H

#include <stdbool.h>

#include "controllers/controller_deps.h"
#include "runtime/controller.h"
#include "runtime/store.h"

struct resize_deps {
	struct controller_deps base;
	bool can_read_storage_classes; /* false in namespace scope (a Role cannot grant them, nor PVs) */
	const char *copy_image;        /* --copy-image; borrowed */
};

/* Registers the caches it reads and returns the controller (add it to the manager). */
struct controller *resize_controller_new(const struct resize_deps *deps);

/* The caches the controller reads (borrowed); classes, pvs and jobs are NULL in namespace scope. */
struct resize_caches {
	struct store *statefulsets, *pvcs, *pods, *backups, *classes, *pvs, *jobs;
};

/* Adds the indexes resize_read needs; before the caches start. */
void resize_caches_index(const struct resize_caches *c);

/* What one reconcile reads; each a new reference or NULL. */
struct resize_reads {
	json_t *sts, *backup, *pvcs, *pods, *classes, *pvs, *jobs;
	bool partial; /* only the set, its saved copy and its claims were read */
};

/*
 * Reads what a reconcile of StatefulSet key ("ns/name") decides on: the
 * set, its saved copy, and only the pods, claims, PVs and copy Jobs that
 * may be its own (set_index.h), plus the StorageClasses (a handful per
 * cluster). Its cost does not grow with the namespace or the cluster.
 *
 * Unless `everything`, a set that asks for nothing (no resize annotation,
 * no resize state, no saved copy) gets only itself and its claims, and
 * out->partial is set: the planner can then only find its template bigger
 * than a claim (a StatefulSet re-created bigger by hand), and whoever finds
 * it must read again with everything before acting.
 */
void resize_read(const struct resize_caches *c, const char *key, bool everything, struct resize_reads *out);
void resize_reads_release(struct resize_reads *r);

#endif
