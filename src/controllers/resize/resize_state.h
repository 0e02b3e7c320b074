/*
 * The resize-state annotation: what a resize has done so far, the one
 * record a resize resumes from after a crash. Parsed once into a struct
 * resize_state (the phase and the copy stage as enums, for the planners'
 * switches), written back as JSON text in one place (resize_state_text).
 * The JSON on the cluster is the contract: keys the operator does not know
 * (written by another version) are kept when the state is written back.
 *
 * {"v": its version (state_version.h; absent: 1), "phase", "strategy":
 *  "expand" | "copy", "targets": {tmpl: size}, "classes": {tmpl: class},
 *  "statefulSetUID", "started", "updated",
 *  "message", "templates": [the desired templates carried out]}, plus for
 * expand "restart": {"pod", "uid"}, "lowering" and "lowered": {claim:
 * outcome}, "attributesClasses": {tmpl: VolumeAttributesClass} and, after
 * an infeasible one, "attributesRevert": {"claim", "to", "outcome"}; for copy see resize_copy_plan.c
 * ("batch": {"ordinals", "step", "volumes", "restore", "failed"}, "done",
 * "oldVolumes", "ordinals", ...).
 *
 * Pure; a leaf: it includes no other file of src/controllers/resize.
 */
#ifndef SOP_RESIZE_STATE_H
#define SOP_RESIZE_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum resize_phase {
	RESIZE_PHASE_NONE, /* no state */
	RESIZE_PHASE_EXPANDING,
	RESIZE_PHASE_SAVING,
	RESIZE_PHASE_RECREATING,
	RESIZE_PHASE_ADOPTING,
	RESIZE_PHASE_FAILED,
	RESIZE_PHASE_COPYING,
	RESIZE_PHASE_CLEANING,
	RESIZE_PHASE_MODIFYING, /* in place: the claims' volumeAttributesClassName (resize_modify_plan.c) */
	RESIZE_PHASE_UNKNOWN, /* a phase this version does not know: nothing is done */
};

/* Where the copy cycle's batch stands (batch.step). */
enum copy_stage {
	COPY_STAGE_NONE, /* no batch */
	COPY_STAGE_PREPARE,
	COPY_STAGE_PRECOPY,
	COPY_STAGE_STOP,
	COPY_STAGE_COPY,
	COPY_STAGE_SWAP,
	COPY_STAGE_RESTART,
	COPY_STAGE_READY,
	COPY_STAGE_UNKNOWN,
};

struct resize_state {
	json_t *json;           /* the whole state, unknown keys included (owned) */
	enum resize_phase phase;
	bool copy;              /* strategy "copy" */
	enum copy_stage stage;  /* the batch's step; NONE without a batch */
	/* Borrowed from json; NULL when absent. */
	const char *uid;        /* statefulSetUID: the set the resize started on */
	const char *started;
	const char *message;    /* Failed: why */
	const json_t *targets;  /* {template: size} */
	const json_t *classes;  /* {template: StorageClass} */
	const json_t *templates; /* the desired volumeClaimTemplates being carried out, or NULL */
	const json_t *attributes_classes; /* {template: VolumeAttributesClass} */
	/* expand: */
	const json_t *restart;  /* {"pod", "uid"}: the pod restarted to grow its file system (Expanding) or
				 * to mount an added template's volume (Adopting, with "ordinal") */
	const json_t *lowering; /* Failed: {claim: "pending" | its refusal} */
	const json_t *lowered;  /* Failed: {claim: outcome}, once recorded */
	/* copy: */
	bool offline, precopy;
	const json_t *ordinals; /* the replicas to copy */
	const json_t *done;     /* those copied */
	const json_t *old_volumes;
	const char *completed;  /* when the last batch was done (or the resize aborted) */
	long long keep_old_s;   /* keep-old-volumes, in seconds */
	const json_t *batch;    /* the batch in flight */
	const char *restore;    /* why the batch goes back to its old volumes */
};

/*
 * Reads the resize-state annotation of obj (borrowed) into st. Returns
 * false, with st->phase NONE and st->json NULL, when there is none (or it
 * is not a JSON object). Release st either way.
 */
bool resize_state_read(const json_t *obj, struct resize_state *st);
void resize_state_release(struct resize_state *st);

/* A copy of st's JSON with phase set and "updated" now (ms since the epoch). New reference. */
json_t *resize_state_next(const struct resize_state *st, long long now_ms, enum resize_phase phase);
/* A copy of st's JSON in phase Copying with the batch's step stage, "updated" now. New reference. */
json_t *resize_state_next_stage(const struct resize_state *st, long long now_ms, enum copy_stage stage);
/* Sets key "phase" of the JSON state js (borrowed) to phase's name. */
void resize_state_set_phase(json_t *js, enum resize_phase phase);
/* Sets the batch's "step" of the JSON state js (borrowed) to stage's name. */
void resize_state_set_stage(json_t *js, enum copy_stage stage);
/* ms since the epoch as the state's timestamps write it (RFC 3339, UTC, seconds). New reference. */
json_t *resize_state_time(long long ms);

/* The state as the annotation holds it (sorted keys, compact), with "v" (state_version.h). New string. */
char *resize_state_text(const json_t *js);

/*
 * True when the resize controller is re-creating StatefulSet sts
 * (borrowed): it recorded so in the set's own state before it orphan-deletes
 * it. Scale-down then takes the deletion for an orphaning one.
 */
bool resize_state_recreating(const json_t *sts);

/*
 * How long the resize recorded on sts (borrowed) has been under way at
 * now_s (seconds since the epoch), from its "started": 0 or more while it
 * works towards new volumes (Expanding, Saving, Recreating, Adopting,
 * Copying, Modifying). -1 when there is none, it failed, it is done and only
 * keeps old volumes (Cleaning), its phase is unknown or its start is not
 * a readable time. For the stuck-resize alert's gauge.
 */
double resize_state_in_flight_seconds(const json_t *sts, long long now_s);

/*
 * An index of the StatefulSets cache (a store_index_fn): every set that
 * carries a resize state, under the one value RESIZE_STATE_INDEX_VALUE, so
 * that the metrics read those sets and not the whole fleet at each scrape.
 * *values: a new array of new strings.
 */
#define RESIZE_STATE_INDEX "resize-state"
#define RESIZE_STATE_INDEX_VALUE "present"
size_t resize_state_index(const json_t *obj, char ***values);

#endif
