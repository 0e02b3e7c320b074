/*
 * The copy cycle: a resize that moves the data (any StorageClass, shrink,
 * class change). Pure, like resize_plan.c: the cluster in, one step out.
 *
 * Replicas go in batches: rolling takes one replica at a time, highest
 * ordinal first, and waits for every replica to be Ready before the next;
 * offline takes them all at once. For each batch:
 *
 *   Prepare  a new claim <claim>-copy of the target size and class per volume
 *   Precopy  (precopy: "true") a first copy Job while the pod still runs
 *   Stop     save the StatefulSet (ConfigMap <sts>-sts-backup), orphan-delete
 *            it, delete the batch's pods: the others keep running
 *   Copy     one Job per replica copies (or, after a precopy, copies the
 *            delta of) each volume, then verifies it; it counts only once
 *            the Job succeeded, i.e. verification passed
 *   Swap     per volume: both PVs Retain; the new claim, then the original
 *            claim deleted; the new PV pre-bound to the original name; the
 *            original name created with volumeName = new PV; once Bound, the
 *            new PV gets its reclaim policy back
 *   Restart  the StatefulSet re-created from the saved copy (with the new
 *            template after the last batch)
 *   Ready    the batch's pods Ready and adopted; Jobs and the saved copy go
 *
 * then Cleaning: the old PVs, Retained and labelled meanwhile, are deleted
 * (their reclaim policy restored) once keep-old-volumes has passed.
 *
 * A failed Job or an abort restores the batch instead: Jobs and new claims
 * go, each original claim is bound to its old PV again (the same rebinding),
 * the StatefulSet comes back, and the resize ends Failed (reported) or, on
 * abort, in Cleaning for the replicas that had already moved.
 *
 * Volumes in volumeMode Block are copied as devices, whole, while their
 * replica is stopped: a precopy, or a device smaller than the old one, is
 * refused at the start (resize_copy_block.c).
 *
 * The objects it creates (new claims, copy Jobs) are built in
 * resize_copy_objects.c. While the StatefulSet is gone, the state lives on
 * the backup ConfigMap.
 * Every step checks what the cluster shows first, so repeating one after a
 * crash is harmless.
 */
#include "controllers/resize/resize_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "controllers/resize/copy_script.h"
#include "util/duration.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

#define MAX_WAIT_MS (10L * 60 * 1000)

/* ---- small readers ---- */

static const json_t *batch_of(const json_t *st)
{
	return json_object_get(st, "batch");
}

static bool in_int_array(const json_t *arr, long long v)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x) if (json_integer_value(x) == v) return true;
	return false;
}

/* obj's array key (borrowed), made when it is not one. */
static json_t *array_in(json_t *obj, const char *key)
{
	if (!json_is_array(json_object_get(obj, key)))
		json_object_set_new(obj, key, json_array());
	return json_object_get(obj, key);
}

/* ---- the volumes of a batch ---- */

/* The batch's volumes that belong to replica ord. New reference. */
static json_t *volumes_of(const json_t *st, long long ord)
{
	json_t *out = json_array();
	size_t i;
	json_t *vol;
	json_array_foreach(json_object_get(batch_of(st), "volumes"), i, vol) {
		if (json_integer_value(json_object_get(vol, "ordinal")) == ord)
			json_array_append(out, vol);
	}
	return out;
}

/* The message of a failed Job: its condition, and what its last pod said on the way out. New string. */
static char *job_failure(const struct resize_inputs *in, const json_t *job)
{
	const char *cond = NULL;
	kube_obj_condition(job, "Failed", &cond);
	const char *name = kube_obj_str(job, "metadata.name");
	const char *said = NULL;
	size_t i;
	json_t *pod;
	json_array_foreach(in->pods, i, pod) {
		if (!streq(kube_obj_label(pod, "job-name"), name))
			continue;
		size_t k;
		json_t *cs;
		json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), k, cs) {
			const char *m = kube_obj_str(cs, "state.terminated.message");
			if (m && *m)
				said = m;
		}
	}
	/*
	 * The pod's termination message is the copy script's, or whatever the
	 * container wrote: one clean, bounded line for the state, the status
	 * annotation and the Events that quote it.
	 */
	char *shown_cond = text_sanitize(str_or(cond, "no reason given"), TEXT_QUOTE_MAX);
	char *shown_said = text_sanitize(said, TEXT_QUOTE_MAX);
	char *msg = xasprintf("Job %s failed: %s%s%s", name, shown_cond, said ? "; " : "", said ? shown_said : "");
	free(shown_said);
	free(shown_cond);
	return msg;
}

struct ctx {
	const struct resize_inputs *in;
	long long now_ms;
	const struct resize_state *state;
	const json_t *st; /* its JSON (or, once a batch is chosen, the new one) */
	const char *ns, *name; /* the StatefulSet's */
	long long total, done; /* replicas to copy, replicas copied: for the status */
	bool abort_asked;
	struct action *a;
};

/* A copy of the state in phase (the batch at stage), updated now. New reference. */
static json_t *next(const struct ctx *c, enum resize_phase phase)
{
	return resize_state_next(c->state, c->now_ms, phase);
}

static json_t *next_stage(const struct ctx *c, enum copy_stage stage)
{
	return resize_state_next_stage(c->state, c->now_ms, stage);
}

/* Marks the batch for restoring (reason recorded first, so it survives a crash). */
static void start_restore(struct ctx *c, const char *reason, bool failed)
{
	struct action *a = c->a;
	json_t *n = next(c, RESIZE_PHASE_COPYING);
	json_object_update_new(json_object_get(n, "batch"),
			       json_pack("{s:s, s:b}", "restore", reason, "failed", failed));
	plan_set_state(c->in, a, n);
	if (failed)
		action_event(a, "Warning", "CopyFailed", "%s; returning the replica to its original volume", reason);
	else
		action_event(a, "Warning", "ResizeAborted",
			   "resize aborted on request; returning the replica in flight to its original volume");
	action_status(a, "Restoring: %s", reason);
}

/* ---- the steps ---- */

static void status_step(struct ctx *c, const char *what)
{
	const json_t *ords = json_object_get(batch_of(c->st), "ordinals");
	if (json_array_size(ords) == 1)
		action_status(c->a, "Copying %lld/%lld: %s-%lld %s", c->done + 1, c->total, c->name,
			    (long long)json_integer_value(json_array_get(ords, 0)), what);
	else
		action_status(c->a, "Copying %zu replicas (offline): %s", json_array_size(ords), what);
}

/* Rolling: every replica Ready before the next goes down, so at most one is ever down. False: a wait chosen. */
static bool replicas_ready(struct ctx *c)
{
	long long start, replicas = plan_replicas(c->in->sts, &start);
	for (long long ord = start; ord < start + replicas; ord++) {
		char *pod_name = resize_pod_name(c->name, ord);
		bool ready = kube_pod_ready(kube_list_find(c->in->pods, c->ns, pod_name));
		if (!ready) {
			action_status(c->a, "Copying %lld/%lld: waiting for %s to be Ready", c->done + 1, c->total,
				      pod_name);
			action_wait(c->a, POLL_MS);
		}
		free(pod_name);
		if (!ready)
			return false;
	}
	return true;
}

/* What the state records of claim pvc (named x, of template tmpl and replica ord): enough to restore it. New. */
static json_t *volume_record(const json_t *pvc, const char *x, const char *tmpl, json_t *ord)
{
	json_t *labels = (json_t *)kube_obj_labels(pvc);
	return json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:O, s:O, s:s*}", "claim", x, "uid",
			 str_or(kube_obj_str(pvc, "metadata.uid"), ""), "template", tmpl, "ordinal", ord, "oldPV",
			 kube_obj_str(pvc, "spec.volumeName"), "size",
			 str_or(kube_obj_str(pvc, "spec.resources.requests.storage"), "0"), "accessModes",
			 json_object_get(json_object_get(pvc, "spec"), "accessModes"), "labels",
			 labels ? labels : json_null(), "volumeMode", kube_obj_str(pvc, "spec.volumeMode"));
}

/* The volumes of replicas ords into vols; false (a wait chosen) while one of their claims is not Bound. */
static bool batch_volumes(struct ctx *c, const json_t *ords, json_t *vols)
{
	size_t i;
	json_t *o;
	json_array_foreach(ords, i, o) {
		const char *tmpl;
		json_t *size;
		json_object_foreach((json_t *)c->state->targets, tmpl, size) {
			char *x = resize_claim_name(tmpl, c->name, json_integer_value(o));
			const json_t *pvc = kube_list_find(c->in->pvcs, c->ns, x);
			bool bound = !pvc || (streq(kube_obj_str(pvc, "status.phase"), "Bound") &&
					      kube_list_find(c->in->pvs, NULL, kube_obj_str(pvc, "spec.volumeName")));
			if (!bound) {
				action_status(c->a, "Waiting for %s to be Bound", x);
				action_wait(c->a, POLL_MS);
			} else if (pvc) {
				json_array_append_new(vols, volume_record(pvc, x, tmpl, o));
			}
			free(x);
			if (!bound)
				return false;
		}
	}
	return true;
}

/* Records the replicas to copy and their volumes as the next batch; or moves on when none is left. */
static void choose_batch(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	struct action *a = c->a;
	if (!in->sts) {
		action_wait(a, POLL_MS);
		return;
	}
	json_t *ords = json_array(), *vols = json_array();
	size_t i;
	json_t *o;
	json_array_foreach(c->state->ordinals, i, o) {
		if (in_int_array(c->state->done, json_integer_value(o)))
			continue;
		json_array_append(ords, o);
		if (!c->state->offline)
			break; /* rolling: one replica */
	}
	if (!json_array_size(ords) && json_is_true(json_object_get(c->st, "templateUpdated"))) {
		json_t *n = next(c, RESIZE_PHASE_CLEANING);
		json_object_set_new(n, "completed", resize_state_time(c->now_ms));
		plan_set_state(in, a, n);
		action_event(a, "Normal", "VolumesCopied",
			     "every replica runs on its new volumes; the old volumes are kept (Retained) until %s",
			     c->state->keep_old_s ? "keep-old-volumes passes" : "they are deleted now");
		action_status(a, "Deleting the old volumes");
		goto out;
	}
	if (!replicas_ready(c) || !batch_volumes(c, ords, vols))
		goto out;
	json_t *n = next(c, RESIZE_PHASE_COPYING);
	json_object_set_new(n, "batch", json_pack("{s:O, s:O}", "ordinals", ords, "volumes", vols));
	resize_state_set_stage(n, COPY_STAGE_PREPARE);
	json_object_set_new(n, "statefulSetUID", json_string(kube_obj_str(in->sts, "metadata.uid")));
	plan_set_state(in, a, n);
	c->st = n;
	status_step(c, "preparing the new volumes");
out:
	json_decref(vols);
	json_decref(ords);
}

static void step_prepare(struct ctx *c)
{
	size_t i;
	json_t *vol;
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) {
		char *y = resize_new_claim_name(kube_obj_str(vol, "claim"));
		const json_t *pvc = kube_list_find(c->in->pvcs, c->ns, y);
		const char *started = kube_obj_annotation(pvc, ANNOTATION_RESIZE_STARTED);
		if (!pvc) {
			action_create(c->a, "CreateNewClaim", &KUBE_PVCS, copy_new_claim(c->st, c->ns, c->name, vol));
			c->a->answers = ACTION_OK_409;
			const char *tmpl = kube_obj_str(vol, "template");
			action_event(c->a, "Normal", "CreatingVolume",
				     "creating claim %s (%s, StorageClass %s) for the copy of %s", y,
				     json_string_value(json_object_get(c->state->targets, tmpl)),
				     json_string_value(json_object_get(c->state->classes, tmpl)), kube_obj_str(vol, "claim"));
			status_step(c, "creating the new volumes");
		} else if (!kube_obj_label(pvc, LABEL_COPY_OF)) {
			char *why = xasprintf("claim %s exists and was not created by the operator; rename or delete it", y);
			start_restore(c, why, true);
			free(why);
		} else if (!streq(started, c->state->started)) {
			/* Left by an earlier resize: it holds nothing of ours. */
			plan_delete_or_wait(c->a, "DeleteStaleClaim", &KUBE_PVCS, pvc);
		} else {
			free(y);
			continue;
		}
		free(y);
		return;
	}
	bool precopy = c->state->precopy;
	plan_set_state(c->in, c->a, next_stage(c, precopy ? COPY_STAGE_PRECOPY : COPY_STAGE_STOP));
	status_step(c, precopy ? "first copy while running" : "stopping");
}

/*
 * Replica ord's copy Job of this pass ("precopy", "full" or "delta"): 1
 * when it succeeded (or the replica has no claim to copy), 0 while it
 * runs, -1 when a step was chosen (create it, replace a stale one, or
 * restore after a failure).
 */
static int run_job(struct ctx *c, long long ord, const char *pass)
{
	bool precopy = streq(pass, "precopy");
	json_t *vols = volumes_of(c->st, ord);
	char *name = resize_job_name(c->name, ord, precopy ? "precopy" : "copy");
	const json_t *job = kube_list_find(c->in->jobs, c->ns, name);
	int r = -1;
	if (!json_array_size(vols)) {
		r = 1;
	} else if (job && !streq(kube_obj_annotation(job, ANNOTATION_RESIZE_STARTED), c->state->started)) {
		plan_delete(c->a, "DeleteStaleJob", &KUBE_JOBS, job);
	} else if (!job) {
		action_create(c->a, precopy ? "CreatePrecopyJob" : "CreateCopyJob", &KUBE_JOBS,
			      copy_job(c->in, c->st, c->ns, c->name, ord, pass, vols));
		c->a->answers = ACTION_OK_409;
		action_event(c->a, "Normal", "CopyStarted", "Job %s copies %s-%lld's volumes (pass %s)", name, c->name,
			     ord, pass);
		status_step(c, precopy ? "first copy while running" : "copying");
	} else if (kube_obj_condition(job, "Failed", NULL)) {
		char *why = job_failure(c->in, job);
		start_restore(c, why, true);
		free(why);
	} else {
		r = kube_obj_condition(job, "Complete", NULL) ? 1 : 0;
	}
	json_decref(vols);
	free(name);
	return r;
}

/*
 * Records the pass's duration with the step that follows it: from its
 * first Job's start to its last one's completion (whole seconds, as the
 * Jobs' status says). Nothing when no Job of the batch says both.
 */
static void observe_pass(struct ctx *c, const char *pass)
{
	bool precopy = streq(pass, "precopy");
	int64_t first = -1, last = -1;
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		char *name = resize_job_name(c->name, json_integer_value(o), precopy ? "precopy" : "copy");
		const json_t *job = kube_list_find(c->in->jobs, c->ns, name);
		free(name);
		int64_t s = rfc3339_seconds(kube_obj_str(job, "status.startTime"));
		int64_t e = rfc3339_seconds(kube_obj_str(job, "status.completionTime"));
		if (s < 0 || e < s)
			continue;
		if (first < 0 || s < first)
			first = s;
		if (e > last)
			last = e;
	}
	if (first >= 0)
		action_observe(c->a, "stateful_operator_copy_pass_duration_seconds",
			       precopy ? "precopy" : streq(pass, "delta") ? "delta" : "full", (double)(last - first));
}

/* Runs one Job per replica of the batch. Returns true when all succeeded; otherwise an action is set. */
static bool run_jobs(struct ctx *c, const char *pass)
{
	size_t i;
	json_t *o;
	bool all = true;
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		int r = run_job(c, json_integer_value(o), pass);
		if (r < 0)
			return false;
		all &= r == 1;
	}
	if (!all) {
		status_step(c, streq(pass, "precopy") ? "first copy while running" : "copying and verifying");
		action_wait(c->a, POLL_MS);
	}
	return all;
}

static void step_precopy(struct ctx *c)
{
	if (!run_jobs(c, "precopy"))
		return;
	observe_pass(c, "precopy");
	plan_set_state(c->in, c->a, next_stage(c, COPY_STAGE_STOP));
	status_step(c, "stopping");
}

static void step_stop(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	if (in->sts) {
		const char *uid = kube_obj_str(in->sts, "metadata.uid");
		if (kube_obj_terminating(in->sts)) {
			action_wait(c->a, POLL_MS); /* the garbage collector is orphaning the pods */
			return;
		}
		if (plan_saved_for(in, uid) && !plan_saved_is_stale(in)) {
			plan_orphan_delete(in, c->a);
			action_event(c->a, "Normal", "OrphanDeleting",
				   "deleting the StatefulSet with propagationPolicy Orphan (the other pods keep "
				   "running) to take down the replicas being copied");
			status_step(c, "stopping");
		} else if (in->backup) {
			plan_delete_backup(in, c->a); /* a stale copy: make room for ours */
		} else {
			plan_save(c->a, next(c, RESIZE_PHASE_COPYING));
			status_step(c, "saving the StatefulSet");
		}
		return;
	}
	size_t i;
	json_t *o;
	bool stopping = false; /* every pod is told to stop before any is waited for */
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		char *pod_name = resize_pod_name(c->name, json_integer_value(o));
		const json_t *pod = kube_list_find(in->pods, c->ns, pod_name);
		stopping |= kube_obj_terminating(pod);
		if (!pod || kube_obj_terminating(pod)) {
			free(pod_name);
			continue;
		}
		plan_delete(c->a, "StopPod", &KUBE_PODS, pod);
		action_event(c->a, "Normal", "StoppingReplica", "stopping %s to copy its volumes", pod_name);
		status_step(c, "stopping");
		free(pod_name);
		return;
	}
	if (stopping) {
		status_step(c, "waiting for the pods to stop");
		action_wait(c->a, POLL_MS);
		return;
	}
	plan_set_state(c->in, c->a, next_stage(c, COPY_STAGE_COPY));
	status_step(c, "copying");
}

/*
 * What the batch's copy Jobs reported in their pods' termination messages
 * (the script's last progress and result lines): bytes, and files in *files
 * (left at -1 when no Job reported).
 */
static long long copied(struct ctx *c, long long *files)
{
	long long bytes = 0;
	size_t i, k;
	json_t *o, *pod, *cs;
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		char *job = resize_job_name(c->name, json_integer_value(o), "copy");
		json_array_foreach(c->in->pods, k, pod) {
			if (!streq(kube_obj_label(pod, "job-name"), job) ||
			    !streq(kube_obj_str(pod, "status.phase"), "Succeeded"))
				continue;
			size_t n;
			json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), n, cs) {
				struct copy_progress p;
				if (copy_progress_parse(kube_obj_str(cs, "state.terminated.message"), &p) == 0 &&
				    p.result == 1) {
					bytes += p.bytes;
					*files = (*files < 0 ? 0 : *files) + p.files;
				}
			}
		}
		free(job);
	}
	return bytes;
}

static void step_copy(struct ctx *c)
{
	if (c->in->sts) {
		action_wait(c->a, POLL_MS); /* not ours to copy under: the set is back (see restore) */
		return;
	}
	if (!run_jobs(c, c->state->precopy ? "delta" : "full"))
		return;
	observe_pass(c, c->state->precopy ? "delta" : "full");

	/* Verified: record each new PV, needed to restore if anything fails later. */
	json_t *n = next_stage(c, COPY_STAGE_SWAP);
	size_t i;
	json_t *vol;
	json_array_foreach(json_object_get(json_object_get(n, "batch"), "volumes"), i, vol) {
		char *y = resize_new_claim_name(kube_obj_str(vol, "claim"));
		const json_t *temp = kube_list_find(c->in->pvcs, c->ns, y);
		json_object_update_new(vol, json_pack("{s:s*, s:s*}", "newPV", kube_obj_str(temp, "spec.volumeName"),
						      "newClaimUID", kube_obj_str(temp, "metadata.uid")));
		free(y);
	}
	plan_set_state(c->in, c->a, n);
	long long files = -1, bytes = copied(c, &files);
	action_count(c->a, "stateful_operator_copies_verified_total",
		     (long long)json_array_size(json_object_get(batch_of(c->st), "ordinals")));
	action_count(c->a, "stateful_operator_copy_bytes_total", bytes);
	char totals[96] = "the Jobs reported no totals";
	if (files >= 0)
		snprintf(totals, sizeof(totals), "%lld bytes in %lld files", bytes, files);
	char *ords = json_dumps(json_object_get(batch_of(c->st), "ordinals"), JSON_COMPACT);
	action_event(c->a, "Normal", "CopyVerified",
		   "replica(s) %s: the copy of %zu volume(s) was verified (%s); swapping volumes", ords,
		   json_array_size(json_object_get(batch_of(c->st), "volumes")), totals);
	free(ords);
	char *what = files >= 0 ? xasprintf("verified %s; swapping volumes", totals) : xstrdup("swapping volumes");
	status_step(c, what);
	free(what);
}

/*
 * The batch's Jobs and their pods are gone (deleting them as needed):
 * a finished pod still counts as a user of its claims for the PVC
 * protection controller, so no claim a Job mounted could go before.
 * Returns true when clear; otherwise an action is set.
 */
static bool jobs_cleared(struct ctx *c)
{
	size_t i;
	json_t *o;
	json_array_foreach(c->in->jobs, i, o) {
		if (!streq(kube_obj_label(o, LABEL_COPY_OF), c->name))
			continue;
		plan_delete_or_wait(c->a, "DeleteCopyJob", &KUBE_JOBS, o);
		return false;
	}
	json_array_foreach(c->in->pods, i, o) {
		if (streq(kube_obj_label(o, LABEL_COPY_OF), c->name)) {
			action_wait(c->a, POLL_MS);
			return false;
		}
	}
	return true;
}

static void step_swap(struct ctx *c)
{
	if (!jobs_cleared(c)) {
		status_step(c, "swapping volumes");
		return;
	}
	size_t i;
	json_t *vol;
	/*
	 * Volumes are independent: one that waits for the cluster does not hold
	 * the others back (an offline batch swaps them all at once).
	 */
	struct action waiting;
	action_init(&waiting);
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) {
		const char *pv = kube_obj_str(vol, "newPV");
		const char *size = json_string_value(json_object_get(c->state->targets, kube_obj_str(vol, "template")));
		char *why = NULL;
		struct action one;
		action_init(&one);
		int r = pv ? resize_bind_claim(c->in, c->ns, c->name, c->now_ms, vol, pv, str_or(size, "0"), &one, &why)
			   : -1;
		/* Bound, or a wait while another volume waits already. */
		if (r == 1 || (r == 0 && one.verb == ACTION_WAIT && waiting.verb == ACTION_WAIT)) {
			action_release(&one);
			continue;
		}
		if (r < 0) {
			action_release(&one);
			action_release(&waiting);
			char *msg = why ? why
					: xasprintf("the new claim of %s is not bound to a volume", kube_obj_str(vol, "claim"));
			start_restore(c, msg, true);
			free(msg);
			return;
		}
		if (one.verb == ACTION_WAIT) {
			waiting = one;
			continue;
		}
		action_release(&waiting);
		action_release(c->a);
		*c->a = one;
		status_step(c, "swapping volumes");
		return;
	}
	if (waiting.verb == ACTION_WAIT) {
		action_release(c->a);
		*c->a = waiting;
		return;
	}
	/* The old PVs, Retained, are labelled with the StatefulSet until they are deleted. */
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) {
		const json_t *pv = kube_list_find(c->in->pvs, NULL, kube_obj_str(vol, "oldPV"));
		if (!pv || streq(kube_obj_label(pv, LABEL_OLD_VOLUME), c->name))
			continue;
		json_t *p = json_pack("{s:{s:{s:s}, s:{s:o}}}", "metadata", "labels", LABEL_OLD_VOLUME, c->name,
				      "annotations", ANNOTATION_OLD_CLAIM,
				      json_sprintf("%s/%s", c->ns, kube_obj_str(vol, "claim")));
		plan_patch_pv(c->a, "LabelOldVolume", pv, p);
		return;
	}
	json_t *n = next_stage(c, COPY_STAGE_RESTART);
	json_t *old = array_in(n, "oldVolumes");
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol)
		json_array_append(old, json_object_get(vol, "oldPV"));
	plan_set_state(c->in, c->a, n);
	status_step(c, "starting again");
}

/* True when no replica is left to copy after this batch: the template changes with this re-create. */
static bool last_batch(const struct resize_state *st)
{
	size_t i;
	json_t *o;
	json_array_foreach(st->ordinals, i, o) {
		long long ord = json_integer_value(o);
		if (!in_int_array(st->done, ord) && !in_int_array(json_object_get(st->batch, "ordinals"), ord))
			return false;
	}
	return !json_object_get(st->batch, "restore");
}

static void step_restart(struct ctx *c)
{
	if (c->in->sts) {
		plan_set_state(c->in, c->a, next_stage(c, COPY_STAGE_READY));
		return;
	}
	bool last = last_batch(c->state);
	json_t *n = next_stage(c, COPY_STAGE_READY);
	if (last)
		json_object_set_new(n, "templateUpdated", json_true());
	if (!plan_recreate(c->in, c->a, n, last, c->abort_asked))
		return;
	json_t *saved = last ? plan_saved_statefulset(c->in->backup) : NULL;
	char *removed = saved ? resize_templates_removed(c->in, saved, c->st) : NULL;
	if (removed)
		action_event(c->a, "Normal", "VolumeClaimTemplateRemoved",
			     "re-created the StatefulSet from its saved copy with the new volume template; %s", removed);
	else
		action_event(c->a, "Normal", "StatefulSetRecreated", "re-created the StatefulSet from its saved copy%s",
			     last ? " with the new volume template" : "");
	free(removed);
	json_decref(saved);
	status_step(c, "starting again");
}

bool copy_hand_back(const struct resize_inputs *in, const char *ns, const char *sts, const json_t *old_volumes,
		    struct action *a)
{
	char *owner = xasprintf("%s/%s", ns, sts);
	size_t i;
	json_t *o;
	bool acted = false;
	json_array_foreach(old_volumes, i, o) {
		const json_t *pv = kube_list_find(in->pvs, NULL, json_string_value(o));
		if (!streq(kube_obj_annotation(pv, ANNOTATION_TAKEN_FOR), owner))
			continue;
		/* Retained, labelled, its own policy named: the user's to check and delete; nothing of ours to trust. */
		plan_patch_pv(a, "ReleaseOldVolume", pv,
			      json_pack("{s:{s:{s:n}}}", "metadata", "annotations", ANNOTATION_TAKEN_FOR));
		action_event(a, "Normal", "OldVolumeKept",
			     "old volume %s (claim %s) is yours to check and delete: it stays Retained and labelled "
			     LABEL_OLD_VOLUME "=%s; the operator no longer takes it for the StatefulSet",
			     json_string_value(o), str_or(kube_obj_annotation(pv, ANNOTATION_OLD_CLAIM), "?"), sts);
		acted = true;
		break;
	}
	free(owner);
	return acted;
}

/* Aborted: the state n (stolen, in phase Cleaning) records it; the old volumes of replicas copied go. */
static void aborted(struct ctx *c, json_t *n)
{
	json_object_set_new(n, "completed", resize_state_time(c->now_ms));
	json_object_set_new(n, "aborted", json_true());
	plan_set_state(c->in, c->a, n);
	action_status(c->a, "Aborted; deleting the old volumes of replicas already copied");
}

/* The batch is done (or restored): pods Ready and adopted, Jobs and the saved copy gone. */
static void step_ready(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	if (!in->sts) {
		action_wait(c->a, POLL_MS);
		return;
	}
	const char *uid = kube_obj_str(in->sts, "metadata.uid");
	char *missing = NULL;
	if (!plan_pods_adopted(in, c->ns, c->name, json_object_get(batch_of(c->st), "ordinals"), 0, 0, uid, &missing)) {
		free(missing);
		status_step(c, "waiting for the pod to be Ready");
		action_wait(c->a, POLL_MS);
		return;
	}
	if (!jobs_cleared(c))
		return;
	if (in->backup) {
		plan_delete_backup(in, c->a);
		return;
	}
	const json_t *batch = batch_of(c->st);
	json_t *n = next(c, RESIZE_PHASE_COPYING);
	json_object_set_new(n, "statefulSetUID", json_string(uid));
	json_object_del(n, "batch");
	const char *restored = c->state->restore;
	if (restored && json_is_true(json_object_get(batch, "failed"))) {
		/* Failed: the old volumes of replicas copied before are handed back first, one a step. */
		if (copy_hand_back(in, c->ns, c->name, c->state->old_volumes, c->a)) {
			json_decref(n);
			return;
		}
		resize_state_set_phase(n, RESIZE_PHASE_FAILED);
		json_object_set_new(n, "message", json_string(restored));
		plan_set_state(c->in, c->a, n);
		action_count(c->a, "stateful_operator_resizes_failed_total", 1);
		action_event(c->a, "Warning", "ResizeFailed",
			   "%s; the replica runs on its original volume again%s", restored,
			   json_array_size(c->state->old_volumes)
				   ? "; replicas copied before keep their new volumes, their old ones stay Retained"
				   : "");
		action_status(c->a, "Failed: %s", restored);
		return;
	}
	if (restored) {
		resize_state_set_phase(n, RESIZE_PHASE_CLEANING);
		aborted(c, n);
		return;
	}
	json_array_extend(array_in(n, "done"), json_object_get(batch, "ordinals"));
	plan_set_state(c->in, c->a, n);
	char *list = json_dumps(json_object_get(batch, "ordinals"), JSON_COMPACT);
	action_event(c->a, "Normal", "ReplicaCopied", "replica(s) %s of %s run on their new volumes", list, c->name);
	free(list);
	c->done += (long long)json_array_size(json_object_get(batch, "ordinals"));
	action_status(c->a, "Copying %lld/%lld: done", c->done, c->total);
}

/* Abort or failure: the batch goes back to its original volumes, then the StatefulSet comes back. */
static void step_restore(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	const json_t *batch = batch_of(c->st);
	size_t i;
	/* A failed Job goes too (its message is in the Event and the status): its pods hold the claims. */
	if (!jobs_cleared(c)) {
		action_status(c->a, "Restoring: %s", json_string_value(json_object_get(batch, "restore")));
		return;
	}
	json_t *vol;
	json_array_foreach(json_object_get(batch, "volumes"), i, vol) {
		const json_t *pvc = kube_list_find(in->pvcs, c->ns, kube_obj_str(vol, "claim"));
		/* Before the swap began the original claim is untouched: nothing to rebind. */
		if (pvc && streq(kube_obj_str(pvc, "spec.volumeName"), kube_obj_str(vol, "oldPV")) &&
		    !plan_original_policy(kube_list_find(in->pvs, NULL, kube_obj_str(vol, "oldPV"))))
			continue;
		char *why = NULL;
		int r = resize_bind_claim(in, c->ns, c->name, c->now_ms, vol, kube_obj_str(vol, "oldPV"),
					  str_or(kube_obj_str(vol, "size"), "0"), c->a, &why);
		if (r == 1)
			continue;
		if (r < 0) {
			/* Nothing else is safe to do: stop and say so; every PV is still there. */
			action_wait(c->a, MAX_WAIT_MS);
			action_event(c->a, "Warning", "RestoreBlocked", "cannot return %s to its volume: %s",
				   kube_obj_str(vol, "claim"), why);
			action_status(c->a, "Restoring: blocked: %s", why);
			free(why);
		}
		return;
	}
	/* The new claims and their volumes go: they hold only a copy. */
	json_array_foreach(json_object_get(batch, "volumes"), i, vol) {
		char *y = resize_new_claim_name(kube_obj_str(vol, "claim"));
		const json_t *temp = kube_list_find(in->pvcs, c->ns, y);
		const json_t *new_pv = kube_list_find(in->pvs, NULL, kube_obj_str(vol, "newPV"));
		if (!new_pv && temp)
			new_pv = kube_list_find(in->pvs, NULL, kube_obj_str(temp, "spec.volumeName"));
		/*
		 * Pre-bound to the original name (no UID) it would stay Available,
		 * never reclaimed: point it back at the deleted new claim, so it is
		 * Released and its own policy reclaims it.
		 */
		const char *temp_uid = kube_obj_str(vol, "newClaimUID");
		if (new_pv && temp_uid && streq(kube_obj_str(new_pv, "spec.claimRef.name"), kube_obj_str(vol, "claim")) &&
		    !kube_obj_str(new_pv, "spec.claimRef.uid")) {
			json_t *p = json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "spec", "claimRef", "apiVersion",
					      "v1", "kind", "PersistentVolumeClaim", "namespace", c->ns, "name", y, "uid",
					      temp_uid);
			plan_patch_pv(c->a, "ReleaseNewVolume", new_pv, p);
			free(y);
			return;
		}
		free(y);
		const char *orig = plan_original_policy(new_pv);
		if (new_pv && orig && !streq(plan_reclaim_policy(new_pv), orig)) {
			plan_restore_policy(c->a, "RestoreReclaimPolicy", new_pv, orig);
			return;
		}
		if (kube_obj_label(temp, LABEL_COPY_OF) && !kube_obj_terminating(temp)) {
			plan_delete(c->a, "DeleteNewClaim", &KUBE_PVCS, temp);
			return;
		}
	}
	if (!in->sts) {
		/* An abort asked on the ConfigMap stays asked: the resize must not start again. */
		if (!plan_recreate(in, c->a, next_stage(c, COPY_STAGE_READY), false,
				   !json_is_true(json_object_get(batch, "failed"))))
			return;
		action_event(c->a, "Normal", "StatefulSetRecreated",
			   "re-created the StatefulSet from its saved copy, unchanged; the replica runs on its "
			   "original volume");
		action_status(c->a, "Restoring: starting again");
		return;
	}
	if (kube_obj_terminating(in->sts)) {
		action_wait(c->a, POLL_MS);
		return;
	}
	plan_set_state(c->in, c->a, next_stage(c, COPY_STAGE_READY));
	action_status(c->a, "Restoring: waiting for the replica");
}

/* After the last batch: the old volumes go once keep-old-volumes has passed. */
static void step_cleaning(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	int64_t keep = c->state->keep_old_s;
	int64_t completed = rfc3339_seconds(c->state->completed);
	int64_t now = c->now_ms / 1000;
	if (keep > 0 && completed >= 0 && now >= 0 && now < completed + keep) {
		long ms = (long)((completed + keep - now) * 1000);
		action_status(c->a, "Completed; old volumes kept until %s + %llds", c->state->completed,
			    (long long)keep);
		action_wait(c->a, ms > MAX_WAIT_MS ? MAX_WAIT_MS : ms);
		return;
	}
	size_t i;
	json_t *o;
	json_array_foreach(c->state->old_volumes, i, o) {
		const json_t *pv = kube_list_find(in->pvs, NULL, json_string_value(o));
		if (!pv)
			continue;
		const char *orig = plan_original_policy(pv);
		if (kube_obj_str(pv, "spec.claimRef.name") &&
		    kube_list_find(in->pvcs, kube_obj_str(pv, "spec.claimRef.namespace"),
			      kube_obj_str(pv, "spec.claimRef.name")) &&
		    streq(kube_obj_str(pv, "status.phase"), "Bound")) {
			/* Bound again (a restore): not old any more, and no longer taken for the set. */
			json_t *one = json_pack("[O]", o);
			bool acted = copy_hand_back(in, c->ns, c->name, one, c->a);
			json_decref(one);
			if (acted)
				return;
			continue;
		}
		if (orig && !streq(orig, "Retain") && streq(plan_reclaim_policy(pv), "Retain")) {
			/* Its own policy back: the PV controller reclaims it. */
			plan_restore_policy(c->a, "DeleteOldVolume", pv, orig);
			action_event(c->a, "Normal", "DeletingOldVolume",
				   "old volume %s: reclaim policy %s restored, so it is deleted", json_string_value(o), orig);
			return;
		}
		if (streq(plan_reclaim_policy(pv), "Retain")) {
			/* Retain was the user's own policy: the PV object goes, the storage stays. */
			plan_delete_or_wait(c->a, "DeleteOldVolume", &KUBE_PVS, pv);
			return;
		}
		action_status(c->a, "Waiting for old volume %s to be reclaimed", json_string_value(o));
		action_wait(c->a, POLL_MS);
		return;
	}
	/* A swap re-creates a claim with its labels only: the desired annotations go on again. */
	if (!json_is_true(json_object_get(c->st, "aborted")) && resize_claim_metadata_step(in, in->sts, c->st, c->a))
		return;
	plan_finish(in, c->a);
	if (json_is_true(json_object_get(c->st, "aborted"))) {
		action_event(c->a, "Warning", "ResizeAborted",
			   "resize aborted; replicas copied before the abort keep their new volumes, the others "
			     "their original ones; the StatefulSet template is unchanged");
		return;
	}
	action_event(c->a, "Normal", "ResizeCompleted",
		     "volumes moved by copy; the StatefulSet carries the new template and owns its pods");
	action_count(c->a, "stateful_operator_resizes_completed_total", 1);
}

void copy_plan_start(const struct resize_inputs *in, long long now_ms, const struct resize_request *req,
		     const json_t *targets, const json_t *classes, struct action *a)
{
	if (!in->pvs) {
		plan_refuse(a, "ResizeCopyNotAvailable",
			    xstrdup("the copy strategy rebinds PersistentVolumes, which this operator cannot read "
				    "(namespace scope); run it with cluster RBAC"));
		return;
	}
	const char *reason = NULL;
	char *why = copy_block_refusal(in, req, targets, &reason);
	if (why) {
		plan_refuse(a, reason, why);
		return;
	}
	const char *name = kube_obj_str(in->sts, "metadata.name");
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	long long start, replicas = plan_replicas(in->sts, &start);
	/* The replicas that have a claim to move, highest ordinal first. */
	json_t *ords = json_array();
	for (long long ord = start + replicas - 1; ord >= start; ord--) {
		const char *tmpl;
		json_t *v;
		bool any = false;
		json_object_foreach((json_t *)targets, tmpl, v) {
			char *x = resize_claim_name(tmpl, name, ord);
			any |= kube_list_find(in->pvcs, ns, x) != NULL;
			free(x);
		}
		if (any)
			json_array_append_new(ords, json_integer(ord));
	}
	/*
	 * The workload's tolerations, for the copy Jobs: a volume bound to a
	 * tainted (dedicated) node is copied there. Kept in the state because
	 * the StatefulSet is orphan-deleted while its replicas are copied.
	 */
	json_t *tolerations = json_object_get(
		json_object_get(json_object_get(json_object_get(in->sts, "spec"), "template"), "spec"), "tolerations");
	json_t *now = resize_state_time(now_ms);
	json_t *st = json_pack("{s:s, s:O, s:O, s:s, s:O, s:O, s:s, s:b, s:b, s:s, s:I, s:I, s:o, s:o*, s:o*, s:O*}",
			       "strategy", "copy", "targets", targets, "classes", classes, "statefulSetUID",
			       kube_obj_str(in->sts, "metadata.uid"), "started", now, "updated", now, "image",
			       str_or(req->copy_image, str_or(in->copy_image, "")), "offline", req->offline, "precopy",
			       req->precopy, "mode", req->offline ? "offline" : "rolling", "timeoutSeconds",
			       (json_int_t)((req->copy_timeout_ms + 999) / 1000), "keepOldSeconds",
			       (json_int_t)(req->keep_old_ms / 1000), "ordinals", ords, "resources",
			       req->copy_resources ? json_loads(req->copy_resources, 0, NULL) : NULL, "podAnnotations",
			       req->copy_pod_annotations ? json_loads(req->copy_pod_annotations, 0, NULL) : NULL,
			       "tolerations", json_array_size(tolerations) ? tolerations : NULL);
	json_decref(now);
	resize_state_set_phase(st, RESIZE_PHASE_COPYING);
	plan_set_state(in, a, st);
	char *list = json_dumps(targets, JSON_COMPACT);
	char *cls = json_dumps(classes, JSON_COMPACT);
	action_event(a, "Normal", "ResizeStarted", "resizing volumes by copy (%s%s): %s, StorageClass %s",
		     req->offline ? "offline" : "rolling", req->precopy ? ", precopy" : "", list, cls);
	action_count(a, "stateful_operator_resizes_started_total", 1);
	action_status(a, "Copying");
	free(cls);
	free(list);
}

/* A batch in flight at stage: its step (only once the StatefulSet is down may a copy run). */
static void (*const step_of[COPY_STAGE_UNKNOWN + 1])(struct ctx *c) = {
	[COPY_STAGE_PREPARE] = step_prepare, [COPY_STAGE_PRECOPY] = step_precopy, [COPY_STAGE_STOP] = step_stop,
	[COPY_STAGE_COPY] = step_copy,       [COPY_STAGE_SWAP] = step_swap,       [COPY_STAGE_RESTART] = step_restart,
	[COPY_STAGE_READY] = step_ready,
};

void copy_plan(const struct resize_inputs *in, long long now_ms, bool abort_asked, const struct resize_state *st,
	       struct action *a)
{
	json_t *saved = in->sts ? NULL : plan_saved_statefulset(in->backup);
	const json_t *meta_of = in->sts ? in->sts : saved;
	struct ctx c = {
		.in = in,
		.now_ms = now_ms,
		.state = st,
		.st = st->json,
		.ns = kube_obj_str(meta_of, "metadata.namespace"),
		.name = kube_obj_str(meta_of, "metadata.name"),
		.total = (long long)json_array_size(st->ordinals),
		.done = (long long)json_array_size(st->done),
		.abort_asked = abort_asked,
		.a = a,
	};
	if (!c.ns || !c.name) {
		/* Nothing to act on. */
	} else if (st->phase == RESIZE_PHASE_CLEANING) {
		if (in->sts)
			step_cleaning(&c);
	} else if (st->phase != RESIZE_PHASE_COPYING) {
		/* Failed: handled by the caller. */
	} else if (!st->batch) {
		if (abort_asked && in->sts)
			aborted(&c, next(&c, RESIZE_PHASE_CLEANING));
		else if (!in->sts || !resize_claim_metadata_step(in, in->sts, st->json, a))
			choose_batch(&c); /* the claims have the desired metadata first: a batch keeps their labels */
	} else if (json_object_get(st->batch, "restore") && st->stage != COPY_STAGE_READY) {
		step_restore(&c);
	} else if (abort_asked && !json_object_get(st->batch, "restore") && st->stage != COPY_STAGE_RESTART &&
		   st->stage != COPY_STAGE_READY) {
		start_restore(&c, "aborted on request", false);
	} else if (step_of[st->stage]) {
		step_of[st->stage](&c);
	}
	json_decref(saved);
}
