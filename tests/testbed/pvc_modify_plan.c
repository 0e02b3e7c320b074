#include "pvc_modify_plan.h"

#include <stdio.h>
#include <string.h>

#include "claim_status.h"
#include "client/kube_object.h"

#define FAIL_MESSAGE "testbed: simulated ModifyVolume failure (parameter " MODIFY_FAIL_PARAMETER ")"

const char *const modify_step_names[] = {"none",	"pending",    "start", "wait-delay",
					 "finish", "infeasible", "cancel"};

/* An absent class and "" mean the same: no class (the external-resizer derefs both to ""). */
static const char *class_or_empty(const char *s)
{
	return s ? s : "";
}

static const char *spec_class(const json_t *pvc)
{
	return class_or_empty(kube_obj_str(pvc, "spec.volumeAttributesClassName"));
}

static const char *current_class(const json_t *pvc)
{
	return class_or_empty(kube_obj_str(pvc, "status.currentVolumeAttributesClassName"));
}

/* status.modifyVolumeStatus, or NULL. */
static const json_t *modify_status_of(const json_t *pvc)
{
	const json_t *s = json_object_get(json_object_get(pvc, "status"), "modifyVolumeStatus");
	return json_is_object(s) ? s : NULL;
}

static bool status_is(const json_t *st, const char *want)
{
	const char *s = json_string_value(json_object_get(st, "status"));
	return s && !strcmp(s, want);
}

static const char *status_target(const json_t *st)
{
	return class_or_empty(json_string_value(json_object_get(st, "targetVolumeAttributesClassName")));
}

/* The claim has a condition of type (any status): what a cancel must remove. */
static bool has_condition(const json_t *pvc, const char *type)
{
	const json_t *conds = json_object_get(json_object_get(pvc, "status"), "conditions");
	size_t i;
	const json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		if (t && !strcmp(t, type))
			return true;
	}
	return false;
}

const char *modify_target_name(const json_t *pvc)
{
	const char *spec = spec_class(pvc);
	if (*spec)
		return spec;
	const json_t *st = modify_status_of(pvc);
	if (st && status_is(st, "InProgress") && *status_target(st))
		return status_target(st);
	return NULL;
}

bool modify_needed(const json_t *pvc)
{
	return modify_status_of(pvc) || strcmp(spec_class(pvc), current_class(pvc)) != 0 ||
	       has_condition(pvc, MODIFY_CONDITION_MODIFYING);
}

static bool asks_to_fail(const json_t *vac)
{
	const json_t *params = json_object_get(vac, "parameters");
	const char *v = json_string_value(json_object_get(params, MODIFY_FAIL_PARAMETER));
	return v && !strcmp(v, "true");
}

enum modify_step modify_plan(const json_t *pvc, const json_t *vac, bool delay_due)
{
	const char *spec = spec_class(pvc);
	const json_t *st = modify_status_of(pvc);
	if (!st && !strcmp(spec, current_class(pvc)))
		return MODIFY_NONE;
	bool in_progress = st && status_is(st, "InProgress");
	/* The class was cleared (allowed while none was ever applied): stop, keep the last result. */
	if (!*spec && !in_progress)
		return has_condition(pvc, MODIFY_CONDITION_MODIFYING) ? MODIFY_CANCEL : MODIFY_NONE;
	const char *target = modify_target_name(pvc);
	if (!vac)
		return st && status_is(st, "Pending") ? MODIFY_NONE : MODIFY_PENDING;
	/* A failure is final for its class; a new class is a new attempt. */
	if (st && status_is(st, "Infeasible") && !strcmp(status_target(st), target))
		return MODIFY_NONE;
	if (!(in_progress && !strcmp(status_target(st), target)))
		return MODIFY_START;
	if (!delay_due)
		return MODIFY_WAIT_DELAY;
	return asks_to_fail(vac) ? MODIFY_INFEASIBLE : MODIFY_FINISH;
}

static json_t *condition(const char *type, const char *reason, const char *message, const char *now)
{
	json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", "True", "lastProbeTime", now,
			      "lastTransitionTime", now, "message", message);
	if (reason)
		json_object_set_new(c, "reason", json_string(reason));
	return c;
}

/*
 * The claim's conditions without ModifyingVolume (and ModifyVolumeError
 * unless keep_error), plus those of step.
 */
static json_t *conditions_for(const json_t *pvc, enum modify_step step, const char *target, const char *now,
			      bool keep_error)
{
	static const char *const modify_conditions[] = {MODIFY_CONDITION_MODIFYING, MODIFY_CONDITION_ERROR};
	json_t *out = claim_conditions_without(pvc, modify_conditions, keep_error ? 1 : 2);
	char msg[512];
	if (step == MODIFY_START) {
		snprintf(msg, sizeof(msg), "Modifying volume to \"%s\" is in progress.", target);
		json_array_append_new(out, condition(MODIFY_CONDITION_MODIFYING, NULL, msg, now));
	} else if (step == MODIFY_INFEASIBLE) {
		snprintf(msg, sizeof(msg), "Modifying volume to \"%s\" failed. Waiting for retry.", target);
		json_array_append_new(out, condition(MODIFY_CONDITION_MODIFYING, NULL, msg, now));
		json_array_append_new(out, condition(MODIFY_CONDITION_ERROR, "InvalidArgument", FAIL_MESSAGE, now));
	}
	return claim_conditions_or_null(out);
}

json_t *modify_status(const json_t *pvc, enum modify_step step, const char *target, const char *now)
{
	switch (step) {
	case MODIFY_NONE:
	case MODIFY_WAIT_DELAY:
		return NULL;
	case MODIFY_PENDING:
		/* Conditions untouched; the merge keeps any earlier target. */
		return json_pack("{s:{s:s}}", "modifyVolumeStatus", "status", "Pending");
	case MODIFY_START:
		/* Like the external-resizer, a new attempt leaves the last one's error until it ends. */
		return json_pack("{s:{s:s, s:s}, s:o}", "modifyVolumeStatus", "status", "InProgress",
				 "targetVolumeAttributesClassName", target, "conditions",
				 conditions_for(pvc, step, target, now, true));
	case MODIFY_INFEASIBLE:
		return json_pack("{s:{s:s, s:s}, s:o}", "modifyVolumeStatus", "status", "Infeasible",
				 "targetVolumeAttributesClassName", target, "conditions",
				 conditions_for(pvc, step, target, now, false));
	case MODIFY_FINISH:
		return json_pack("{s:s, s:n, s:o}", "currentVolumeAttributesClassName", target, "modifyVolumeStatus",
				 "conditions", conditions_for(pvc, step, target, now, false));
	case MODIFY_CANCEL:
		/* The last attempt's result (status, ModifyVolumeError) stays. */
		return json_pack("{s:o}", "conditions", conditions_for(pvc, step, target, now, true));
	}
	return NULL;
}

bool modify_pv_takes_class(const json_t *pv)
{
	return json_is_object(json_object_get(json_object_get(pv, "spec"), "csi"));
}

const char *modify_provisioned_class(const json_t *pv, const json_t *pvc)
{
	const char *ref_uid = kube_obj_str(pv, "spec.claimRef.uid");
	const char *uid = kube_obj_str(pvc, "metadata.uid");
	const char *volume = kube_obj_str(pvc, "spec.volumeName");
	const char *wanted = kube_obj_str(pvc, "spec.volumeAttributesClassName");
	const char *has = class_or_empty(kube_obj_str(pv, "spec.volumeAttributesClassName"));
	if (!modify_pv_takes_class(pv) || !kube_obj_annotation(pv, "pv.kubernetes.io/provisioned-by") || !ref_uid ||
	    !uid || strcmp(ref_uid, uid))
		return NULL;
	if ((volume && *volume) || !wanted || !*wanted || *has)
		return NULL;
	return wanted;
}
