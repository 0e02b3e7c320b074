/*
 * The resize planner: what the cluster shows in, the one next step out.
 * Pure (no I/O, no clock), so every phase and every bad input is a table
 * test. The reconciler (resize_controller.c) performs the step, records it
 * on the cluster and asks again; everything needed to resume after a crash
 * is in the cluster: the resize-state annotation on the StatefulSet, or on
 * the saved copy while the StatefulSet is gone.
 *
 * The in-place ("expand") cycle, one replica at a time from the highest
 * ordinal:
 *
 *   (none) -> Expanding: patch each PVC of replica k, wait for its
 *             capacity; a PVC that reports FileSystemResizePending gets its
 *             pod restarted (recorded first, then deleted), Ready before
 *             the next replica
 *          -> Saving: the StatefulSet is saved in ConfigMap <sts>-sts-backup
 *          -> Recreating: orphan-delete the StatefulSet (UID precondition),
 *             create it again from the saved copy with the new sizes
 *          -> Adopting: the new StatefulSet owns the pods; the backup goes
 *          -> (none), or Failed when the volume driver refused: then each
 *             claim's request is lowered back to its capacity where the
 *             cluster allows it (KEP-1790), and the outcome is recorded.
 *
 * The copy cycle (resize_copy_plan.c) moves the data of one batch of
 * replicas at a time (rolling: one replica, highest ordinal first; offline:
 * all of them) to new volumes and puts each new volume under the original
 * claim name by PV rebinding; see there.
 */
#ifndef SOP_RESIZE_PLAN_H
#define SOP_RESIZE_PLAN_H

#include <jansson.h>

#include "controllers/resize/resize_request.h"
#include "controllers/contract.h"


struct resize_inputs {
	const json_t *sts;             /* the StatefulSet, or NULL when it does not exist */
	const json_t *backup;          /* ConfigMap <sts>-sts-backup, or NULL */
	/* Each array holds at least the set's own objects (others are ignored); see set_index.h. */
	const json_t *pvcs;            /* the claims that may be the set's (and its -copy claims) */
	const json_t *pods;            /* the pods that may be the set's (and its copy Jobs' pods) */
	const json_t *storage_classes; /* every StorageClass; NULL when they cannot be read */
	const json_t *pvs;             /* the PVs whose claimRef names such a claim; NULL when they cannot be read */
	const json_t *jobs;            /* the set's copy Jobs */
	const char *copy_image;        /* --copy-image */
};

enum resize_step {
	RESIZE_NOTHING,        /* nothing to do */
	RESIZE_REFUSE,         /* bad input: a Warning Event, nothing changed */
	RESIZE_SET_STATE,      /* write state (and status) on the StatefulSet */
	RESIZE_PATCH_PVC,      /* set object's storage request to size */
	RESIZE_DELETE_POD,     /* delete pod object (UID precondition uid) so it restarts */
	RESIZE_SAVE,           /* create the backup ConfigMap: the StatefulSet with state */
	RESIZE_ORPHAN_DELETE,  /* delete the StatefulSet (Orphan, UID precondition uid) */
	RESIZE_RECREATE,       /* create the StatefulSet from the backup, with new sizes and state */
	RESIZE_DELETE_BACKUP,  /* delete the backup ConfigMap */
	RESIZE_FINISH,         /* remove state and status from the StatefulSet */
	RESIZE_WAIT,           /* the cluster is working; look again after requeue_ms */
	RESIZE_LOWER_REQUESTS, /* after a failure: ask each claim for its capacity again (KEP-1790), record the outcome */
	RESIZE_CREATE,         /* create body as resource (409: already there, fine) */
	RESIZE_PATCH,          /* patch object (resource) with body, patch_type */
	RESIZE_DELETE,         /* delete object (resource), UID precondition uid when set (404: gone, fine) */
};

struct kube_resource;

struct resize_action {
	enum resize_step step;
	char object[512];         /* PVC or pod name */
	char uid[64];             /* precondition */
	char size[64];            /* PATCH_PVC */
	json_t *state;            /* SET_STATE, SAVE, RECREATE: the state to write (new reference) */
	char *status;             /* human summary for resize-status (new string), or NULL */
	const char *event_type;   /* "Normal" / "Warning", or NULL: no Event */
	const char *event_reason;
	char *event_message;      /* new string */
	long requeue_ms;          /* WAIT */
	/* CREATE, PATCH, DELETE: */
	const char *what;                      /* what the step is for, e.g. "DeleteClaim" (static) */
	const struct kube_resource *resource;
	json_t *body;                          /* new reference */
	int patch_type;                        /* enum kube_patch_type */
	const char *propagation;               /* DELETE: propagationPolicy or NULL */
	int counts_copy;                       /* SET_STATE: copies verified by this step (metrics) */
	int new_template;                      /* RECREATE: with the new sizes and classes (else as saved) */
	int keep_abort;                        /* RECREATE: carry an abort asked on the ConfigMap over as resize-abort */
	long long copied_bytes;                /* SET_STATE: bytes those copies moved, as the Jobs reported */
};

void resize_action_release(struct resize_action *a);

/*
 * Decides the next step. in is borrowed. now is an RFC 3339 time for the
 * state's timestamps (the planner reads no clock).
 */
void resize_plan(const struct resize_inputs *in, const char *now, struct resize_action *out);

const char *resize_step_name(enum resize_step s);

/* The step's name for logs and SOP_TEST_CRASH_AFTER: what it is for when it says so. */
const char *resize_action_name(const struct resize_action *a);

/*
 * The StatefulSet as saved: the whole object but status and the metadata
 * the server sets (uid, resourceVersion, generation, creationTimestamp,
 * managedFields, deletionTimestamp...). New reference.
 */
json_t *resize_saved_copy(const json_t *sts);

/*
 * The saved copy with each target template's storage request set to its
 * new size (state.targets) and, for a class change, its storageClassName
 * (state.classes). New reference.
 */
json_t *resize_with_new_sizes(const json_t *saved, const json_t *state);

#endif
