/*
 * The reconcile driver every controller runs: for a key "ns/name", read
 * the caches into a snapshot, ask the planner for one action, perform it,
 * and record it. A controller supplies a request parser and a planner
 * (behind `read` and `plan`) and registers; everything else is here:
 *
 *   error    the key is retried with the work queue's backoff (a log line)
 *   stale    (a precondition failed: the cluster moved on) look again after
 *            RECONCILE_STALE_MS; no Event
 *   done     its Event on the object `about` names, its metrics, the crash
 *            hook (SOP_TEST_CRASH_AFTER, crash_hook.h), and a requeue: WAIT
 *            after its requeue_ms; a step that changed something after
 *            RECONCILE_AFTER_STEP_MS at the latest (watch events usually
 *            come first; this is the safety net); nothing or a refusal
 *            only when the planner named a deadline.
 *
 * A controller may let steps independent of each other go together
 * (reconciler_ops.batch: a StatefulCluster's claims, then its pods, as a
 * StatefulSet with podManagementPolicy Parallel makes them); each is told
 * and recorded as above.
 *
 * Threads: the ops are called from the controller's workers, one key at a
 * time per key (the steps of a batch are sent from threads of their own);
 * they must be safe for different keys at once.
 */
#ifndef SOP_RUNTIME_RECONCILER_H
#define SOP_RUNTIME_RECONCILER_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "runtime/action.h"
#include "runtime/controller.h"
#include "runtime/events.h"

#define RECONCILE_AFTER_STEP_MS 2000L
#define RECONCILE_STALE_MS 200L
/* Steps of one batch (reconciler_ops.batch), and of them sent at once. */
#define RECONCILE_BATCH_MAX 64
#define RECONCILE_WAVE_MAX 16

/* What a live check found (reconciler_ops.check). */
#define RECONCILE_GO 0
#define RECONCILE_MOVED_ON 1
#define RECONCILE_DONE 2

struct reconcile_key {
	const char *key;  /* "ns/name" */
	const char *ns;   /* its namespace */
	const char *name; /* its name */
};

struct reconciler_ops {
	const char *name; /* "resize": the controller's name, in logs and the crash hook */
	/*
	 * Reads what a decision on key needs from the caches: a new snapshot,
	 * or NULL when there is nothing to decide (the object asks nothing).
	 */
	void *(*read)(void *ctx, const struct reconcile_key *k);
	void (*release)(void *ctx, void *snapshot);
	/* Decides: fills a (action_init'ed). now_ms: wall clock, milliseconds since the epoch. */
	void (*plan)(void *ctx, const struct reconcile_key *k, void *snapshot, long long now_ms, struct action *a);
	/* The object Events go to (borrowed from the snapshot), or NULL: none. */
	const json_t *(*about)(void *ctx, void *snapshot);
	/* Optional: completes an action before it is sent (seals the state it writes). */
	void (*prepare)(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a);
	/*
	 * Optional: a live check before the action is sent, for steps that
	 * cannot be taken back and that the cache, which lags, must not
	 * decide alone. Returns RECONCILE_GO (it may add a precondition it
	 * read, e.g. a->resource_version), RECONCILE_MOVED_ON (stale: look
	 * again soon), RECONCILE_DONE (the live object shows the step done
	 * already: recorded as done, nothing sent), or -1 on error (err filled).
	 */
	int (*check)(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a,
		     struct kube_error *err);
	/* Performs an ACTION_OWN step; returns as action_perform does. */
	int (*perform_own)(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a,
			   bool *stale, struct kube_error *err);
	/* Optional: told how the step went (r < 0: err says why), e.g. to remember it or warn. */
	void (*performed)(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a, int r,
			  const struct kube_error *err);
	/*
	 * Optional: steps that need not wait for each other (creates of
	 * objects independent of each other). Returns true when the snapshot
	 * now shows step a as done (the controller added what it makes): the
	 * planner is asked again, and the steps of a's name it asks for so
	 * are sent together, in waves of 1, 2, 4... up to RECONCILE_WAVE_MAX
	 * at once, stopping at the first that fails or finds the cluster moved
	 * on. check and perform_own must then be safe for steps of one key at once.
	 */
	bool (*batch)(void *ctx, void *snapshot, const struct action *a);
};

struct reconciler_deps {
	struct kube_client *client;    /* borrowed */
	struct event_recorder *events; /* borrowed */
	/* Adds by to metric family; may be NULL (no metrics). */
	void (*count)(void *counter, const char *family, double by);
	/* Records v (label: the family's one label value) in histogram family; may be NULL. */
	void (*observe)(void *counter, const char *family, const char *label, double v);
	void *counter;

	int workers;
};

/*
 * A controller that drives ops with ctx. ctx is freed by free_ctx (may be
 * NULL) when the controller is. Add it to the manager.
 */
struct controller *reconciler_new(const struct reconciler_ops *ops, void *ctx, void (*free_ctx)(void *ctx),
				  const struct reconciler_deps *deps);

#endif
