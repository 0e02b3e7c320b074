/*
 * After a re-create that added a volumeClaimTemplate: the running pods were
 * made without its volume, and a pod's volumes cannot change. The
 * StatefulSet controller creates their claims but fails to update the pods,
 * and stalls every pod after the first such one (a deleted pod is not made
 * again). So each pod is restarted, lowest ordinal first (the one the
 * controller is stuck on), one at a time, the others Ready: each comes back
 * with every template's volume. The pod is recorded in the state before it
 * is deleted, so a crash never restarts one twice.
 */
#include "controllers/resize/resize_internal.h"

#include <stdlib.h>

#include "client/kube_object.h"

/* pod has a volume of claim claim. */
static bool pod_mounts_claim(const json_t *pod, const char *claim)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
		if (streq(kube_obj_str(v, "persistentVolumeClaim.claimName"), claim))
			return true;
	return false;
}

const char *resize_added_template_missing(const json_t *sts, const json_t *saved, const json_t *pod,
					  long long ordinal)
{
	const char *set = kube_obj_str(sts, "metadata.name");
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		if (!tmpl || resize_template(saved, tmpl))
			continue; /* the saved set had it: its pods have it */
		char *claim = resize_claim_name(tmpl, set, ordinal);
		bool mounted = pod_mounts_claim(pod, claim);
		free(claim);
		if (!mounted)
			return tmpl;
	}
	return NULL;
}

/* Waiting on the recorded restart; false once its pod is back with the new volumes (the record cleared). */
static bool restart_in_flight(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
			      const json_t *saved, struct action *a)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *pod_name = kube_obj_str(st->restart, "pod");
	const json_t *pod = kube_list_find(in->pods, ns, pod_name);
	long long ordinal = json_integer_value(json_object_get(st->restart, "ordinal"));
	if (pod && streq(kube_obj_str(pod, "metadata.uid"), kube_obj_str(st->restart, "uid"))) {
		if (plan_delete_or_wait(a, "DeletePod", &KUBE_PODS, pod))
			action_status(a, "Restarting %s to mount the added volumes", pod_name);
		return true;
	}
	if (!pod || !kube_pod_ready(pod) || resize_added_template_missing(in->sts, saved, pod, ordinal)) {
		action_status(a, "Waiting for %s to come back Ready with the added volumes", pod_name);
		action_wait(a, POLL_MS);
		return true;
	}
	json_t *n = resize_state_next(st, now_ms, RESIZE_PHASE_ADOPTING);
	json_object_del(n, "restart");
	plan_set_state(in, a, n);
	action_status(a, "%s has the added volumes", pod_name);
	return true;
}

bool resize_restart_for_added_templates(const struct resize_inputs *in, long long now_ms,
					const struct resize_state *st, struct action *a)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	if (!saved)
		return false;
	bool acted = false;
	char *blocker = NULL;
	if (kube_obj_str(st->restart, "pod")) {
		acted = restart_in_flight(in, now_ms, st, saved, a);
		goto out;
	}
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *set = kube_obj_str(in->sts, "metadata.name");
	long long start, replicas = plan_replicas(in->sts, &start);
	long long candidate = -1;
	const char *tmpl = NULL;
	for (long long ord = start; ord < start + replicas; ord++) {
		char *name = resize_pod_name(set, ord);
		const json_t *pod = kube_list_find(in->pods, ns, name);
		const char *missing = pod ? resize_added_template_missing(in->sts, saved, pod, ord) : NULL;
		if (missing && candidate < 0) {
			candidate = ord;
			tmpl = missing;
		} else if (!blocker && (pod ? !kube_pod_ready(pod) : candidate < 0)) {
			/* Down, and not a pod the stall behind the candidate keeps from being made. */
			blocker = name;
			name = NULL;
		}
		free(name);
	}
	if (candidate < 0)
		goto out;
	acted = true;
	char *pod_name = resize_pod_name(set, candidate);
	const json_t *pod = kube_list_find(in->pods, ns, pod_name);
	if (blocker || !kube_pod_ready(pod)) {
		action_status(a, "Waiting for %s to be Ready before restarting %s for volume %s",
			      blocker ? blocker : pod_name, pod_name, tmpl);
		action_wait(a, POLL_MS);
	} else {
		json_t *n = resize_state_next(st, now_ms, RESIZE_PHASE_ADOPTING);
		json_object_set_new(n, "restart", json_pack("{s:s, s:s, s:I}", "pod", pod_name, "uid",
							    kube_obj_str(pod, "metadata.uid"), "ordinal",
							    (json_int_t)candidate));
		plan_set_state(in, a, n);
		action_event(a, "Normal", "RestartingPod",
			     "restarting %s: it was created before volumeClaimTemplate %s was added, and gets its "
			     "volume when created again", pod_name, tmpl);
		action_status(a, "Restarting %s to mount volume %s", pod_name, tmpl);
	}
	free(pod_name);
out:
	free(blocker); /* a pod down with nothing to restart: no wait for it either */
	json_decref(saved);
	return acted;
}
