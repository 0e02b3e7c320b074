/*
 * The resize planner: what the cluster shows in, the one next step out.
 * Pure (no I/O; the clock comes in), so every phase and every bad input is
 * a table test. The reconciler (resize_controller.c) performs the step,
 * records it on the cluster and asks again; everything needed to resume
 * after a crash is in the cluster: the resize-state annotation
 * (resize_state.h) on the StatefulSet, or on the saved copy while the
 * StatefulSet is gone. resize_plan.c dispatches on the phase, and starts
 * a resize: what is asked (the annotations, the desired templates the
 * admission webhook recorded (resize_desired.c), or a template already
 * bigger than its claims), checked against the StorageClasses, decides the
 * strategy (in place, or by copy as soon as one template needs it).
 *
 * The in-place ("expand") cycle (resize_expand_plan.c), one replica at a
 * time from the highest ordinal:
 *
 *   (none) -> Expanding: patch each PVC of replica k, wait for its
 *             capacity; a PVC that reports FileSystemResizePending gets its
 *             pod restarted (recorded first, then deleted), Ready before
 *             the next replica
 *          -> Saving: the StatefulSet is saved in ConfigMap <sts>-sts-backup
 *          -> Recreating: orphan-delete the StatefulSet (UID precondition),
 *             create it again from the saved copy with the new sizes
 *          -> (Modifying: each claim's volumeAttributesClassName, when the
 *             desired templates change it: resize_modify_plan.c)
 *          -> Adopting: the new StatefulSet owns the pods; the backup goes
 *          -> (none), or Failed when the volume driver refused: then the
 *             claims to lower are recorded ("lowering"), each claim's
 *             request is lowered back to its capacity, one patch a step,
 *             where the cluster allows it (KEP-1790), and the outcome is
 *             recorded ("lowered") and reported.
 *
 * The copy cycle (resize_copy_plan.c: Copying, batch by batch through the
 * stages Prepare .. Ready, then Cleaning) moves the data of one batch of
 * replicas at a time (rolling: one replica, highest ordinal first; offline:
 * all of them) to new volumes and puts each new volume under the original
 * claim name by PV rebinding (resize_swap.c); see there.
 *
 * Each step is one struct action (runtime/action.h) named as the crash
 * tests know it: "SetState", "PatchPVC", "DeletePod", "Save",
 * "OrphanDelete", "Recreate", "DeleteBackup", "Finish", "LowerRequest",
 * and the copy cycle's ("CreateNewClaim", "StopPod", "CreateCopyJob"...).
 * The controller adds its own around the re-create, where a seal moves
 * from one object to the next (resize_trust.h): "ResealBackup",
 * "ResealState", "OrphanDeleteUnconfirmed".
 */
#ifndef SOP_RESIZE_PLAN_H
#define SOP_RESIZE_PLAN_H

#include <jansson.h>

#include "controllers/contract.h"
#include "runtime/action.h"

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
	/* {claim: the API server's message} of LowerRequest (or RevertAttributesClass) patches refused since
	 * the last SetState, or NULL */
	const json_t *lower_refusals;
};

/*
 * Decides the next step into a, which it initialises (release what a held
 * before). in is borrowed; now_ms (ms since the epoch) dates what the
 * state records.
 */
void resize_plan(const struct resize_inputs *in, long long now_ms, struct action *a);

/*
 * The StatefulSet as saved: the whole object but status and the metadata
 * the server sets (uid, resourceVersion, generation, creationTimestamp,
 * deletionTimestamp...). managedFields are kept: the re-created set gets
 * them back, so the tools that applied it (helm, Argo CD, Flux) still own
 * their fields and their next server-side apply does not conflict with the
 * operator's create. New reference.
 */
json_t *resize_saved_copy(const json_t *sts);

/*
 * The saved copy with each target template's storage request set to its
 * new size (state.targets) and, for a class change, its storageClassName
 * (state.classes). When the state carries desired templates
 * (state.templates), the templates are those (resize_templates_merged),
 * and the desired-templates annotation goes if it equals them (a newer one
 * stays for the next resize). New reference.
 */
json_t *resize_with_new_sizes(const json_t *saved, const json_t *state);

#endif
