/*
 * The test bed's side of a volumeAttributesClass change, as the CSI
 * external-resizer's modify controller (pkg/modifycontroller) plays it:
 * a Bound claim whose spec.volumeAttributesClassName differs from
 * status.currentVolumeAttributesClassName (or that carries a
 * status.modifyVolumeStatus) is brought one step on per call:
 *
 *   class missing   status.modifyVolumeStatus.status Pending (conditions kept)
 *   start           modifyVolumeStatus {status: InProgress,
 *                   targetVolumeAttributesClassName: spec's class}, condition
 *                   ModifyingVolume (a ModifyVolumeError of an earlier attempt
 *                   stays until this one ends)
 *   finish          the PV's spec.volumeAttributesClassName, then the claim's
 *                   status.currentVolumeAttributesClassName = the target,
 *                   modifyVolumeStatus removed, ModifyingVolume and
 *                   ModifyVolumeError removed
 *   infeasible      the class's parameters hold MODIFY_FAIL_PARAMETER "true"
 *                   (what a driver's InvalidArgument answer gives):
 *                   modifyVolumeStatus.status Infeasible, ModifyingVolume
 *                   "failed" and ModifyVolumeError (reason InvalidArgument);
 *                   the current class stays
 *   cancel          spec's class cleared while no modification is in
 *                   progress: ModifyingVolume removed, the status kept
 *
 * And the external-provisioner's part: a claim created with a class binds
 * only to a PV of that class (the PV controller's FindMatchingVolume skips
 * any other, even one pre-bound to the claim), and the test bed's
 * provisioners (kube-controller-manager's host-path one, the local one)
 * leave the PV without it: modify_provisioned_class tells when to give it.
 *
 * Pure (no I/O): the claim and the class in, a step out. Test-bed code,
 * linked into testbed-pvc-resizer and its unit test.
 */
#ifndef SOP_TESTBED_PVC_MODIFY_PLAN_H
#define SOP_TESTBED_PVC_MODIFY_PLAN_H

#include <stdbool.h>

#include <jansson.h>

/* A VolumeAttributesClass parameter: "true" makes every modification to that class Infeasible. */
#define MODIFY_FAIL_PARAMETER "testbed.stateful-operator.io/modify-fail"

#define MODIFY_CONDITION_MODIFYING "ModifyingVolume"
#define MODIFY_CONDITION_ERROR "ModifyVolumeError"

enum modify_step {
	MODIFY_NONE,       /* at the asked class, nothing asked, or failed/pending already */
	MODIFY_PENDING,    /* the asked class does not exist */
	MODIFY_START,      /* mark InProgress for the target */
	MODIFY_WAIT_DELAY, /* in progress; the delay has not passed */
	MODIFY_FINISH,     /* PV, then claim: the target is the current class */
	MODIFY_INFEASIBLE, /* the target class asks to fail */
	MODIFY_CANCEL,     /* the class was cleared: drop ModifyingVolume */
};

extern const char *const modify_step_names[];

/*
 * The VolumeAttributesClass a step for pvc needs (borrowed from pvc): the
 * spec's class, or, when the spec has none and a modification is in
 * progress, the status's target (the external-resizer finishes that one).
 * NULL when no class is needed.
 */
const char *modify_target_name(const json_t *pvc);

/* pvc (Bound) may need a step: the informer's filter. */
bool modify_needed(const json_t *pvc);

/*
 * The next step for the Bound claim pvc. vac: the class modify_target_name
 * names, NULL when it does not exist. delay_due: the delay of the
 * modification in progress has passed.
 */
enum modify_step modify_plan(const json_t *pvc, const json_t *vac, bool delay_due);

/*
 * The status the claim pvc gets for step, for a merge patch of its status
 * subresource (a new object), or NULL for the steps that write no status
 * (MODIFY_NONE, MODIFY_WAIT_DELAY). target: modify_target_name's class;
 * now: the time of new conditions (RFC 3339). Conditions the steps do not
 * own are kept; an empty list is json null (the merge patch then removes
 * it).
 */
json_t *modify_status(const json_t *pvc, enum modify_step step, const char *target, const char *now);

/*
 * The API server takes spec.volumeAttributesClassName on CSI volumes only
 * ("spec.csi: Required value"); the test bed's hostPath and local volumes
 * keep the class on their claims alone, as the claim's status records it.
 */
bool modify_pv_takes_class(const json_t *pv);

/*
 * The class the PV pv should get for the claim pvc (borrowed from pvc), or
 * NULL: pv was provisioned (pv.kubernetes.io/provisioned-by) for pvc
 * (claimRef.uid), the claim is not bound yet and asks for a class, and the
 * PV is a CSI volume with none (a class someone chose is never rewritten).
 */
const char *modify_provisioned_class(const json_t *pv, const json_t *pvc);

#endif
