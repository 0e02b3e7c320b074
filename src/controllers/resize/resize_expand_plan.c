#include "controllers/resize/resize_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

void expand_start(const struct resize_inputs *in, long long now_ms, const json_t *targets, struct action *a)
{
	json_t *now = resize_state_time(now_ms);
	json_t *st = json_pack("{s:s, s:O, s:s, s:O, s:O}", "strategy", "expand", "targets", targets,
			       "statefulSetUID", kube_obj_str(in->sts, "metadata.uid"), "started", now, "updated",
			       now);
	json_decref(now);
	resize_state_set_phase(st, RESIZE_PHASE_EXPANDING);
	plan_set_state(in, a, st);
	char *list = json_dumps(targets, JSON_COMPACT);
	action_event(a, "Normal", "ResizeStarted", "resizing volumes in place: %s", list);
	action_count(a, "stateful_operator_resizes_started_total", 1);
	action_status(a, "Expanding");
	free(list);
}

/* ---- Expanding: replica by replica, highest ordinal first ---- */

/* The driver's message when expansion of pvc failed, else NULL. Borrowed. */
static const char *expansion_failure(const json_t *pvc)
{
	const char *msg = NULL;
	const char *alloc = kube_obj_str(pvc, "status.allocatedResourceStatuses.storage");
	if (kube_obj_condition(pvc, "ControllerResizeError", &msg) || kube_obj_condition(pvc, "NodeResizeError", &msg))
		return msg ? msg : "the volume driver reported an error";
	return alloc && strstr(alloc, "Infeasible") ? alloc : NULL;
}

/*
 * The next step for claim pvc_name (wanting size) of replica pod_name, or
 * false when that claim is done. done/replicas: where the replica stands.
 */
static bool expand_claim(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
			 const char *pvc_name, const char *size, const char *pod_name, long long done,
			 long long replicas, struct action *a)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const json_t *pvc = kube_list_find(in->pvcs, ns, pvc_name);
	const json_t *pod = kube_list_find(in->pods, ns, pod_name);
	struct quantity want;
	if (!pvc || quantity_parse(size, &want, NULL) < 0)
		return false; /* this replica has no such claim (yet) */
	if (!streq(kube_obj_str(pvc, "status.phase"), "Bound")) {
		/* Only a bound claim's request may change. */
		action_status(a, "Expanding %lld/%lld: waiting for %s to be Bound", done + 1, replicas, pvc_name);
		action_wait(a, POLL_MS);
		return true;
	}
	if (plan_cmp_size(kube_obj_str(pvc, "status.capacity.storage"), &want) >= 0)
		return false; /* done */
	/* The volume driver's words (a condition's message): one clean, bounded line wherever they are quoted. */
	char *failure = text_sanitize(expansion_failure(pvc), TEXT_QUOTE_MAX);
	if (failure) {
		plan_set_state(in, a, resize_state_next(st, now_ms, RESIZE_PHASE_FAILED));
		json_object_set_new(a->state, "message", json_sprintf("%s: %s", pvc_name, failure));
		action_event(a, "Warning", "ResizeFailed", "expanding %s to %s failed: %s", pvc_name, size, failure);
		action_count(a, "stateful_operator_resizes_failed_total", 1);
		action_status(a, "Failed: %s: %s", pvc_name, failure);
		free(failure);
		return true;
	}
	if (plan_cmp_size(kube_obj_str(pvc, "spec.resources.requests.storage"), &want) < 0) {
		action_patch(a, "PatchPVC", &KUBE_PVCS, pvc_name,
			     json_pack("{s:{s:{s:{s:s}}}}", "spec", "resources", "requests", "storage", size));
		/* The claim the planner saw, not one made since under its name (and a request safe to resend). */
		action_patch_precondition(a, NULL, kube_obj_str(pvc, "metadata.uid"));
		action_event(a, "Normal", "ResizingVolume", "requesting %s for %s", size, pvc_name);
		action_status(a, "Expanding %lld/%lld: %s", done + 1, replicas, pvc_name);
		return true;
	}
	if (!kube_obj_condition(pvc, "FileSystemResizePending", NULL)) {
		action_status(a, "Expanding %lld/%lld: %s (waiting for the volume driver)", done + 1, replicas,
			      pvc_name);
		action_wait(a, POLL_MS);
		return true;
	}
	/* The file system grows when a pod mounts the volume anew: restart the pod. */
	if (!streq(kube_obj_str(st->restart, "pod"), pod_name)) {
		if (!kube_pod_ready(pod)) {
			action_status(a, "Expanding %lld/%lld: waiting for pod %s", done + 1, replicas, pod_name);
			action_wait(a, POLL_MS);
			return true;
		}
		/* Recorded before the delete, so a crash never restarts a pod twice. */
		json_t *n = resize_state_next(st, now_ms, RESIZE_PHASE_EXPANDING);
		json_object_set_new(n, "restart", json_pack("{s:s, s:s}", "pod", pod_name, "uid",
							    kube_obj_str(pod, "metadata.uid")));
		plan_set_state(in, a, n);
		action_status(a, "Restarting %s to grow the file system of %s", pod_name, pvc_name);
		return true;
	}
	if (pod && streq(kube_obj_str(pod, "metadata.uid"), kube_obj_str(st->restart, "uid"))) {
		if (plan_delete_or_wait(a, "DeletePod", &KUBE_PODS, pod)) {
			action_event(a, "Normal", "RestartingPod", "restarting %s: %s reports FileSystemResizePending",
				     pod_name, pvc_name);
			action_status(a, "Restarting %s", pod_name);
		}
		return true;
	}
	action_status(a, "Waiting for %s to come back and finish the file system resize", pod_name);
	action_wait(a, POLL_MS);
	return true;
}

void expand_expanding(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		      struct action *a)
{
	const char *name = kube_obj_str(in->sts, "metadata.name");
	long long start, replicas = plan_replicas(in->sts, &start);
	long long done = 0;
	for (long long ord = start + replicas - 1; ord >= start; ord--, done++) {
		char *pod_name = resize_pod_name(name, ord);
		const char *tmpl;
		json_t *size;
		bool acted = false;
		json_object_foreach((json_t *)st->targets, tmpl, size) {
			char *pvc_name = resize_claim_name(tmpl, name, ord);
			acted = expand_claim(in, now_ms, st, pvc_name, json_string_value(size), pod_name, done, replicas,
					     a);
			free(pvc_name);
			if (acted)
				break;
		}
		/* A restarted pod must be Ready again before the next replica is touched. */
		const json_t *pod = kube_list_find(in->pods, kube_obj_str(in->sts, "metadata.namespace"), pod_name);
		if (!acted && streq(kube_obj_str(st->restart, "pod"), pod_name) && !kube_pod_ready(pod)) {
			action_status(a, "Waiting for %s to be Ready", pod_name);
			action_wait(a, POLL_MS);
			acted = true;
		}
		free(pod_name);
		if (acted)
			return;
	}
	/* The claims get the desired templates' labels and annotations before the re-create. */
	if (resize_claim_metadata_step(in, in->sts, st->json, a))
		return;
	bool modify = json_object_size(st->attributes_classes) > 0;
	plan_set_state(in, a, resize_state_next(st, now_ms, modify ? RESIZE_PHASE_MODIFYING : RESIZE_PHASE_SAVING));
	json_object_del(a->state, "restart");
	if (json_object_size(st->targets))
		action_event(a, "Normal", "VolumesResized", "every volume has its new size; %s",
			     modify ? "changing their VolumeAttributesClass" : "updating the StatefulSet");
	else
		action_event(a, "Normal", "ClaimsUpdated", "every claim has its template's labels and annotations; %s",
			     modify ? "changing their VolumeAttributesClass" : "updating the StatefulSet");
	action_status(a, modify ? "Modifying" : "Saving the StatefulSet");
}

/* ---- keeping the StatefulSet in step ---- */

void expand_saving(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		   struct action *a)
{
	if (plan_saved_for(in, kube_obj_str(in->sts, "metadata.uid")) && !plan_saved_is_stale(in)) {
		plan_set_state(in, a, resize_state_next(st, now_ms, RESIZE_PHASE_RECREATING));
		action_status(a, "Re-creating the StatefulSet");
	} else if (in->backup) {
		plan_delete_backup(in, a); /* a stale copy: make room for ours */
	} else {
		plan_save(a, resize_state_next(st, now_ms, RESIZE_PHASE_RECREATING));
		action_status(a, "Saving the StatefulSet");
	}
}

void expand_recreating(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		       struct action *a)
{
	if (!in->sts) {
		if (!plan_recreate(in, a, resize_state_next(st, now_ms, RESIZE_PHASE_ADOPTING), true, false))
			return;
		json_t *saved = plan_saved_statefulset(in->backup);
		char *removed = resize_templates_removed(in, saved, st->json);
		if (removed)
			action_event(a, "Normal", "VolumeClaimTemplateRemoved",
				     "re-created the StatefulSet from its saved copy with the new templates; %s", removed);
		else
			action_event(a, "Normal", "StatefulSetRecreated",
				     "re-created the StatefulSet from its saved copy with the new volume templates");
		free(removed);
		json_decref(saved);
		action_status(a, "Adopting the pods");
	} else if (kube_obj_terminating(in->sts)) {
		/* Orphan deletion under way: the garbage collector is releasing the pods. */
		action_status(a, "Re-creating the StatefulSet");
		action_wait(a, POLL_MS);
	} else if (streq(st->uid, kube_obj_str(in->sts, "metadata.uid")) && plan_saved_is_stale(in)) {
		plan_set_state(in, a, resize_state_next(st, now_ms, RESIZE_PHASE_SAVING));
		action_status(a, "Saving the StatefulSet again (it changed since it was saved)");
	} else if (streq(st->uid, kube_obj_str(in->sts, "metadata.uid"))) {
		plan_orphan_delete(in, a);
		action_event(a, "Normal", "OrphanDeleting",
			     "deleting the StatefulSet with propagationPolicy Orphan (its pods keep running) "
			     "to re-create it with the new volume sizes");
		action_status(a, "Re-creating the StatefulSet");
	}
}

void expand_adopting(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		     struct action *a)
{
	long long start, replicas = plan_replicas(in->sts, &start);
	char *pod_name = NULL;
	if (!plan_pods_adopted(in, kube_obj_str(in->sts, "metadata.namespace"), kube_obj_str(in->sts, "metadata.name"),
			       NULL, start, replicas, kube_obj_str(in->sts, "metadata.uid"), &pod_name)) {
		action_status(a, "Waiting for the new StatefulSet to adopt %s", pod_name);
		action_wait(a, POLL_MS);
	} else if (resize_restart_for_added_templates(in, now_ms, st, a)) {
		/* a template added: the pods restarted one at a time to mount it */
	} else if (in->backup) {
		plan_delete_backup(in, a);
	} else {
		plan_finish(in, a);
		action_event(a, "Normal", "ResizeCompleted", "volumes resized in place; the StatefulSet "
							     "carries the new sizes and owns its pods");
		action_count(a, "stateful_operator_resizes_completed_total", 1);
	}
	free(pod_name);
}

/* ---- Failed: the requests lowered back, one claim a step ---- */

static bool request_above_capacity(const json_t *pvc)
{
	const char *req = kube_obj_str(pvc, "spec.resources.requests.storage");
	const char *cap = kube_obj_str(pvc, "status.capacity.storage");
	struct quantity q_cap;
	return req && cap && quantity_parse(cap, &q_cap, NULL) == 0 && plan_cmp_size(req, &q_cap) > 0;
}

/* The set's claims of the target templates that request more than they have: {claim: "pending"}. New reference. */
static json_t *claims_to_lower(const struct resize_inputs *in, const struct resize_state *st)
{
	const char *name = kube_obj_str(in->sts, "metadata.name");
	json_t *pending = json_object();
	const char *tmpl;
	json_t *size;
	json_object_foreach((json_t *)st->targets, tmpl, size) {
		char *prefix = resize_claim_prefix(tmpl, name);
		size_t i;
		json_t *pvc;
		json_array_foreach(in->pvcs, i, pvc) {
			const char *pvc_name = kube_obj_str(pvc, "metadata.name");
			if (pvc_name && !strncmp(pvc_name, prefix, strlen(prefix)) && request_above_capacity(pvc))
				json_object_set_new(pending, pvc_name, json_string("pending"));
		}
		free(prefix);
	}
	return pending;
}

/*
 * After a failed expansion: ask each claim that still requests more than
 * it has for its capacity again (KEP-1790), and record what the cluster
 * said in the state (state.lowered: claim -> "lowered" or the refusal), so
 * the user sees it and it is not asked again. First the claims are
 * recorded ("lowering": claim -> "pending"), then one patch a step; a
 * refused patch (the controller remembers the answer: lower_refusals) is
 * recorded in its place. Kubernetes 1.34 refuses a request equal to the
 * capacity; the refusal is then the reported outcome.
 */
static void lower_requests(const struct resize_inputs *in, const struct resize_state *st, struct action *a)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	json_t *n = json_deep_copy(st->json);
	json_t *outcome = json_object();
	bool all_lowered = true;
	const char *claim;
	json_t *v;
	json_object_foreach((json_t *)st->lowering, claim, v) {
		const json_t *pvc = kube_list_find(in->pvcs, ns, claim);
		const char *refused = json_string_value(json_object_get(in->lower_refusals, claim));
		if (!streq(json_string_value(v), "pending")) {
			json_object_set(outcome, claim, v); /* its refusal, recorded */
			all_lowered = false;
		} else if (refused && pvc) {
			char *why = xasprintf("not lowered from %s to %s: %s",
					      kube_obj_str(pvc, "spec.resources.requests.storage"),
					      kube_obj_str(pvc, "status.capacity.storage"), refused);
			json_object_set_new(json_object_get(n, "lowering"), claim, json_string(why));
			free(why);
			plan_set_state(in, a, json_incref(n));
			goto out;
		} else if (request_above_capacity(pvc)) {
			action_patch(a, "LowerRequest", &KUBE_PVCS, claim,
				     json_pack("{s:{s:{s:{s:s}}}}", "spec", "resources", "requests", "storage",
					       kube_obj_str(pvc, "status.capacity.storage")));
			action_patch_precondition(a, NULL, kube_obj_str(pvc, "metadata.uid"));
			goto out;
		} else if (pvc) {
			json_object_set_new(outcome, claim, json_string("lowered"));
		}
	}
	if (!st->lowering) {
		json_t *pending = claims_to_lower(in, st);
		if (json_object_size(pending)) {
			json_object_set_new(n, "lowering", pending);
			plan_set_state(in, a, json_incref(n));
			goto out;
		}
		json_decref(pending);
	}
	json_object_del(n, "lowering");
	json_object_set(n, "lowered", outcome);
	plan_set_state(in, a, json_incref(n));
	if (json_object_size(outcome)) {
		char *detail = json_dumps(outcome, JSON_COMPACT | JSON_SORT_KEYS);
		action_event(a, all_lowered ? "Normal" : "Warning",
			     all_lowered ? "ResizeRequestLowered" : "ResizeRequestNotLowered",
			     "after the failed expansion, requests %s: %s",
			     all_lowered ? "lowered back to the capacity" : "could not all be lowered back", detail);
		free(detail);
	}
out:
	if (a->state)
		action_status(a, "Failed: %s", str_or(st->message, "expansion failed"));
	json_decref(outcome);
	json_decref(n);
}

void resize_failed(const struct resize_inputs *in, const struct resize_state *st, const struct resize_request *req,
		   int parsed, struct action *a)
{
	/* A failed copy keeps its old volumes for the user: handed back (a state of an earlier version too). */
	if (st->copy && copy_hand_back(in, kube_obj_str(in->sts, "metadata.namespace"),
				       kube_obj_str(in->sts, "metadata.name"), st->old_volumes, a))
		return;
	bool changed = parsed < 0 || req->abort;
	/* Other desired templates applied since: the request changed too. */
	json_t *desired = parsed == 0 && req->desired ? json_loads(req->desired, 0, NULL) : NULL;
	if (desired || json_object_get(st->json, "templates"))
		changed |= !json_equal(desired, json_object_get(st->json, "templates"));
	json_decref(desired);
	for (int i = 0; i < req->ntargets && !changed; i++) {
		const struct resize_target *t = &req->targets[i];
		const char *s = json_string_value(json_object_get(st->targets, t->template_name));
		const char *cls = json_string_value(json_object_get(st->classes, t->template_name));
		changed = !s || plan_cmp_size(s, &t->size) != 0 || (t->storage_class[0] && !streq(cls, t->storage_class));
	}
	if (changed) {
		plan_finish(in, a);
		action_event(a, "Normal", "ResizeReset", "the request changed after a failed resize; starting over");
	} else if (modify_revert(in, st, a)) {
		/* an infeasible attributes class: the claim goes back first */
	} else if (!st->copy && !st->lowered) {
		lower_requests(in, st, a);
	}
}
