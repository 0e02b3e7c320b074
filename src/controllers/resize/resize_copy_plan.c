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
 * The objects it creates (new claims, copy Jobs) are built in
 * resize_copy_objects.c. While the StatefulSet is gone, the state lives on
 * the backup ConfigMap.
 * Every step checks what the cluster shows first, so repeating one after a
 * crash is harmless.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "controllers/resize/copy_script.h"
#include "controllers/resize/resize_copy_objects.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_plan_internal.h"
#include "util/duration.h"
#include "util/xalloc.h"
#include "client/kube_object.h"
#include "controllers/contract.h"

#define STEP_PREPARE "Prepare"
#define STEP_PRECOPY "Precopy"
#define STEP_STOP "Stop"
#define STEP_COPY "Copy"
#define STEP_SWAP "Swap"
#define STEP_RESTART "Restart"
#define STEP_READY "Ready"

#define MAX_WAIT_MS (10L * 60 * 1000)
/* A re-created claim not Bound after this long gets touched, so the PV controller looks again. */
#define BIND_NUDGE_AFTER_S 3

/* ---- small readers ---- */

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static const json_t *batch_of(const json_t *st)
{
	return json_object_get(st, "batch");
}

static const char *batch_step(const json_t *st)
{
	return json_string_value(json_object_get(batch_of(st), "step"));
}

static bool in_int_array(const json_t *arr, long long v)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x) if (json_integer_value(x) == v) return true;
	return false;
}

/* A copy of st whose batch step is step. New reference. */
static json_t *with_step(const json_t *st, const char *now, const char *step)
{
	json_t *n = plan_state_with(st, now, "phase", json_string(PHASE_COPYING));
	json_object_set_new(json_object_get(n, "batch"), "step", json_string(step));
	return n;
}

static const char *reclaim_policy(const json_t *pv)
{
	return kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy");
}

static const char *original_policy(const json_t *pv)
{
	return json_string_value(json_object_get(plan_annotations(pv), ANNOTATION_RECLAIM_POLICY));
}

static bool job_condition(const json_t *job, const char *type, const char **message)
{
	return kube_obj_condition(job, type, message);
}

static const char *claim_name(const json_t *vol)
{
	return json_string_value(json_object_get(vol, "claim"));
}

static const char *vol_str(const json_t *vol, const char *key)
{
	return json_string_value(json_object_get(vol, key));
}

/* ---- creating objects ---- */

static void act(struct resize_action *a, enum resize_step step, const char *what, const struct kube_resource *r,
		const char *object, json_t *body)
{
	a->step = step;
	a->what = what;
	a->resource = r;
	snprintf(a->object, sizeof(a->object), "%s", object ? object : "");
	a->body = body;
}

static void delete_object(struct resize_action *a, const char *what, const struct kube_resource *r,
			  const json_t *obj)
{
	act(a, RESIZE_DELETE, what, r, kube_obj_str(obj, "metadata.name"), NULL);
	snprintf(a->uid, sizeof(a->uid), "%s", str_or(kube_obj_str(obj, "metadata.uid"), ""));
	if (r == &KUBE_JOBS)
		a->propagation = "Background"; /* its pods go too */
}

/*
 * A merge patch of PV pv, decided on its cached state: the cached
 * resourceVersion is a precondition, so a stale decision conflicts (409,
 * retried on fresh state) instead of undoing what the PV controller just
 * did, e.g. a pre-binding written over a binding.
 */
static void patch_pv(struct resize_action *a, const char *what, const json_t *pv, json_t *body)
{
	const char *rv = kube_obj_str(pv, "metadata.resourceVersion");
	if (rv) {
		if (!json_is_object(json_object_get(body, "metadata")))
			json_object_set_new(body, "metadata", json_object());
		json_object_set_new(json_object_get(body, "metadata"), "resourceVersion", json_string(rv));
	}
	act(a, RESIZE_PATCH, what, &KUBE_PVS, kube_obj_str(pv, "metadata.name"), body);
	a->patch_type = KUBE_PATCH_MERGE;
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
	job_condition(job, "Failed", &cond);
	const char *name = kube_obj_str(job, "metadata.name");
	const char *said = NULL;
	size_t i;
	json_t *pod;
	json_array_foreach(in->pods, i, pod) {
		const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
		if (!streq(json_string_value(json_object_get(labels, "job-name")), name))
			continue;
		size_t k;
		json_t *cs;
		json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), k, cs) {
			const char *m = kube_obj_str(cs, "state.terminated.message");
			if (m && *m)
				said = m;
		}
	}
	char *msg = xasprintf("Job %s failed: %s%s%s", name, str_or(cond, "no reason given"), said ? "; " : "",
			      said ? said : "");
	/* One line for the status annotation. */
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return msg;
}

/* Marks the batch for restoring (reason recorded first, so it survives a crash). */
static void start_restore(const json_t *st, const char *now, const char *reason, bool failed,
			  struct resize_action *a)
{
	json_t *n = plan_state_with(st, now, "phase", json_string(PHASE_COPYING));
	json_t *batch = json_object_get(n, "batch");
	json_object_set_new(batch, "restore", json_string(reason));
	json_object_set_new(batch, "failed", json_boolean(failed));
	plan_set_state(a, n);
	if (failed)
		plan_event(a, "Warning", "CopyFailed", "%s; returning the replica to its original volume", reason);
	else
		plan_event(a, "Warning", "ResizeAborted",
			   "resize aborted on request; returning the replica in flight to its original volume");
	plan_status(a, "Restoring: %s", reason);
}

/*
 * Puts claim vol.claim on PV pv_name (requesting size), moving it off
 * whatever PV it is on now, with both PVs Retained before any claim is
 * deleted. Returns 1 when the claim is Bound to it and the PV has its own
 * reclaim policy back, 0 when an action was chosen, -1 when it cannot be
 * done (message in *why, new string).
 */
static int bind_claim(const struct resize_inputs *in, const char *ns, const char *sts, const char *now,
		      const json_t *vol, const char *pv_name, const char *size, struct resize_action *a, char **why)
{
	const char *x = claim_name(vol);
	const json_t *pv = plan_find(in->pvs, NULL, pv_name);
	const json_t *pvc = plan_find(in->pvcs, ns, x);
	if (!pv) {
		*why = xasprintf("PersistentVolume %s, which should hold %s, does not exist", pv_name, x);
		return -1;
	}
	if (pvc && streq(kube_obj_str(pvc, "spec.volumeName"), pv_name)) {
		if (!streq(kube_obj_str(pvc, "status.phase"), "Bound")) {
			/*
			 * The PV controller may have looked while its cache still
			 * showed the PV's old binding (FailedBinding); it would look
			 * again only at its next resync, up to 15 s later. Touching the
			 * claim makes it look now.
			 */
			const char *touched = json_string_value(json_object_get(plan_annotations(pvc), ANNOTATION_BIND_NUDGE));
			int64_t since = rfc3339_seconds(touched ? touched : kube_obj_str(pvc, "metadata.creationTimestamp"));
			int64_t t = rfc3339_seconds(now);
			if (since >= 0 && t >= since + BIND_NUDGE_AFTER_S && streq(kube_obj_str(pv, "spec.claimRef.name"), x)) {
				json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", ANNOTATION_BIND_NUDGE, now);
				act(a, RESIZE_PATCH, "NudgeBinding", &KUBE_PVCS, x, p);
				a->patch_type = KUBE_PATCH_MERGE;
				return 0;
			}
			plan_status(a, "Waiting for %s to bind to %s", x, pv_name);
			plan_wait(a, POLL_MS);
			return 0;
		}
		/* Bound where it belongs: its own policy back, and no mark left for anyone to trust later. */
		const char *orig = original_policy(pv);
		bool marked = json_object_get(plan_annotations(pv), ANNOTATION_TAKEN_FOR) != NULL;
		if ((orig && !streq(reclaim_policy(pv), orig)) || marked) {
			json_t *p = json_pack("{s:{s:{s:n, s:n}}, s:{s:s}}", "metadata", "annotations",
					      ANNOTATION_RECLAIM_POLICY, ANNOTATION_TAKEN_FOR, "spec",
					      "persistentVolumeReclaimPolicy",
					      str_or(orig, str_or(reclaim_policy(pv), "Delete")));
			patch_pv(a, "RestoreReclaimPolicy", pv, p);
			return 0;
		}
		return 1;
	}
	/*
	 * Invariant 1: every PV involved is Retain before any claim is deleted.
	 * The same patch marks it taken for this set: while the PV is still
	 * bound to the set's live claim, which the controller checks, so every
	 * later write can be checked against the mark.
	 */
	char *owner = xasprintf("%s/%s", ns, sts);
	const json_t *holders[2] = {pv, pvc ? plan_find(in->pvs, NULL, kube_obj_str(pvc, "spec.volumeName")) : NULL};
	for (int i = 0; i < 2; i++) {
		const json_t *h = holders[i];
		const char *taken = json_string_value(json_object_get(plan_annotations(h), ANNOTATION_TAKEN_FOR));
		if (h && (!streq(reclaim_policy(h), "Retain") || !streq(taken, owner))) {
			/* A policy recorded earlier stays: the PV may be Retained by us already. */
			const char *orig = str_or(original_policy(h), str_or(reclaim_policy(h), "Delete"));
			json_t *p = json_pack("{s:{s:{s:s, s:s}}, s:{s:s}}", "metadata", "annotations",
					      ANNOTATION_RECLAIM_POLICY, orig, ANNOTATION_TAKEN_FOR, owner, "spec",
					      "persistentVolumeReclaimPolicy", "Retain");
			patch_pv(a, "RetainVolume", h, p);
			free(owner);
			return 0;
		}
	}
	free(owner);
	/* Another claim holds the PV (the new claim of a copy): it goes first. */
	const char *holder = kube_obj_str(pv, "spec.claimRef.name");
	if (holder && !streq(holder, x) && streq(kube_obj_str(pv, "spec.claimRef.namespace"), ns)) {
		const json_t *other = plan_find(in->pvcs, ns, holder);
		if (other) {
			const json_t *labels = json_object_get(json_object_get(other, "metadata"), "labels");
			if (!json_object_get(labels, LABEL_COPY_OF)) {
				*why = xasprintf("PersistentVolume %s is held by claim %s, which the operator did not "
						 "create; it will not delete it",
						 pv_name, holder);
				return -1;
			}
			if (kube_obj_str(other, "metadata.deletionTimestamp")) {
				plan_wait(a, POLL_MS);
				return 0;
			}
			delete_object(a, "DeleteNewClaim", &KUBE_PVCS, other);
			return 0;
		}
	}
	if (pvc) {
		if (kube_obj_str(pvc, "metadata.deletionTimestamp")) {
			plan_status(a, "Waiting for claim %s to go", x);
			plan_wait(a, POLL_MS);
			return 0;
		}
		delete_object(a, "DeleteClaim", &KUBE_PVCS, pvc);
		plan_event(a, "Normal", "MovingClaim", "deleting claim %s (its volume %s is Retained) to bind %s to %s",
			   x, str_or(kube_obj_str(pvc, "spec.volumeName"), "none"), x, pv_name);
		return 0;
	}
	/*
	 * The PV names claim x with a UID other than the original claim's: the
	 * claim created here is already bound, only the claim cache has not
	 * seen it yet. Pre-binding now would undo that binding.
	 */
	const char *ref_uid = kube_obj_str(pv, "spec.claimRef.uid");
	const char *orig_uid = vol_str(vol, "uid");
	if (streq(kube_obj_str(pv, "spec.claimRef.name"), x) && ref_uid && orig_uid && *orig_uid &&
	    !streq(ref_uid, orig_uid)) {
		plan_wait(a, POLL_MS);
		return 0;
	}
	/* Pre-bound to the name (no uid), so no other claim can take the PV meanwhile. */
	if (!streq(kube_obj_str(pv, "spec.claimRef.name"), x) || ref_uid) {
		json_t *p = json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:n, s:n}}}", "spec", "claimRef", "apiVersion", "v1",
				      "kind", "PersistentVolumeClaim", "namespace", ns, "name", x, "uid",
				      "resourceVersion");
		patch_pv(a, "PrebindVolume", pv, p);
		return 0;
	}
	act(a, RESIZE_CREATE, "CreateClaim", &KUBE_PVCS, x, copy_rebound_claim(ns, vol, pv, size));
	plan_event(a, "Normal", "ClaimRebound", "re-created claim %s on PersistentVolume %s", x, pv_name);
	return 0;
}

/* ---- the steps ---- */

struct ctx;
static bool jobs_cleared(struct ctx *c);

struct ctx {
	const struct resize_inputs *in;
	const char *now;
	const json_t *st;
	const char *ns, *name; /* the StatefulSet's */
	long long total, done; /* replicas to copy, replicas copied: for the status */
	bool abort_asked;
	struct resize_action *a;
};

static void status_step(struct ctx *c, const char *what)
{
	const json_t *ords = json_object_get(batch_of(c->st), "ordinals");
	if (json_array_size(ords) == 1)
		plan_status(c->a, "Copying %lld/%lld: %s-%lld %s", c->done + 1, c->total, c->name,
			    (long long)json_integer_value(json_array_get(ords, 0)), what);
	else
		plan_status(c->a, "Copying %zu replicas (offline): %s", json_array_size(ords), what);
}

/* Records the replicas to copy and their volumes as the next batch; or moves on when none is left. */
static void choose_batch(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	const json_t *st = c->st;
	struct resize_action *a = c->a;
	if (!in->sts) {
		plan_wait(a, POLL_MS);
		return;
	}
	const json_t *all = json_object_get(st, "ordinals");
	const json_t *done = json_object_get(st, "done");
	json_t *ords = json_array();
	size_t i;
	json_t *o;
	json_array_foreach(all, i, o) {
		if (in_int_array(done, json_integer_value(o)))
			continue;
		json_array_append(ords, o);
		if (!json_is_true(json_object_get(st, "offline")))
			break; /* rolling: one replica */
	}
	if (!json_array_size(ords) && json_is_true(json_object_get(st, "templateUpdated"))) {
		json_t *n = plan_state_with(st, c->now, "phase", json_string(PHASE_CLEANING));
		json_object_set_new(n, "completed", json_string(c->now));
		plan_set_state(a, n);
		plan_event(a, "Normal", "VolumesCopied",
			   "every replica runs on its new volumes; the old volumes are kept (Retained) until %s",
			   json_integer_value(json_object_get(st, "keepOldSeconds")) ? "keep-old-volumes passes"
										: "they are deleted now");
		plan_status(a, "Deleting the old volumes");
		json_decref(ords);
		return;
	}
	/* Rolling: every replica Ready before the next goes down, so at most one is ever down. */
	long long replicas = plan_int_field(in->sts, "spec", "replicas", 1);
	long long start = plan_int_field(json_object_get(in->sts, "spec"), "ordinals", "start", 0);
	for (long long ord = start; ord < start + replicas; ord++) {
		char pod_name[512];
		snprintf(pod_name, sizeof(pod_name), "%s-%lld", c->name, ord);
		if (!plan_pod_ready(plan_find(in->pods, c->ns, pod_name))) {
			plan_status(a, "Copying %lld/%lld: waiting for %s to be Ready", c->done + 1, c->total, pod_name);
			plan_wait(a, POLL_MS);
			json_decref(ords);
			return;
		}
	}
	json_t *vols = json_array();
	json_array_foreach(ords, i, o) {
		const char *tmpl;
		json_t *size;
		json_object_foreach(json_object_get(st, "targets"), tmpl, size) {
			char *x = xasprintf("%s-%s-%lld", tmpl, c->name, (long long)json_integer_value(o));
			const json_t *pvc = plan_find(in->pvcs, c->ns, x);
			const char *pv_name = kube_obj_str(pvc, "spec.volumeName");
			if (pvc && (!streq(kube_obj_str(pvc, "status.phase"), "Bound") ||
				    !plan_find(in->pvs, NULL, pv_name))) {
				plan_status(a, "Waiting for %s to be Bound", x);
				plan_wait(a, POLL_MS);
				free(x);
				json_decref(vols);
				json_decref(ords);
				return;
			}
			if (pvc) {
				json_t *labels = json_object_get(json_object_get(pvc, "metadata"), "labels");
				json_t *v = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:O, s:O}", "claim", x, "uid",
						      str_or(kube_obj_str(pvc, "metadata.uid"), ""), "template", tmpl,
						      "ordinal", o, "oldPV", pv_name, "size",
						      str_or(kube_obj_str(pvc, "spec.resources.requests.storage"), "0"),
						      "accessModes",
						      json_object_get(json_object_get(pvc, "spec"), "accessModes"),
						      "labels", labels ? labels : json_null());
				const char *mode = kube_obj_str(pvc, "spec.volumeMode");
				if (mode)
					json_object_set_new(v, "volumeMode", json_string(mode));
				json_array_append_new(vols, v);
			}
			free(x);
		}
	}
	json_t *n = plan_state_with(st, c->now, "batch",
				    json_pack("{s:o, s:s, s:o}", "ordinals", ords, "step", STEP_PREPARE, "volumes", vols));
	json_object_set_new(n, "statefulSetUID", json_string(kube_obj_str(in->sts, "metadata.uid")));
	plan_set_state(a, n);
	c->st = n;
	status_step(c, "preparing the new volumes");
}

static void step_prepare(struct ctx *c)
{
	size_t i;
	json_t *vol;
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) {
		char *y = xasprintf("%s" TEMP_SUFFIX, claim_name(vol));
		const json_t *pvc = plan_find(c->in->pvcs, c->ns, y);
		const json_t *labels = json_object_get(json_object_get(pvc, "metadata"), "labels");
		const char *started = json_string_value(json_object_get(plan_annotations(pvc), ANNOTATION_RESIZE_STARTED));
		if (!pvc) {
			act(c->a, RESIZE_CREATE, "CreateNewClaim", &KUBE_PVCS, y, copy_new_claim(c->st, c->ns, c->name, vol));
			plan_event(c->a, "Normal", "CreatingVolume", "creating claim %s (%s, StorageClass %s) for the copy of %s", y,
				   json_string_value(json_object_get(json_object_get(c->st, "targets"), vol_str(vol, "template"))),
				   json_string_value(json_object_get(json_object_get(c->st, "classes"), vol_str(vol, "template"))),
				   claim_name(vol));
			status_step(c, "creating the new volumes");
		} else if (!json_object_get(labels, LABEL_COPY_OF)) {
			char *why = xasprintf("claim %s exists and was not created by the operator; rename or delete it", y);
			start_restore(c->st, c->now, why, true, c->a);
			free(why);
		} else if (!streq(started, plan_state_str(c->st, "started"))) {
			/* Left by an earlier resize: it holds nothing of ours. */
			if (kube_obj_str(pvc, "metadata.deletionTimestamp"))
				plan_wait(c->a, POLL_MS);
			else
				delete_object(c->a, "DeleteStaleClaim", &KUBE_PVCS, pvc);
		} else {
			free(y);
			continue;
		}
		free(y);
		return;
	}
	plan_set_state(c->a, with_step(c->st, c->now, json_is_true(json_object_get(c->st, "precopy")) ? STEP_PRECOPY : STEP_STOP));
	status_step(c, json_is_true(json_object_get(c->st, "precopy")) ? "first copy while running" : "stopping");
}

/*
 * Runs one Job per replica of the batch (pass "precopy", "full" or
 * "delta"). Returns true when all succeeded; otherwise an action is set.
 */
static bool run_jobs(struct ctx *c, const char *pass)
{
	const char *suffix = streq(pass, "precopy") ? "precopy" : "copy";
	size_t i;
	json_t *o;
	bool all = true;
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		long long ord = json_integer_value(o);
		char *name = copy_job_name(c->name, ord, suffix);
		const json_t *job = plan_find(c->in->jobs, c->ns, name);
		const char *started = json_string_value(json_object_get(plan_annotations(job), ANNOTATION_RESIZE_STARTED));
		json_t *vols = volumes_of(c->st, ord);
		if (!json_array_size(vols)) {
			json_decref(vols);
			free(name);
			continue; /* this replica has no claim to copy */
		}
		if (job && !streq(started, plan_state_str(c->st, "started"))) {
			delete_object(c->a, "DeleteStaleJob", &KUBE_JOBS, job);
		} else if (!job) {
			act(c->a, RESIZE_CREATE, streq(pass, "precopy") ? "CreatePrecopyJob" : "CreateCopyJob", &KUBE_JOBS,
			    name, copy_job(c->in, c->st, c->ns, c->name, ord, pass, vols));
			plan_event(c->a, "Normal", "CopyStarted", "Job %s copies %s-%lld's volumes (pass %s)", name, c->name,
				   ord, pass);
			status_step(c, streq(pass, "precopy") ? "first copy while running" : "copying");
		} else if (job_condition(job, "Failed", NULL)) {
			char *why = job_failure(c->in, job);
			start_restore(c->st, c->now, why, true, c->a);
			free(why);
		} else if (job_condition(job, "Complete", NULL)) {
			json_decref(vols);
			free(name);
			continue;
		} else {
			all = false;
			json_decref(vols);
			free(name);
			continue;
		}
		json_decref(vols);
		free(name);
		return false;
	}
	if (!all) {
		status_step(c, streq(pass, "precopy") ? "first copy while running" : "copying and verifying");
		plan_wait(c->a, POLL_MS);
	}
	return all;
}

static void step_precopy(struct ctx *c)
{
	if (!run_jobs(c, "precopy"))
		return;
	plan_set_state(c->a, with_step(c->st, c->now, STEP_STOP));
	status_step(c, "stopping");
}

static void step_stop(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	if (in->sts) {
		const char *uid = kube_obj_str(in->sts, "metadata.uid");
		if (kube_obj_str(in->sts, "metadata.deletionTimestamp")) {
			plan_wait(c->a, POLL_MS); /* the garbage collector is orphaning the pods */
			return;
		}
		json_t *saved = in->backup ? plan_saved_statefulset(in->backup) : NULL;
		json_t *saved_state = saved ? plan_state_of(saved) : NULL;
		if (saved_state && streq(plan_state_str(saved_state, "statefulSetUID"), uid)) {
			c->a->step = RESIZE_ORPHAN_DELETE;
			snprintf(c->a->uid, sizeof(c->a->uid), "%s", uid);
			plan_event(c->a, "Normal", "OrphanDeleting",
				   "deleting the StatefulSet with propagationPolicy Orphan (the other pods keep "
				   "running) to take down the replicas being copied");
			status_step(c, "stopping");
		} else if (in->backup) {
			c->a->step = RESIZE_DELETE_BACKUP; /* a stale copy: make room for ours */
		} else {
			c->a->step = RESIZE_SAVE;
			c->a->state = plan_state_with(c->st, c->now, "phase", json_string(PHASE_COPYING));
			status_step(c, "saving the StatefulSet");
		}
		json_decref(saved_state);
		json_decref(saved);
		return;
	}
	size_t i;
	json_t *o;
	bool stopping = false; /* every pod is told to stop before any is waited for */
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		char pod_name[512];
		snprintf(pod_name, sizeof(pod_name), "%s-%lld", c->name, (long long)json_integer_value(o));
		const json_t *pod = plan_find(in->pods, c->ns, pod_name);
		if (!pod)
			continue;
		if (kube_obj_str(pod, "metadata.deletionTimestamp")) {
			stopping = true;
			continue;
		}
		delete_object(c->a, "StopPod", &KUBE_PODS, pod);
		plan_event(c->a, "Normal", "StoppingReplica", "stopping %s to copy its volumes", pod_name);
		status_step(c, "stopping");
		return;
	}
	if (stopping) {
		status_step(c, "waiting for the pods to stop");
		plan_wait(c->a, POLL_MS);
		return;
	}
	plan_set_state(c->a, with_step(c->st, c->now, STEP_COPY));
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
		char *job = copy_job_name(c->name, json_integer_value(o), "copy");
		json_array_foreach(c->in->pods, k, pod) {
			const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
			if (!streq(json_string_value(json_object_get(labels, "job-name")), job) ||
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
		plan_wait(c->a, POLL_MS); /* not ours to copy under: the set is back (see restore) */
		return;
	}
	if (!run_jobs(c, json_is_true(json_object_get(c->st, "precopy")) ? "delta" : "full"))
		return;
	/* Verified: record each new PV, needed to restore if anything fails later. */
	json_t *n = with_step(c->st, c->now, STEP_SWAP);
	size_t i;
	json_t *vol;
	json_array_foreach(json_object_get(json_object_get(n, "batch"), "volumes"), i, vol) {
		char *y = xasprintf("%s" TEMP_SUFFIX, claim_name(vol));
		const json_t *temp = plan_find(c->in->pvcs, c->ns, y);
		const char *pv = kube_obj_str(temp, "spec.volumeName");
		if (pv)
			json_object_set_new(vol, "newPV", json_string(pv));
		if (kube_obj_str(temp, "metadata.uid"))
			json_object_set_new(vol, "newClaimUID", json_string(kube_obj_str(temp, "metadata.uid")));
		free(y);
	}
	plan_set_state(c->a, n);
	c->a->counts_copy = (int)json_array_size(json_object_get(batch_of(c->st), "ordinals"));
	long long files = -1;
	c->a->copied_bytes = copied(c, &files);
	char totals[96] = "the Jobs reported no totals";
	if (files >= 0)
		snprintf(totals, sizeof(totals), "%lld bytes in %lld files", c->a->copied_bytes, files);
	char *ords = json_dumps(json_object_get(batch_of(c->st), "ordinals"), JSON_COMPACT);
	plan_event(c->a, "Normal", "CopyVerified",
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
		const json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
		if (!streq(json_string_value(json_object_get(labels, LABEL_COPY_OF)), c->name))
			continue;
		if (kube_obj_str(o, "metadata.deletionTimestamp"))
			plan_wait(c->a, POLL_MS);
		else
			delete_object(c->a, "DeleteCopyJob", &KUBE_JOBS, o);
		return false;
	}
	json_array_foreach(c->in->pods, i, o) {
		const json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
		if (streq(json_string_value(json_object_get(labels, LABEL_COPY_OF)), c->name)) {
			plan_wait(c->a, POLL_MS);
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
	struct resize_action waiting;
	memset(&waiting, 0, sizeof(waiting));
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) {
		const char *pv = vol_str(vol, "newPV");
		const char *size =
			json_string_value(json_object_get(json_object_get(c->st, "targets"), vol_str(vol, "template")));
		char *why = NULL;
		struct resize_action one;
		memset(&one, 0, sizeof(one));
		int r = pv ? bind_claim(c->in, c->ns, c->name, c->now, vol, pv, str_or(size, "0"), &one, &why) : -1;
		if (r == 1) {
			resize_action_release(&one);
			continue;
		}
		if (r < 0) {
			resize_action_release(&one);
			resize_action_release(&waiting);
			char *msg = why ? why : xasprintf("the new claim of %s is not bound to a volume", claim_name(vol));
			start_restore(c->st, c->now, msg, true, c->a);
			free(msg);
			return;
		}
		if (one.step == RESIZE_WAIT) {
			if (waiting.step == RESIZE_WAIT)
				resize_action_release(&one);
			else
				waiting = one;
			continue;
		}
		resize_action_release(&waiting);
		resize_action_release(c->a);
		*c->a = one;
		status_step(c, "swapping volumes");
		return;
	}
	if (waiting.step == RESIZE_WAIT) {
		resize_action_release(c->a);
		*c->a = waiting;
		return;
	}
	/* The old PVs, Retained, are labelled with the StatefulSet until they are deleted. */
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) {
		const json_t *pv = plan_find(c->in->pvs, NULL, vol_str(vol, "oldPV"));
		const json_t *labels = json_object_get(json_object_get(pv, "metadata"), "labels");
		if (!pv || streq(json_string_value(json_object_get(labels, LABEL_OLD_VOLUME)), c->name))
			continue;
		char *claim = xasprintf("%s/%s", c->ns, claim_name(vol));
		json_t *p = json_pack("{s:{s:{s:s}, s:{s:s}}}", "metadata", "labels", LABEL_OLD_VOLUME, c->name,
				      "annotations", ANNOTATION_OLD_CLAIM, claim);
		free(claim);
		patch_pv(c->a, "LabelOldVolume", pv, p);
		return;
	}
	json_t *n = with_step(c->st, c->now, STEP_RESTART);
	json_t *old = json_object_get(n, "oldVolumes");
	if (!json_is_array(old)) {
		old = json_array();
		json_object_set_new(n, "oldVolumes", old);
	}
	json_array_foreach(json_object_get(batch_of(c->st), "volumes"), i, vol) json_array_append(old, json_object_get(vol, "oldPV"));
	plan_set_state(c->a, n);
	status_step(c, "starting again");
}

/* True when no replica is left to copy after this batch: the template changes with this re-create. */
static bool last_batch(const json_t *st)
{
	const json_t *batch = batch_of(st);
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(st, "ordinals"), i, o) {
		long long ord = json_integer_value(o);
		if (!in_int_array(json_object_get(st, "done"), ord) && !in_int_array(json_object_get(batch, "ordinals"), ord))
			return false;
	}
	return !json_object_get(batch, "restore");
}

static void step_restart(struct ctx *c)
{
	if (c->in->sts) {
		plan_set_state(c->a, with_step(c->st, c->now, STEP_READY));
		return;
	}
	bool last = last_batch(c->st);
	c->a->step = RESIZE_RECREATE;
	c->a->state = with_step(c->st, c->now, STEP_READY);
	if (last)
		json_object_set_new(c->a->state, "templateUpdated", json_true());
	c->a->new_template = last;
	c->a->keep_abort = c->abort_asked;
	plan_event(c->a, "Normal", "StatefulSetRecreated", "re-created the StatefulSet from its saved copy%s",
		   last ? " with the new volume template" : "");
	status_step(c, "starting again");
}

/* The batch is done (or restored): pods Ready and adopted, Jobs and the saved copy gone. */
static void step_ready(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	if (!in->sts) {
		plan_wait(c->a, POLL_MS);
		return;
	}
	const char *uid = kube_obj_str(in->sts, "metadata.uid");
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(batch_of(c->st), "ordinals"), i, o) {
		char pod_name[512];
		snprintf(pod_name, sizeof(pod_name), "%s-%lld", c->name, (long long)json_integer_value(o));
		const json_t *pod = plan_find(in->pods, c->ns, pod_name);
		bool owned = false;
		size_t k;
		json_t *ref;
		json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), k, ref)
			owned |= streq(kube_obj_str(ref, "uid"), uid);
		if (!owned || !plan_pod_ready(pod)) {
			status_step(c, "waiting for the pod to be Ready");
			plan_wait(c->a, POLL_MS);
			return;
		}
	}
	if (!jobs_cleared(c))
		return;
	if (in->backup) {
		c->a->step = RESIZE_DELETE_BACKUP;
		return;
	}
	const json_t *batch = batch_of(c->st);
	json_t *n = plan_state_with(c->st, c->now, "statefulSetUID", json_string(uid));
	json_object_del(n, "batch");
	const char *restored = json_string_value(json_object_get(batch, "restore"));
	if (restored && json_is_true(json_object_get(batch, "failed"))) {
		json_object_set_new(n, "phase", json_string(PHASE_FAILED));
		json_object_set_new(n, "message", json_string(restored));
		plan_set_state(c->a, n);
		plan_event(c->a, "Warning", "ResizeFailed",
			   "%s; the replica runs on its original volume again%s", restored,
			   json_array_size(json_object_get(c->st, "oldVolumes"))
				   ? "; replicas copied before keep their new volumes, their old ones stay Retained"
				   : "");
		plan_status(c->a, "Failed: %s", restored);
		return;
	}
	if (restored) {
		json_object_set_new(n, "phase", json_string(PHASE_CLEANING));
		json_object_set_new(n, "completed", json_string(c->now));
		json_object_set_new(n, "aborted", json_true());
		plan_set_state(c->a, n);
		plan_status(c->a, "Aborted; deleting the old volumes of replicas already copied");
		return;
	}
	json_t *done = json_object_get(n, "done");
	if (!json_is_array(done)) {
		done = json_array();
		json_object_set_new(n, "done", done);
	}
	json_array_foreach(json_object_get(batch, "ordinals"), i, o) json_array_append(done, o);
	plan_set_state(c->a, n);
	char *list = json_dumps(json_object_get(batch, "ordinals"), JSON_COMPACT);
	plan_event(c->a, "Normal", "ReplicaCopied", "replica(s) %s of %s run on their new volumes", list, c->name);
	free(list);
	c->done += (long long)json_array_size(json_object_get(batch, "ordinals"));
	plan_status(c->a, "Copying %lld/%lld: done", c->done, c->total);
}

/* Abort or failure: the batch goes back to its original volumes, then the StatefulSet comes back. */
static void step_restore(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	const json_t *batch = batch_of(c->st);
	size_t i;
	/* A failed Job goes too (its message is in the Event and the status): its pods hold the claims. */
	if (!jobs_cleared(c)) {
		plan_status(c->a, "Restoring: %s", json_string_value(json_object_get(batch, "restore")));
		return;
	}
	json_t *vol;
	json_array_foreach(json_object_get(batch, "volumes"), i, vol) {
		const json_t *pvc = plan_find(in->pvcs, c->ns, claim_name(vol));
		/* Before the swap began the original claim is untouched: nothing to rebind. */
		if (pvc && streq(kube_obj_str(pvc, "spec.volumeName"), vol_str(vol, "oldPV")) &&
		    !original_policy(plan_find(in->pvs, NULL, vol_str(vol, "oldPV"))))
			continue;
		char *why = NULL;
		int r = bind_claim(in, c->ns, c->name, c->now, vol, vol_str(vol, "oldPV"), str_or(vol_str(vol, "size"), "0"), c->a,
				   &why);
		if (r == 1)
			continue;
		if (r < 0) {
			/* Nothing else is safe to do: stop and say so; every PV is still there. */
			c->a->step = RESIZE_WAIT;
			c->a->requeue_ms = MAX_WAIT_MS;
			plan_event(c->a, "Warning", "RestoreBlocked", "cannot return %s to its volume: %s",
				   claim_name(vol), why);
			plan_status(c->a, "Restoring: blocked: %s", why);
			free(why);
		}
		return;
	}
	/* The new claims and their volumes go: they hold only a copy. */
	json_array_foreach(json_object_get(batch, "volumes"), i, vol) {
		char *y = xasprintf("%s" TEMP_SUFFIX, claim_name(vol));
		const json_t *temp = plan_find(in->pvcs, c->ns, y);
		const json_t *new_pv = plan_find(in->pvs, NULL, vol_str(vol, "newPV"));
		if (!new_pv && temp)
			new_pv = plan_find(in->pvs, NULL, kube_obj_str(temp, "spec.volumeName"));
		/*
		 * Pre-bound to the original name (no UID) it would stay Available,
		 * never reclaimed: point it back at the deleted new claim, so it is
		 * Released and its own policy reclaims it.
		 */
		const char *temp_uid = vol_str(vol, "newClaimUID");
		if (new_pv && temp_uid && streq(kube_obj_str(new_pv, "spec.claimRef.name"), claim_name(vol)) &&
		    !kube_obj_str(new_pv, "spec.claimRef.uid")) {
			json_t *p = json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "spec", "claimRef", "apiVersion", "v1",
					      "kind", "PersistentVolumeClaim", "namespace", c->ns, "name", y, "uid", temp_uid);
			patch_pv(c->a, "ReleaseNewVolume", new_pv, p);
			free(y);
			return;
		}
		free(y);
		const char *orig = original_policy(new_pv);
		if (new_pv && orig && !streq(reclaim_policy(new_pv), orig)) {
			/* Its last write: the mark goes with it. */
			json_t *p = json_pack("{s:{s:{s:n, s:n}}, s:{s:s}}", "metadata", "annotations",
					      ANNOTATION_RECLAIM_POLICY, ANNOTATION_TAKEN_FOR, "spec",
					      "persistentVolumeReclaimPolicy", orig);
			patch_pv(c->a, "RestoreReclaimPolicy", new_pv, p);
			return;
		}
		const json_t *temp_labels = json_object_get(json_object_get(temp, "metadata"), "labels");
		if (temp && json_object_get(temp_labels, LABEL_COPY_OF) &&
		    !kube_obj_str(temp, "metadata.deletionTimestamp")) {
			delete_object(c->a, "DeleteNewClaim", &KUBE_PVCS, temp);
			return;
		}
	}
	if (!in->sts) {
		c->a->step = RESIZE_RECREATE;
		c->a->state = with_step(c->st, c->now, STEP_READY);
		/* An abort asked on the ConfigMap stays asked: the resize must not start again. */
		c->a->keep_abort = !json_is_true(json_object_get(batch, "failed"));
		plan_event(c->a, "Normal", "StatefulSetRecreated",
			   "re-created the StatefulSet from its saved copy, unchanged; the replica runs on its "
			   "original volume");
		plan_status(c->a, "Restoring: starting again");
		return;
	}
	if (kube_obj_str(in->sts, "metadata.deletionTimestamp")) {
		plan_wait(c->a, POLL_MS);
		return;
	}
	plan_set_state(c->a, with_step(c->st, c->now, STEP_READY));
	plan_status(c->a, "Restoring: waiting for the replica");
}

/* After the last batch: the old volumes go once keep-old-volumes has passed. */
static void step_cleaning(struct ctx *c)
{
	const struct resize_inputs *in = c->in;
	int64_t keep = json_integer_value(json_object_get(c->st, "keepOldSeconds"));
	int64_t completed = rfc3339_seconds(plan_state_str(c->st, "completed"));
	int64_t now = rfc3339_seconds(c->now);
	if (keep > 0 && completed >= 0 && now >= 0 && now < completed + keep) {
		long ms = (long)((completed + keep - now) * 1000);
		plan_status(c->a, "Completed; old volumes kept until %s + %llds", plan_state_str(c->st, "completed"),
			    (long long)keep);
		plan_wait(c->a, ms > MAX_WAIT_MS ? MAX_WAIT_MS : ms);
		return;
	}
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(c->st, "oldVolumes"), i, o) {
		const json_t *pv = plan_find(in->pvs, NULL, json_string_value(o));
		if (!pv)
			continue;
		const char *orig = original_policy(pv);
		if (kube_obj_str(pv, "spec.claimRef.name") &&
		    plan_find(in->pvcs, kube_obj_str(pv, "spec.claimRef.namespace"),
			      kube_obj_str(pv, "spec.claimRef.name")) &&
		    streq(kube_obj_str(pv, "status.phase"), "Bound")) {
			continue; /* bound again (a restore): not old any more */
		}
		if (orig && !streq(orig, "Retain") && streq(reclaim_policy(pv), "Retain")) {
			/* Its own policy back (the last write, so the mark goes): the PV controller reclaims it. */
			json_t *p = json_pack("{s:{s:{s:n, s:n}}, s:{s:s}}", "metadata", "annotations",
					      ANNOTATION_RECLAIM_POLICY, ANNOTATION_TAKEN_FOR, "spec",
					      "persistentVolumeReclaimPolicy", orig);
			patch_pv(c->a, "DeleteOldVolume", pv, p);
			plan_event(c->a, "Normal", "DeletingOldVolume",
				   "old volume %s: reclaim policy %s restored, so it is deleted", json_string_value(o), orig);
			return;
		}
		if (streq(reclaim_policy(pv), "Retain")) {
			/* Retain was the user's own policy: the PV object goes, the storage stays. */
			if (kube_obj_str(pv, "metadata.deletionTimestamp")) {
				plan_wait(c->a, POLL_MS);
				return;
			}
			delete_object(c->a, "DeleteOldVolume", &KUBE_PVS, pv);
			return;
		}
		plan_status(c->a, "Waiting for old volume %s to be reclaimed", json_string_value(o));
		plan_wait(c->a, POLL_MS);
		return;
	}
	c->a->step = RESIZE_FINISH;
	if (json_is_true(json_object_get(c->st, "aborted")))
		plan_event(c->a, "Warning", "ResizeAborted",
			   "resize aborted; replicas copied before the abort keep their new volumes, the others "
			   "their original ones; the StatefulSet template is unchanged");
	else
		plan_event(c->a, "Normal", "ResizeCompleted",
			   "volumes moved by copy; the StatefulSet carries the new template and owns its pods");
}

void copy_plan_start(const struct resize_inputs *in, const char *now, const struct resize_request *req,
		     json_t *targets, json_t *classes, struct resize_action *a)
{
	if (!in->pvs) {
		a->step = RESIZE_REFUSE;
		plan_event(a, "Warning", "ResizeCopyNotAvailable",
			   "the copy strategy rebinds PersistentVolumes, which this operator cannot read "
			   "(namespace scope); run it with cluster RBAC");
		return;
	}
	const char *name = kube_obj_str(in->sts, "metadata.name");
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	long long replicas = plan_int_field(in->sts, "spec", "replicas", 1);
	long long start = plan_int_field(json_object_get(in->sts, "spec"), "ordinals", "start", 0);
	/* The replicas that have a claim to move, highest ordinal first. */
	json_t *ords = json_array();
	for (long long ord = start + replicas - 1; ord >= start; ord--) {
		const char *tmpl;
		json_t *v;
		bool any = false;
		json_object_foreach(targets, tmpl, v) {
			char *x = xasprintf("%s-%s-%lld", tmpl, name, ord);
			any |= plan_find(in->pvcs, ns, x) != NULL;
			free(x);
		}
		if (any)
			json_array_append_new(ords, json_integer(ord));
	}
	json_t *st = json_pack("{s:s, s:s, s:O, s:O, s:s, s:s, s:s, s:s, s:b, s:b, s:s, s:I, s:I, s:o}", "phase",
			       PHASE_COPYING, "strategy", "copy", "targets", targets, "classes", classes,
			       "statefulSetUID", kube_obj_str(in->sts, "metadata.uid"), "started", now, "updated", now,
			       "image", str_or(req->copy_image, str_or(in->copy_image, "")), "offline", req->offline,
			       "precopy", req->precopy, "mode", req->offline ? "offline" : "rolling", "timeoutSeconds",
			       (json_int_t)((req->copy_timeout_ms + 999) / 1000), "keepOldSeconds",
			       (json_int_t)(req->keep_old_ms / 1000), "ordinals", ords);
	if (req->copy_resources)
		json_object_set_new(st, "resources", json_loads(req->copy_resources, 0, NULL));
	if (req->copy_pod_annotations)
		json_object_set_new(st, "podAnnotations", json_loads(req->copy_pod_annotations, 0, NULL));
	/*
	 * The workload's tolerations, for the copy Jobs: a volume bound to a
	 * tainted (dedicated) node is copied there. Kept in the state because
	 * the StatefulSet is orphan-deleted while its replicas are copied.
	 */
	const json_t *tolerations = json_object_get(
		json_object_get(json_object_get(json_object_get(in->sts, "spec"), "template"), "spec"), "tolerations");
	if (json_is_array(tolerations) && json_array_size(tolerations))
		json_object_set(st, "tolerations", (json_t *)tolerations);
	plan_set_state(a, st);
	char *list = json_dumps(targets, JSON_COMPACT);
	char *cls = json_dumps(classes, JSON_COMPACT);
	plan_event(a, "Normal", "ResizeStarted", "resizing volumes by copy (%s%s): %s, StorageClass %s",
		   req->offline ? "offline" : "rolling", req->precopy ? ", precopy" : "", list, cls);
	plan_status(a, "Copying");
	free(cls);
	free(list);
}

void copy_plan(const struct resize_inputs *in, const char *now, bool abort_asked, const json_t *st,
	       struct resize_action *a)
{
	const json_t *meta_of = in->sts ? in->sts : NULL;
	json_t *saved = NULL;
	if (!meta_of && in->backup)
		meta_of = saved = plan_saved_statefulset(in->backup);
	struct ctx c = {
		.in = in,
		.now = now,
		.st = st,
		.ns = meta_of ? kube_obj_str(meta_of, "metadata.namespace") : NULL,
		.name = meta_of ? kube_obj_str(meta_of, "metadata.name") : NULL,
		.total = (long long)json_array_size(json_object_get(st, "ordinals")),
		.done = (long long)json_array_size(json_object_get(st, "done")),
		.abort_asked = abort_asked,
		.a = a,
	};
	const char *phase = plan_state_str(st, "phase");
	const char *step = batch_step(st);
	const json_t *batch = batch_of(st);
	if (!c.ns || !c.name) {
		/* Nothing to act on. */
	} else if (streq(phase, PHASE_CLEANING)) {
		if (in->sts)
			step_cleaning(&c);
	} else if (!streq(phase, PHASE_COPYING)) {
		/* Failed: handled by the caller. */
	} else if (!batch) {
		if (abort_asked && in->sts) {
			json_t *n = plan_state_with(st, now, "phase", json_string(PHASE_CLEANING));
			json_object_set_new(n, "completed", json_string(now));
			json_object_set_new(n, "aborted", json_true());
			plan_set_state(a, n);
			plan_status(a, "Aborted; deleting the old volumes of replicas already copied");
		} else {
			choose_batch(&c);
		}
	} else if (json_object_get(batch, "restore") && !streq(step, STEP_READY)) {
		step_restore(&c);
	} else if (abort_asked && !json_object_get(batch, "restore") && !streq(step, STEP_RESTART) &&
		   !streq(step, STEP_READY)) {
		start_restore(st, now, "aborted on request", false, a);
	} else if (streq(step, STEP_PREPARE)) {
		step_prepare(&c);
	} else if (streq(step, STEP_PRECOPY)) {
		step_precopy(&c);
	} else if (streq(step, STEP_STOP)) {
		step_stop(&c);
	} else if (streq(step, STEP_COPY)) {
		step_copy(&c);
	} else if (streq(step, STEP_SWAP)) {
		step_swap(&c);
	} else if (streq(step, STEP_RESTART)) {
		step_restart(&c);
	} else if (streq(step, STEP_READY)) {
		step_ready(&c);
	}
	json_decref(saved);
}
