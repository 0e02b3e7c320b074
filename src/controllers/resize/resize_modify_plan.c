/*
 * Modifying: a claim's volumeAttributesClassName (Kubernetes 1.34 GA,
 * KEP-3751), asked by the desired templates. Part of the in-place cycle,
 * after Expanding and before Saving: the driver changes the volume's
 * attributes (IOPS, throughput) while it is in use, so no pod restarts and
 * no copy. One claim per step, highest ordinal first; each one's
 * status.currentVolumeAttributesClassName must show the new class before
 * the next is touched, so an infeasible class stops at the first claim.
 *
 * An Infeasible modifyVolumeStatus fails the resize like a failed
 * expansion: Failed, with the claim to put back recorded
 * ("attributesRevert": {"claim", "to"}), then one patch of the claim back to
 * the class it has (the API allows that: it cancels the modification), and
 * the outcome recorded and reported.
 */
#include "controllers/resize/resize_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "util/xalloc.h"

json_t *modify_targets(const json_t *sts, const json_t *desired)
{
	json_t *out = json_object();
	size_t i;
	json_t *d;
	json_array_foreach(desired, i, d) {
		const char *name = kube_obj_str(d, "metadata.name");
		const char *vac = kube_obj_str(d, "spec.volumeAttributesClassName");
		const json_t *stored = resize_template(sts, name);
		/* A template added gets its class from the template; an omitted class is no change. */
		if (stored && vac && *vac && !streq(vac, kube_obj_str(stored, "spec.volumeAttributesClassName")))
			json_object_set_new(out, name, json_string(vac));
	}
	return out;
}

/* The next step for claim pvc (wanting vac), or false when it has vac already. */
static bool modify_claim(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
			 const json_t *pvc, const char *vac, long long done, long long replicas, struct action *a)
{
	const char *name = kube_obj_str(pvc, "metadata.name");
	const char *current = kube_obj_str(pvc, "status.currentVolumeAttributesClassName");
	if (streq(current, vac))
		return false;
	const char *modify = kube_obj_str(pvc, "status.modifyVolumeStatus.status");
	if (!streq(kube_obj_str(pvc, "spec.volumeAttributesClassName"), vac)) {
		if (!streq(kube_obj_str(pvc, "status.phase"), "Bound")) {
			action_status(a, "Modifying %lld/%lld: waiting for %s to be Bound", done + 1, replicas, name);
			action_wait(a, POLL_MS);
			return true;
		}
		action_patch(a, "PatchAttributesClass", &KUBE_PVCS, name,
			     json_pack("{s:{s:s}}", "spec", "volumeAttributesClassName", vac));
		action_patch_precondition(a, NULL, kube_obj_str(pvc, "metadata.uid"));
		action_event(a, "Normal", "ModifyingVolume", "requesting VolumeAttributesClass %s for %s", vac, name);
		action_status(a, "Modifying %lld/%lld: %s", done + 1, replicas, name);
		return true;
	}
	if (streq(modify, "Infeasible")) {
		json_t *n = resize_state_next(st, now_ms, RESIZE_PHASE_FAILED);
		json_object_set_new(n, "message", json_sprintf("%s: VolumeAttributesClass %s is Infeasible", name, vac));
		json_object_set_new(n, "attributesRevert",
				    json_pack("{s:s, s:s?}", "claim", name, "to", current));
		plan_set_state(in, a, n);
		action_event(a, "Warning", "ResizeFailed",
			     "changing %s to VolumeAttributesClass %s failed: the volume driver reports it Infeasible "
			     "(modifyVolumeStatus %s); the claim is put back to %s",
			     name, vac, modify, current ? current : "no class");
		action_count(a, "stateful_operator_resizes_failed_total", 1);
		action_status(a, "Failed: %s: VolumeAttributesClass %s is Infeasible", name, vac);
		return true;
	}
	action_status(a, "Modifying %lld/%lld: %s (waiting for the volume driver%s%s)", done + 1, replicas, name,
		      modify ? ": " : "", modify ? modify : "");
	action_wait(a, POLL_MS);
	return true;
}

void expand_modifying(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		      struct action *a)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *name = kube_obj_str(in->sts, "metadata.name");
	long long start, replicas = plan_replicas(in->sts, &start);
	long long done = 0;
	for (long long ord = start + replicas - 1; ord >= start; ord--, done++) {
		const char *tmpl;
		json_t *vac;
		json_object_foreach((json_t *)st->attributes_classes, tmpl, vac) {
			char *claim = resize_claim_name(tmpl, name, ord);
			const json_t *pvc = kube_list_find(in->pvcs, ns, claim);
			free(claim);
			if (pvc && json_is_string(vac) &&
			    modify_claim(in, now_ms, st, pvc, json_string_value(vac), done, replicas, a))
				return;
		}
	}
	plan_set_state(in, a, resize_state_next(st, now_ms, RESIZE_PHASE_SAVING));
	char *list = json_dumps(st->attributes_classes, JSON_COMPACT | JSON_SORT_KEYS);
	action_event(a, "Normal", "VolumesModified", "every volume has its new VolumeAttributesClass (%s); updating "
						     "the StatefulSet",
		     list);
	free(list);
	action_status(a, "Saving the StatefulSet");
}

bool modify_revert(const struct resize_inputs *in, const struct resize_state *st, struct action *a)
{
	const json_t *rv = json_object_get(st->json, "attributesRevert");
	const char *claim = kube_obj_str(rv, "claim");
	if (!claim || json_object_get(rv, "outcome"))
		return false;
	const char *to = kube_obj_str(rv, "to");
	const json_t *pvc = kube_list_find(in->pvcs, kube_obj_str(in->sts, "metadata.namespace"), claim);
	const char *refused = json_string_value(json_object_get(in->lower_refusals, claim));
	char *outcome = NULL;
	if (pvc && !refused && !streq(kube_obj_str(pvc, "spec.volumeAttributesClassName"), to) &&
	    (to || kube_obj_str(pvc, "spec.volumeAttributesClassName"))) {
		action_patch(a, "RevertAttributesClass", &KUBE_PVCS, claim,
			     json_pack("{s:{s:o}}", "spec", "volumeAttributesClassName", to ? json_string(to) : json_null()));
		action_patch_precondition(a, NULL, kube_obj_str(pvc, "metadata.uid"));
		action_status(a, "Failed: %s; putting %s back to %s", str_or(st->message, "modification failed"), claim,
			      str_or(to, "no class"));
		return true;
	}
	json_t *n = json_deep_copy(st->json);
	if (refused)
		outcome = xasprintf("not put back to %s: %s", str_or(to, "no class"), refused);
	else
		outcome = xasprintf(pvc ? "put back to %s" : "claim gone; was to go back to %s", str_or(to, "no class"));
	json_object_set_new(json_object_get(n, "attributesRevert"), "outcome", json_string(outcome));
	plan_set_state(in, a, n);
	action_event(a, refused || !pvc ? "Warning" : "Normal",
		     refused || !pvc ? "AttributesClassNotReverted" : "AttributesClassReverted",
		     "after the infeasible VolumeAttributesClass change, %s: %s", claim, outcome);
	action_status(a, "Failed: %s", str_or(st->message, "modification failed"));
	free(outcome);
	return true;
}
