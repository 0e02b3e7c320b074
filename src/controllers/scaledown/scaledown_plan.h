/*
 * The scale-down cleanup planner: what the cluster shows in, the one next
 * step out (SPEC section "scaledown"). Pure: no I/O, and the clock comes in
 * as an input, so every case is a table test. The reconciler
 * (scaledown_controller.c) performs the step and asks again; everything
 * needed to resume after a crash is in the cluster:
 *
 *   - the cleanup pods themselves (label cleanup-for, annotations naming
 *     the ordinal, the attempt and the UIDs of the claims they mount);
 *   - the StatefulSet's scaledown-state annotation: per ordinal, the failed
 *     attempts so far, the UID of the last failed pod recorded (so a failure
 *     is counted once), when to retry and the last message;
 *   - the StatefulSet's finalizer.
 *
 * A claim set is the PVCs <template>-<sts>-<ordinal>, one per
 * volumeClaimTemplate that has one. It is orphaned when the ordinal is
 * outside [ordinals.start, ordinals.start + replicas) (or the StatefulSet
 * is being deleted), at least one of its claims is not being deleted, and
 * no pod (the StatefulSet's, or any other) holds the name <sts>-<ordinal>.
 *
 * For one orphaned claim set:
 *   start      create the cleanup pod <sts>-<ordinal> (attempt n)
 *   Succeeded  delete each claim it mounted (by UID), then the pod:
 *              CleanupSucceeded
 *   Failed, or past scaledown-timeout since it was created:
 *              record the failure on the StatefulSet (CleanupFailed), then
 *              delete the pod; start again after 5 s * 2^(failures-1)
 *              (at most 5 min), until scaledown-max-attempts failed: then
 *              the claims are kept and scaledown-status says so.
 *
 * OrderedReady: only the highest ordinal that still needs cleanup is
 * worked on. Parallel: up to parallelism claim sets at once (a set waiting
 * to retry holds its place).
 *
 * Scale-up while a cleanup pod runs: the pod holds the name, so the
 * StatefulSet cannot re-create the ordinal; the pod is left to finish (a
 * cleanup cut half-way leaves the data half-moved). Succeeded: its claims
 * are deleted as usual, the data was handed off. Failed: the claims are
 * kept and no retry follows. Then the pod is deleted and the StatefulSet
 * creates its pod (the status annotation changing wakes its controller).
 *
 * StatefulSet deletion (finalizer stateful-operator.io/scaledown): every
 * ordinal with a claim set is cleaned up, in the policy's order; the
 * StatefulSet's own pod of an ordinal is deleted first. A claim set whose
 * name is held by a pod the set does not control is left alone (it is not
 * the operator's to stop), and the others go on. The finalizer goes when no
 * cleanup pod is left and every claim set is cleaned, given up or left
 * alone; a Warning CleanupIncomplete then names the ordinals whose claims
 * stay. Claims that stay lose the owner reference whenDeleted: Delete gave
 * them first, or the garbage collector would delete them with the set.
 * A deletion that orphans (propagationPolicy Orphan: --cascade=orphan, or
 * the resize controller re-creating the StatefulSet, which records its
 * resize-state first; seen by the orphan finalizer, the resize-state, or a
 * pod of the set the garbage collector has already orphaned) cleans
 * nothing: the finalizer is simply removed, cleanup pods under way stay.
 *
 * Claims are taken to be the set's only when its selector's matchLabels are
 * on them (the StatefulSet controller labels its claims so): a claim of the
 * same name made by hand or by another set is never mounted or deleted.
 *
 * Where: scaledown_plan.c finds the orphaned claim sets, schedules them
 * and keeps the state and the finalizer; scaledown_cleanup_pod.c builds
 * and starts one cleanup pod and acts on its outcome (success deletes its
 * claims; failure is recorded for a retry); scaledown_state.c is what
 * both write with (state, status, backoff). No file calls back into one
 * that calls it.
 */
#ifndef SOP_SCALEDOWN_PLAN_H
#define SOP_SCALEDOWN_PLAN_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/contract.h"
#include "runtime/action.h"

#define SCALEDOWN_BACKOFF_BASE_MS 5000L
#define SCALEDOWN_BACKOFF_MAX_MS (5L * 60 * 1000)

/*
 * The steps (struct action's what), as logs and SOP_TEST_CRASH_AFTER name
 * them. Patches of the set carry its resourceVersion, deletes a UID, as
 * precondition: 409 and 404 mean the cluster moved on (StopPod: 404 is
 * done). The state the Record steps write is sealed by the controller.
 */
#define SCALEDOWN_ADD_FINALIZER "AddFinalizer"
#define SCALEDOWN_REMOVE_FINALIZER "RemoveFinalizer"
#define SCALEDOWN_RECORD_STATE "RecordState"
#define SCALEDOWN_RECORD_FAILURE "RecordFailure"
#define SCALEDOWN_CREATE_POD "CreateCleanupPod"
#define SCALEDOWN_STOP_POD "StopPod"
#define SCALEDOWN_DELETE_POD "DeleteCleanupPod"
#define SCALEDOWN_DELETE_CLAIM "DeleteClaim"
#define SCALEDOWN_DISOWN_CLAIM "DisownClaim"

struct scaledown_inputs {
	const json_t *sts;  /* the StatefulSet (a StatefulSet that is gone has nothing left to clean) */
	const json_t *pvcs; /* array: the claims of its namespace (others are ignored) */
	const json_t *pods; /* array: the pods of its namespace */
	long long now_ms;   /* wall clock, milliseconds since the epoch */
};

/* Decides the next step: out is action_init'ed, then filled with new references (action_release). in is borrowed. */
void scaledown_plan(const struct scaledown_inputs *in, struct action *out);

/*
 * True when StatefulSet sts (borrowed) asks nothing of scale-down: no cleanup
 * template (under either key), no scale-down state, no finalizer of ours.
 * Such a set is decided from itself alone: nothing to do, its pods and
 * claims are not read. (A cleanup pod runs only under our finalizer, so
 * none is missed; one left by an earlier StatefulSet of the same name,
 * orphan-deleted by hand, is taken up again when the template returns.)
 */
bool scaledown_plan_asks_nothing(const json_t *sts);

/*
 * True when the deletion of sts orphans its pods and claims (pods: the
 * pods of its namespace). Its finalizer then goes with cleanup pods under
 * way; otherwise only once none is left. Both borrowed.
 */
bool scaledown_plan_orphaning(const json_t *sts, const json_t *pods);

/* The wait before retry n+1 after n failures (n >= 1). */
long scaledown_backoff_ms(int failures);

#endif
