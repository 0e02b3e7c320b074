#include "controllers/resize/resize_internal.h"

#include <stdint.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "util/duration.h"
#include "util/xalloc.h"

/* A re-created claim not Bound after this long gets touched, so the PV controller looks again. */
#define BIND_NUDGE_AFTER_S 3

/* The claim is on pv_name but not Bound yet: touch it when the PV controller seems to have missed it. */
static void wait_for_binding(const json_t *pvc, const json_t *pv, const char *x, const char *pv_name,
			     long long now_ms, struct action *a)
{
	/*
	 * The PV controller may have looked while its cache still showed the
	 * PV's old binding (FailedBinding); it would look again only at its
	 * next resync, up to 15 s later. Touching the claim makes it look now.
	 */
	const char *touched = kube_obj_annotation(pvc, ANNOTATION_BIND_NUDGE);
	int64_t since = rfc3339_seconds(touched ? touched : kube_obj_str(pvc, "metadata.creationTimestamp"));
	bool late = since >= 0 && now_ms / 1000 >= since + BIND_NUDGE_AFTER_S;
	if (late && streq(kube_obj_str(pv, "spec.claimRef.name"), x)) {
		action_patch(a, "NudgeBinding", &KUBE_PVCS, x,
			     json_pack("{s:{s:{s:o}}}", "metadata", "annotations", ANNOTATION_BIND_NUDGE,
				       resize_state_time(now_ms)));
		/* The claim just made, not one made since under its name (and a request safe to resend). */
		action_patch_precondition(a, NULL, kube_obj_str(pvc, "metadata.uid"));
		return;
	}
	action_status(a, "Waiting for %s to bind to %s", x, pv_name);
	action_wait(a, POLL_MS);
}

/*
 * Invariant 1: every PV involved is Retain before any claim is deleted.
 * The same patch marks it taken for this set: while the PV is still bound
 * to the set's live claim, which the controller checks, so every later
 * write can be checked against the mark. True when a patch was chosen.
 */
static bool retain(const json_t *const holders[2], const char *ns, const char *sts, struct action *a)
{
	char *owner = xasprintf("%s/%s", ns, sts);
	bool acted = false;
	for (int i = 0; i < 2 && !acted; i++) {
		const json_t *h = holders[i];
		const char *taken = kube_obj_annotation(h, ANNOTATION_TAKEN_FOR);
		if (h && (!streq(plan_reclaim_policy(h), "Retain") || !streq(taken, owner))) {
			/* A policy recorded earlier stays: the PV may be Retained by us already. */
			const char *orig = str_or(plan_original_policy(h), str_or(plan_reclaim_policy(h), "Delete"));
			plan_patch_pv(a, "RetainVolume", h,
				      json_pack("{s:{s:{s:s, s:s}}, s:{s:s}}", "metadata", "annotations",
						ANNOTATION_RECLAIM_POLICY, orig, ANNOTATION_TAKEN_FOR, owner, "spec",
						"persistentVolumeReclaimPolicy", "Retain"));
			acted = true;
		}
	}
	free(owner);
	return acted;
}

int resize_bind_claim(const struct resize_inputs *in, const char *ns, const char *sts, long long now_ms,
		      const json_t *vol, const char *pv_name, const char *size, struct action *a, char **why)
{
	const char *x = kube_obj_str(vol, "claim");
	const json_t *pv = kube_list_find(in->pvs, NULL, pv_name);
	const json_t *pvc = kube_list_find(in->pvcs, ns, x);
	if (!pv) {
		*why = xasprintf("PersistentVolume %s, which should hold %s, does not exist", pv_name, x);
		return -1;
	}
	if (pvc && streq(kube_obj_str(pvc, "spec.volumeName"), pv_name)) {
		if (!streq(kube_obj_str(pvc, "status.phase"), "Bound")) {
			wait_for_binding(pvc, pv, x, pv_name, now_ms, a);
			return 0;
		}
		/* Bound where it belongs: its own policy back, and no mark left for anyone to trust later. */
		const char *orig = plan_original_policy(pv);
		if ((orig && !streq(plan_reclaim_policy(pv), orig)) || kube_obj_annotation(pv, ANNOTATION_TAKEN_FOR)) {
			plan_restore_policy(a, "RestoreReclaimPolicy", pv,
					    str_or(orig, str_or(plan_reclaim_policy(pv), "Delete")));
			return 0;
		}
		return 1;
	}
	const json_t *holders[2] = {pv, pvc ? kube_list_find(in->pvs, NULL, kube_obj_str(pvc, "spec.volumeName")) : NULL};
	if (retain(holders, ns, sts, a))
		return 0;
	/* Another claim holds the PV (the new claim of a copy): it goes first. */
	const char *holder = kube_obj_str(pv, "spec.claimRef.name");
	const json_t *other = holder && !streq(holder, x) && streq(kube_obj_str(pv, "spec.claimRef.namespace"), ns)
				      ? kube_list_find(in->pvcs, ns, holder)
				      : NULL;
	if (other) {
		if (!kube_obj_label(other, LABEL_COPY_OF)) {
			*why = xasprintf("PersistentVolume %s is held by claim %s, which the operator did not create; "
					 "it will not delete it",
					 pv_name, holder);
			return -1;
		}
		plan_delete_or_wait(a, "DeleteNewClaim", &KUBE_PVCS, other);
		return 0;
	}
	if (pvc) {
		if (kube_obj_terminating(pvc)) {
			action_status(a, "Waiting for claim %s to go", x);
			action_wait(a, POLL_MS);
			return 0;
		}
		plan_delete(a, "DeleteClaim", &KUBE_PVCS, pvc);
		action_event(a, "Normal", "MovingClaim", "deleting claim %s (its volume %s is Retained) to bind %s to %s",
			     x, str_or(kube_obj_str(pvc, "spec.volumeName"), "none"), x, pv_name);
		return 0;
	}
	/*
	 * The PV names claim x with a UID other than the original claim's: the
	 * claim created here is already bound, only the claim cache has not
	 * seen it yet. Pre-binding now would undo that binding.
	 */
	const char *ref_uid = kube_obj_str(pv, "spec.claimRef.uid");
	const char *orig_uid = kube_obj_str(vol, "uid");
	if (streq(kube_obj_str(pv, "spec.claimRef.name"), x) && ref_uid && orig_uid && *orig_uid &&
	    !streq(ref_uid, orig_uid)) {
		action_wait(a, POLL_MS);
		return 0;
	}
	/* Pre-bound to the name (no uid), so no other claim can take the PV meanwhile. */
	if (!streq(kube_obj_str(pv, "spec.claimRef.name"), x) || ref_uid) {
		plan_patch_pv(a, "PrebindVolume", pv,
			      json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:n, s:n}}}", "spec", "claimRef", "apiVersion", "v1",
					"kind", "PersistentVolumeClaim", "namespace", ns, "name", x, "uid",
					"resourceVersion"));
		return 0;
	}
	action_create(a, "CreateClaim", &KUBE_PVCS, copy_rebound_claim(ns, vol, pv, size));
	a->answers = ACTION_OK_409; /* created before a crash: the planner checks what is there */
	action_event(a, "Normal", "ClaimRebound", "re-created claim %s on PersistentVolume %s", x, pv_name);
	return 0;
}
