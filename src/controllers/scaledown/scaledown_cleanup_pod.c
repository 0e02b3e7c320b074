/* One claim set's cleanup pod, started and then acted on as it ends: a part of the planner (scaledown_plan.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "controllers/claim_names.h"
#include "controllers/scaledown/scaledown_plan_internal.h"
#include "util/duration.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* The pod's last termination message, or a description of how it failed. New string, raw. */
static char *failure_raw(const json_t *pod)
{
	size_t i;
	const json_t *cs;
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
		const char *msg = kube_obj_str(cs, "state.terminated.message");
		if (msg && *msg)
			return xstrdup(msg);
	}
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
		const json_t *term = json_object_get(json_object_get(cs, "state"), "terminated");
		const char *why = kube_obj_str(term, "reason");
		if (term)
			return xasprintf("container %s exited with code %lld (%s)", kube_obj_str(cs, "name"),
					 kube_obj_int(term, "exitCode", NULL, 0), why ? why : "no reason given");
	}
	const char *msg = kube_obj_str(pod, "status.message");
	const char *reason = kube_obj_str(pod, "status.reason");
	if (msg || reason)
		return xasprintf("%s%s%s", reason ? reason : "", reason && msg ? ": " : "", msg ? msg : "");
	return xstrdup("the pod failed without a message");
}

/*
 * failure_raw as the state, the status annotation and the Event quote it:
 * the container wrote it (the cleanup image is the user's), so one clean,
 * bounded line. New string.
 */
static char *failure_message(const json_t *pod)
{
	char *raw = failure_raw(pod);
	char *msg = text_sanitize(raw, TEXT_QUOTE_MAX);
	free(raw);
	return msg;
}

/*
 * Succeeded, and on its own: a pod deleted while it ran gets SIGTERM, and
 * a cleanup that exits 0 on it ends Succeeded half-way. So a pod being
 * deleted counts as succeeded only if its containers had all finished
 * before the deletion was asked for (deletionTimestamp minus its grace).
 */
static bool succeeded(const json_t *pod)
{
	if (strcmp(scaledown_pod_phase(pod), "Succeeded"))
		return false;
	if (!kube_obj_terminating(pod))
		return true;
	int64_t deadline = rfc3339_seconds(kube_obj_str(pod, "metadata.deletionTimestamp"));
	int64_t asked = deadline - kube_obj_int(pod, "metadata", "deletionGracePeriodSeconds", 0);
	int64_t finished = -1;
	size_t i;
	const json_t *cs;
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
		int64_t f = rfc3339_seconds(kube_obj_str(cs, "state.terminated.finishedAt"));
		if (f < 0)
			return false; /* not known to have finished: not known to have succeeded */
		if (f > finished)
			finished = f;
	}
	return deadline >= 0 && finished >= 0 && finished < asked;
}

/* Why the cleanup pod counts as failed (new string), or NULL while it may still succeed. */
static char *why_failed(struct plan *p, const struct ordinal *o)
{
	const char *phase = scaledown_pod_phase(o->cleanup);
	if (succeeded(o->cleanup))
		return NULL;
	if (!strcmp(phase, "Failed"))
		return failure_message(o->cleanup);
	if (!strcmp(phase, "Succeeded")) /* exited 0 on the SIGTERM of a deletion: cut short */
		return xstrdup("the cleanup pod was stopped (deleted) before it finished");
	if (kube_obj_terminating(o->cleanup))
		return xstrdup("the cleanup pod was deleted before it finished");
	int64_t created = rfc3339_seconds(kube_obj_str(o->cleanup, "metadata.creationTimestamp"));
	long long deadline = created < 0 ? LLONG_MAX : (long long)created * 1000 + p->req.timeout_ms;
	if (p->in->now_ms >= deadline)
		return xasprintf("the cleanup pod did not finish within %s (annotation %s)", p->timeout_text,
				 ANNOTATION_SCALEDOWN_TIMEOUT);
	scaledown_due_at(p, deadline);
	return NULL;
}

static json_t *state_with_failure(struct plan *p, const struct ordinal *o, const char *message)
{
	json_t *st = json_deep_copy(p->state);
	if (!json_is_object(json_object_get(st, "ordinals")))
		json_object_set_new(st, "ordinals", json_object());
	char at[32];
	/* Rounded up to the second RFC 3339 keeps: a retry never comes early. */
	time_t retry = (time_t)((p->in->now_ms + scaledown_backoff_ms(o->failures + 1) + 999) / 1000);
	struct tm tm;
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&retry, &tm));
	json_t *entry = json_pack("{s:i, s:s, s:s}", "failures", o->failures + 1, "lastPod",
				  kube_obj_str(o->cleanup, "metadata.uid"), "message", message);
	if (o->failures + 1 < p->req.max_attempts)
		json_object_set_new(entry, "retryAt", json_string(at));
	json_object_set_new(json_object_get(st, "ordinals"), o->key, entry);
	return st;
}

/* A delete of obj by its UID; gone or replaced (404, 409) means the cluster moved on. */
static void delete_step(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj)
{
	action_delete(a, what, r, obj);
	a->answers = ACTION_STALE_404 | ACTION_STALE_409;
}

/* Success: delete the claims it mounted, then the pod. Failure: record it, then delete the pod. */
bool scaledown_act_on_cleanup(struct plan *p, struct ordinal *o, struct action *a)
{
	const json_t *pod = o->cleanup;
	const char *pod_name = kube_obj_str(pod, "metadata.name");
	const char *pod_uid = kube_obj_str(pod, "metadata.uid");
	const char *last = kube_obj_str(o->entry, "lastPod");
	if (last && pod_uid && !strcmp(last, pod_uid)) {
		/* Its failure is on record: the pod goes. */
		if (!kube_obj_terminating(pod))
			delete_step(a, SCALEDOWN_DELETE_POD, &KUBE_PODS, pod);
		return a->verb != ACTION_NOTHING;
	}
	if (!strcmp(scaledown_pod_phase(pod), "Succeeded")) {
		json_t *mounted = kube_obj_annotation_json(pod, ANNOTATION_CLEANUP_CLAIMS);
		const struct claim *live = NULL;
		for (int i = 0; i < o->nclaims && !live; i++) {
			const struct claim *c = &o->claims[i];
			const char *uid = json_string_value(json_object_get(mounted, c->name));
			/* Only the very claim the pod mounted: one created since is not cleaned. */
			if (!c->terminating && uid && c->uid && !strcmp(uid, c->uid))
				live = c;
		}
		if (live && succeeded(pod)) {
			delete_step(a, SCALEDOWN_DELETE_CLAIM, &KUBE_PVCS, live->obj);
		} else if (!live && !kube_obj_terminating(pod)) {
			struct strbuf sb = STRBUF_INIT;
			const char *k;
			json_t *v;
			json_object_foreach(mounted, k, v)
				strbuf_appendf(&sb, "%s%s", sb.len ? ", " : "", k);
			delete_step(a, SCALEDOWN_DELETE_POD, &KUBE_PODS, pod);
			action_event(a, "Normal", "CleanupSucceeded",
				     "cleanup pod %s succeeded for ordinal %ld; claims %s deleted", pod_name, o->k,
				     sb.len ? sb.buf : "(none)");
			action_count(a, "stateful_operator_cleanups_succeeded_total", 1);
			strbuf_release(&sb);
		}
		json_decref(mounted);
		/* Claims gone and the pod going: done. Claims there but the pod was cut short: a failure, below. */
		if (a->verb != ACTION_NOTHING || !live)
			return a->verb != ACTION_NOTHING;
	}
	char *why = why_failed(p, o);
	/* Without a UID (the API server gives every pod one) a failure cannot be counted once. */
	if (!why || !pod_uid) {
		free(why);
		return false;
	}
	/* Recorded before the pod goes, so a crash in between counts it once. */
	json_t *st = state_with_failure(p, o, why);
	char *claims = scaledown_claim_list(o);
	int attempt = scaledown_pod_attempt(pod) > 0 ? scaledown_pod_attempt(pod) : o->failures + 1;
	char next[160];
	bool given_up = false;
	if (o->in_range) {
		snprintf(next, sizeof(next), "ordinal %ld is back in the StatefulSet: claims kept, no retry", o->k);
	} else if (o->failures + 1 >= p->req.max_attempts) {
		given_up = true;
		snprintf(next, sizeof(next), "gave up after %d failed attempts: claims kept, see annotation %s",
			 o->failures + 1, ANNOTATION_SCALEDOWN_STATUS);
	} else {
		snprintf(next, sizeof(next), "claims kept; retrying in %lds",
			 scaledown_backoff_ms(o->failures + 1) / 1000);
	}
	scaledown_record_state(p, a, SCALEDOWN_RECORD_FAILURE, st, scaledown_status_text(p, st));
	action_event(a, "Warning", "CleanupFailed",
		     "cleanup pod %s for ordinal %ld (attempt %d of %d, claims %s) failed: %s; %s", pod_name, o->k,
		     attempt, p->req.max_attempts, claims, why, next);
	action_count(a, "stateful_operator_cleanups_failed_total", 1);
	/* What the CleanupGivenUp alert watches: claims that stay until someone re-arms them. */
	if (given_up)
		action_count(a, "stateful_operator_cleanups_given_up_total", 1);
	free(claims);
	free(why);
	return true;
}

/* A copy of v when it is an object, else an empty one. New reference. */
static json_t *object_copy(const json_t *v)
{
	return json_is_object(v) ? json_deep_copy(v) : json_object();
}

/* The cleanup pod of o: the template, with its claims mounted and named in cleanup-claims. New reference. */
static json_t *cleanup_pod(const struct plan *p, const struct ordinal *o)
{
	json_t *labels = object_copy(kube_obj_labels(p->req.pod_template));
	json_t *annotations = object_copy(kube_obj_annotations(p->req.pod_template));
	json_object_set_new(labels, LABEL_CLEANUP_FOR, json_string(p->name));
	json_object_set_new(annotations, ANNOTATION_CLEANUP_ORDINAL, json_sprintf("%ld", o->k));
	json_object_set_new(annotations, ANNOTATION_CLEANUP_ATTEMPT, json_sprintf("%d", o->failures + 1));

	json_t *spec = json_deep_copy(json_object_get(p->req.pod_template, "spec"));
	json_t *volumes = json_object_get(spec, "volumes");
	if (!json_is_array(volumes)) {
		volumes = json_array();
		json_object_set_new(spec, "volumes", volumes);
	}
	json_t *claims = json_object();
	const json_t *templates = json_object_get(json_object_get(p->in->sts, "spec"), "volumeClaimTemplates");
	size_t i;
	const json_t *t;
	json_array_foreach(templates, i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		char *claim = tmpl ? set_claim_name(tmpl, p->name, o->k) : NULL;
		for (int c = 0; claim && c < o->nclaims; c++) {
			if (!strcmp(o->claims[c].name, claim) && !o->claims[c].terminating && o->claims[c].uid) {
				json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name", tmpl,
									 "persistentVolumeClaim", "claimName", claim));
				json_object_set_new(claims, claim, json_string(o->claims[c].uid));
			}
		}
		free(claim);
	}
	char *claims_text = json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS);
	json_object_set_new(annotations, ANNOTATION_CLEANUP_CLAIMS, json_string(claims_text));
	free(claims_text);
	json_decref(claims);

	char *pod_name = set_pod_name(p->name, o->k);
	json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:o}, s:o}", "apiVersion", "v1", "kind", "Pod",
				"metadata", "name", pod_name, "namespace", p->ns, "labels", labels, "annotations",
				annotations, "spec", spec);
	/*
	 * Owned, not controlled: the StatefulSet controller must not count it as
	 * one of its pods. Not owned while the set is being deleted: a foreground
	 * deletion has the garbage collector delete every dependent, a running
	 * cleanup pod included; the finalizer already makes sure it goes first.
	 */
	if (!p->deleting)
		json_object_set_new(json_object_get(pod, "metadata"), "ownerReferences",
				    json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "apps/v1", "kind", "StatefulSet",
					      "name", p->name, "uid", p->uid));
	free(pod_name);
	return pod;
}

/* The name is taken (409): by our pod made before a crash, or the set's own: the cluster moved on. */
void scaledown_start_cleanup(const struct plan *p, const struct ordinal *o, struct action *a)
{
	action_create(a, SCALEDOWN_CREATE_POD, &KUBE_PODS, cleanup_pod(p, o));
	a->answers = ACTION_STALE_409;
	char *claims = scaledown_claim_list(o);
	action_event(a, "Normal", "CleanupStarted",
		     "cleanup pod %s started for ordinal %ld (attempt %d of %d) on claims %s", a->name, o->k,
		     o->failures + 1, p->req.max_attempts, claims);
	free(claims);
	action_count(a, "stateful_operator_cleanups_started_total", 1);
}
