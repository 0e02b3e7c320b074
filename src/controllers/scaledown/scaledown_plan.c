#include "controllers/scaledown/scaledown_plan.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_client.h"
#include "client/kube_object.h"
#include "client/label_selector.h"
#include "controllers/resize/resize_state.h"
#include "controllers/scaledown/scaledown_names.h"
#include "controllers/scaledown/scaledown_request.h"
#include "util/duration.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

long scaledown_backoff_ms(int failures)
{
	long ms = SCALEDOWN_BACKOFF_BASE_MS;
	for (int i = 1; i < failures && ms < SCALEDOWN_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < SCALEDOWN_BACKOFF_MAX_MS ? ms : SCALEDOWN_BACKOFF_MAX_MS;
}

/* ---- reading the cluster ---- */

static bool has_finalizer(const json_t *obj, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, v) {
		if (json_string_value(v) && !strcmp(json_string_value(v), name))
			return true;
	}
	return false;
}

static bool has_controller(const json_t *obj)
{
	size_t i;
	const json_t *ref;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref) {
		if (json_is_true(json_object_get(ref, "controller")))
			return true;
	}
	return false;
}

/* "1h", "90s", "1500ms": a timeout as the user wrote it, near enough. */
static void format_duration(long long ms, char *buf, size_t len)
{
	if (ms % 3600000 == 0)
		snprintf(buf, len, "%lldh", ms / 3600000);
	else if (ms % 60000 == 0)
		snprintf(buf, len, "%lldm", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%llds", ms / 1000);
	else
		snprintf(buf, len, "%lldms", ms);
}

/* ---- the claim sets ---- */

struct claim {
	const json_t *obj;
	const char *name;
	const char *uid;
	bool terminating;
};

enum set_state {
	SET_IDLE,       /* nothing to do: in range, cleaned, or no claim left */
	SET_CLEANING,   /* our cleanup pod exists */
	SET_RETRY_WAIT, /* a failure recorded; next attempt after retryAt */
	SET_GAVE_UP,    /* max attempts failed: claims kept */
	SET_POD_LEFT,   /* a pod not ours holds the name (being stopped by the StatefulSet, or foreign) */
	SET_STOP,       /* StatefulSet deletion: its own pod must go first */
	SET_STOPPING,   /* ...and is going */
	SET_LEFT_ALONE, /* StatefulSet deletion: a pod it does not control holds the name */
	SET_READY,      /* a cleanup pod may start */
};

struct ordinal {
	long k;
	char key[16];         /* k as a key of the state's "ordinals" */
	struct claim *claims; /* one per volumeClaimTemplate that has a claim */
	int nclaims, nlive;
	const json_t *cleanup; /* our cleanup pod */
	const json_t *other;   /* another pod named <sts>-<k> */
	bool in_range;
	const json_t *entry; /* scaledown-state for k, or NULL */
	int failures;
	enum set_state state;
	bool queued; /* READY or STOP but no free slot */
};

struct plan {
	const struct scaledown_inputs *in;
	const char *ns, *name, *uid;
	struct scaledown_request req;
	bool may_start; /* a valid template: new cleanups may start */
	bool deleting;
	json_t *state;        /* scaledown-state as read (new reference, an object) */
	struct ordinal *ords; /* sorted highest first */
	size_t nords;
	long long deadline_ms; /* the nearest time something is due, or LLONG_MAX */
	char timeout_text[32];
};

static struct ordinal *ordinal_get(struct plan *p, long k, int ntemplates)
{
	for (size_t i = 0; i < p->nords; i++)
		if (p->ords[i].k == k)
			return &p->ords[i];
	p->ords = xrealloc(p->ords, (p->nords + 1) * sizeof(*p->ords));
	struct ordinal *o = &p->ords[p->nords++];
	memset(o, 0, sizeof(*o));
	o->k = k;
	snprintf(o->key, sizeof(o->key), "%ld", k);
	o->claims = xcalloc((size_t)(ntemplates > 0 ? ntemplates : 1), sizeof(*o->claims));
	return o;
}

static int by_ordinal_desc(const void *a, const void *b)
{
	long x = ((const struct ordinal *)a)->k, y = ((const struct ordinal *)b)->k;
	return x < y ? 1 : x > y ? -1 : 0;
}

static void collect(struct plan *p)
{
	const json_t *spec = json_object_get(p->in->sts, "spec");
	const json_t *templates = json_object_get(spec, "volumeClaimTemplates");
	int ntemplates = (int)json_array_size(templates);
	/* The StatefulSet controller puts the selector's matchLabels on the claims it makes. */
	const json_t *ml = json_object_get(json_object_get(spec, "selector"), "matchLabels");
	json_t *claim_selector = json_object_size(ml) ? json_pack("{s:O}", "matchLabels", ml) : NULL;
	size_t i, j;
	const json_t *t, *o;
	json_array_foreach(templates, j, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		if (!tmpl)
			continue;
		char *prefix = scaledown_claim_prefix(tmpl, p->name);
		json_array_foreach(p->in->pvcs, i, o) {
			const char *ns = kube_obj_str(o, "metadata.namespace");
			long k = (long)kube_name_ordinal(kube_obj_str(o, "metadata.name"), prefix);
			if (k < 0 || (ns && strcmp(ns, p->ns)))
				continue;
			if (claim_selector && !label_selector_matches(claim_selector, kube_obj_labels(o)))
				continue; /* same name, someone else's claim */
			struct ordinal *ord = ordinal_get(p, k, ntemplates);
			struct claim *c = &ord->claims[ord->nclaims++];
			*c = (struct claim){o, kube_obj_str(o, "metadata.name"), kube_obj_str(o, "metadata.uid"),
					    kube_obj_terminating(o)};
			if (!c->terminating)
				ord->nlive++;
		}
		free(prefix);
	}
	json_decref(claim_selector);
	char *pod_prefix = scaledown_pod_prefix(p->name);
	json_array_foreach(p->in->pods, i, o) {
		const char *ns = kube_obj_str(o, "metadata.namespace");
		long k = (long)kube_name_ordinal(kube_obj_str(o, "metadata.name"), pod_prefix);
		if (k < 0 || (ns && strcmp(ns, p->ns)))
			continue;
		struct ordinal *ord = ordinal_get(p, k, ntemplates);
		const char *for_ = kube_obj_label(o, LABEL_CLEANUP_FOR);
		if (for_ && !strcmp(for_, p->name))
			ord->cleanup = o;
		else
			ord->other = o;
	}
	free(pod_prefix);
	const char *key;
	json_t *entry;
	json_object_foreach(json_object_get(p->state, "ordinals"), key, entry) {
		long k = (long)kube_name_ordinal(key, "");
		if (k >= 0)
			ordinal_get(p, k, ntemplates)->entry = entry;
	}

	long long replicas = kube_obj_int(spec, "replicas", NULL, 1);
	long long start = kube_obj_int(spec, "ordinals", "start", 0);
	for (i = 0; i < p->nords; i++) {
		struct ordinal *ord = &p->ords[i];
		ord->in_range = !p->deleting && ord->k >= start && ord->k < start + replicas;
		ord->failures = (int)kube_obj_int(ord->entry, "failures", NULL, 0);
	}
	if (p->nords > 1)
		qsort(p->ords, p->nords, sizeof(*p->ords), by_ordinal_desc);
}

static void due_at(struct plan *p, long long ms)
{
	if (ms < p->deadline_ms)
		p->deadline_ms = ms;
}

static long long retry_at_ms(const json_t *entry)
{
	int64_t s = rfc3339_seconds(kube_obj_str(entry, "retryAt"));
	return s < 0 ? 0 : (long long)s * 1000;
}

/* Where a claim set without a cleanup pod stands. */
static void classify(struct plan *p, struct ordinal *o)
{
	if (o->cleanup)
		o->state = SET_CLEANING;
	else if (o->in_range || o->nlive == 0)
		o->state = SET_IDLE;
	else if (o->failures >= p->req.max_attempts && p->may_start)
		o->state = SET_GAVE_UP;
	else if (o->other && !p->deleting)
		o->state = SET_POD_LEFT;
	else if (o->other && !kube_obj_controlled_by(o->other, p->uid))
		o->state = SET_LEFT_ALONE;
	else if (o->other)
		o->state = kube_obj_terminating(o->other) ? SET_STOPPING : SET_STOP;
	else if (o->entry && o->failures > 0 && retry_at_ms(o->entry) > p->in->now_ms)
		o->state = SET_RETRY_WAIT;
	else
		o->state = SET_READY;
	if (o->state == SET_RETRY_WAIT)
		due_at(p, retry_at_ms(o->entry));
}

/* ---- a cleanup pod under way ---- */

/* The pod's last termination message, or a description of how it failed. New string. */
static char *failure_message(const json_t *pod)
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

static const char *phase_of(const json_t *pod)
{
	const char *phase = kube_obj_str(pod, "status.phase");
	return phase ? phase : "Pending";
}

/*
 * Succeeded, and on its own: a pod deleted while it ran gets SIGTERM, and
 * a cleanup that exits 0 on it ends Succeeded half-way. So a pod being
 * deleted counts as succeeded only if its containers had all finished
 * before the deletion was asked for (deletionTimestamp minus its grace).
 */
static bool succeeded(const json_t *pod)
{
	if (strcmp(phase_of(pod), "Succeeded"))
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
	const char *phase = phase_of(o->cleanup);
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
	due_at(p, deadline);
	return NULL;
}

static int attempt_of(const json_t *pod)
{
	const char *a = kube_obj_annotation(pod, ANNOTATION_CLEANUP_ATTEMPT);
	return a ? atoi(a) : 0;
}

/* "data-web-2, logs-web-2": the claims of a set, for messages. New string. */
static char *claim_list(const struct ordinal *o)
{
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < o->nclaims; i++)
		strbuf_appendf(&sb, "%s%s", i ? ", " : "", o->claims[i].name);
	return strbuf_detach(&sb);
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

static char *status_text(struct plan *p, const json_t *state);

/* A merge patch (body stolen) of the StatefulSet as the planner saw it: on a newer one it conflicts. */
static void patch_sts(const struct plan *p, struct action *a, const char *what, json_t *body)
{
	action_patch(a, what, &KUBE_STATEFULSETS, p->name, body);
	action_patch_precondition(a, kube_obj_str(p->in->sts, "metadata.resourceVersion"), NULL);
	a->answers = ACTION_STALE_409;
}

/* Writes state (stolen; NULL: removes it) as scaledown-state, unsealed, and status (stolen) as -status. */
static void record_state(const struct plan *p, struct action *a, const char *what, json_t *state, char *status)
{
	char *text = state ? json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	patch_sts(p, a, what,
		  json_pack("{s:{s:{s:s?, s:s?}}}", "metadata", "annotations", ANNOTATION_SCALEDOWN_STATE, text,
			    ANNOTATION_SCALEDOWN_STATUS, status));
	free(text);
	free(status);
	json_decref(state);
}

/* A delete of obj by its UID; gone or replaced (404, 409) means the cluster moved on. */
static void delete_step(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj)
{
	action_delete(a, what, r, obj);
	a->answers = ACTION_STALE_404 | ACTION_STALE_409;
}

/* Success: delete the claims it mounted, then the pod. Failure: record it, then delete the pod. */
static bool act_on_cleanup(struct plan *p, struct ordinal *o, struct action *a)
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
	if (!strcmp(phase_of(pod), "Succeeded")) {
		const char *named = kube_obj_annotation(pod, ANNOTATION_CLEANUP_CLAIMS);
		json_t *mounted = json_loads(named ? named : "{}", 0, NULL);
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
	char *claims = claim_list(o);
	int attempt = attempt_of(pod) > 0 ? attempt_of(pod) : o->failures + 1;
	char next[160];
	if (o->in_range)
		snprintf(next, sizeof(next), "ordinal %ld is back in the StatefulSet: claims kept, no retry", o->k);
	else if (o->failures + 1 >= p->req.max_attempts)
		snprintf(next, sizeof(next), "gave up after %d failed attempts: claims kept, see annotation %s",
			 o->failures + 1, ANNOTATION_SCALEDOWN_STATUS);
	else
		snprintf(next, sizeof(next), "claims kept; retrying in %lds",
			 scaledown_backoff_ms(o->failures + 1) / 1000);
	record_state(p, a, SCALEDOWN_RECORD_FAILURE, st, status_text(p, st));
	action_event(a, "Warning", "CleanupFailed",
		     "cleanup pod %s for ordinal %ld (attempt %d of %d, claims %s) failed: %s; %s", pod_name, o->k,
		     attempt, p->req.max_attempts, claims, why, next);
	action_count(a, "stateful_operator_cleanups_failed_total", 1);
	free(claims);
	free(why);
	return true;
}

/* ---- starting ---- */

/* A copy of v when it is an object, else an empty one. New reference. */
static json_t *object_copy(const json_t *v)
{
	return json_is_object(v) ? json_deep_copy(v) : json_object();
}

/* The cleanup pod of o: the template, with its claims mounted and named in cleanup-claims. New reference. */
static json_t *cleanup_pod(const struct plan *p, const struct ordinal *o)
{
	const json_t *tmeta = json_object_get(p->req.pod_template, "metadata");
	json_t *labels = object_copy(json_object_get(tmeta, "labels"));
	json_t *annotations = object_copy(json_object_get(tmeta, "annotations"));
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
		char *claim = tmpl ? scaledown_claim_name(tmpl, p->name, o->k) : NULL;
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

	char *pod_name = scaledown_pod_name(p->name, o->k);
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
static void start_cleanup(const struct plan *p, const struct ordinal *o, struct action *a)
{
	action_create(a, SCALEDOWN_CREATE_POD, &KUBE_PODS, cleanup_pod(p, o));
	a->answers = ACTION_STALE_409;
	char *claims = claim_list(o);
	action_event(a, "Normal", "CleanupStarted",
		     "cleanup pod %s started for ordinal %ld (attempt %d of %d) on claims %s", a->name, o->k,
		     o->failures + 1, p->req.max_attempts, claims);
	free(claims);
	action_count(a, "stateful_operator_cleanups_started_total", 1);
}

/* The controller checks live that the set still controls the pod; one already gone (404) is done. */
static void stop_pod(const struct ordinal *o, struct action *a)
{
	action_delete(a, SCALEDOWN_STOP_POD, &KUBE_PODS, o->other);
	a->answers = ACTION_OK_404 | ACTION_STALE_409;
	char *claims = claim_list(o);
	action_event(a, "Normal", "CleanupStoppingPod",
		     "the StatefulSet is being deleted: deleting its pod %s so that a cleanup pod can mount claims %s",
		     a->name, claims);
	free(claims);
}

/*
 * New cleanups and pods to stop, in order. OrderedReady: only the highest
 * ordinal with work left moves. Parallel: as many as there are free places.
 */
static bool schedule(struct plan *p, struct action *a)
{
	int busy = 0;
	for (size_t i = 0; i < p->nords; i++) {
		enum set_state s = p->ords[i].state;
		if (s == SET_CLEANING || s == SET_RETRY_WAIT || s == SET_STOPPING)
			busy++;
	}
	int free_places = p->req.parallelism - busy;
	bool acted = false;
	bool first_pending = true;
	for (size_t i = 0; i < p->nords; i++) {
		struct ordinal *o = &p->ords[i];
		bool pending = o->state == SET_READY || o->state == SET_STOP;
		if (pending && (!p->may_start || (!p->req.parallel && !first_pending) || free_places <= 0 || acted)) {
			o->queued = true;
		} else if (pending) {
			if (o->state == SET_READY)
				start_cleanup(p, o, a);
			else
				stop_pod(o, a);
			acted = true;
			free_places--;
		}
		if (o->state != SET_IDLE && o->state != SET_GAVE_UP && o->state != SET_LEFT_ALONE)
			first_pending = false; /* work under way or to do: OrderedReady waits for it */
	}
	return acted;
}

/* ---- state and status ---- */

/* The state with the entries of sets that are done dropped. New reference. */
static json_t *desired_state(struct plan *p)
{
	json_t *ords = json_object();
	for (size_t i = 0; i < p->nords; i++) {
		const struct ordinal *o = &p->ords[i];
		if (o->entry && (o->cleanup || (!o->in_range && o->nlive > 0)))
			json_object_set(ords, o->key, (json_t *)o->entry);
	}
	json_t *st = json_deep_copy(p->state);
	json_object_set_new(st, "ordinals", ords);
	return st;
}

/* What scaledown-status says for state: one clause per claim set with something to report. NULL: nothing. */
static char *status_text(struct plan *p, const json_t *state)
{
	struct strbuf sb = STRBUF_INIT;
	int max = p->req.max_attempts > 0 ? p->req.max_attempts : SCALEDOWN_MAX_ATTEMPTS_DEFAULT;
	for (size_t i = 0; i < p->nords; i++) {
		const struct ordinal *o = &p->ords[i];
		const json_t *entry = json_object_get(json_object_get(state, "ordinals"), o->key);
		int failures = (int)kube_obj_int(entry, "failures", NULL, 0);
		const char *msg = kube_obj_str(entry, "message") ? kube_obj_str(entry, "message") : "";
		const char *last = kube_obj_str(entry, "lastPod");
		const char *other = kube_obj_str(o->other, "metadata.name");
		char *claims = claim_list(o), *clause = NULL;
		if (o->cleanup) {
			const char *uid = kube_obj_str(o->cleanup, "metadata.uid");
			const char *phase = phase_of(o->cleanup);
			if (last && uid && !strcmp(last, uid))
				clause = xasprintf("cleanup attempt %d of %d failed: %s", failures, max, msg);
			else if (!strcmp(phase, "Succeeded"))
				clause = xasprintf("cleanup succeeded, deleting claims %s", claims);
			else
				clause = xasprintf("cleanup pod %s %s (attempt %d of %d)",
						   kube_obj_str(o->cleanup, "metadata.name"), phase,
						   attempt_of(o->cleanup), max);
		} else if (o->in_range || o->nlive == 0) {
			/* nothing to say */
		} else if (failures >= max && p->may_start) {
			clause = xasprintf("Failed: cleanup failed %d times, claims %s kept: %s", failures, claims,
					   msg);
		} else if (o->state == SET_RETRY_WAIT) {
			clause = xasprintf("attempt %d of %d failed: %s; retrying after %s", failures, max, msg,
					   kube_obj_str(entry, "retryAt"));
		} else if (o->state == SET_STOP || o->state == SET_STOPPING) {
			clause = xasprintf("stopping pod %s before its cleanup", other);
		} else if (o->state == SET_LEFT_ALONE) {
			clause = xasprintf("pod %s is not the StatefulSet's; claims %s left alone", other, claims);
		} else if (o->state == SET_POD_LEFT && p->may_start) {
			clause = xasprintf("waiting for pod %s to go", other);
		} else if (o->queued && p->may_start) {
			clause = xasprintf("waiting for its turn");
		}
		if (clause)
			strbuf_appendf(&sb, "%sordinal %ld: %s", sb.len ? "; " : "", o->k, clause);
		free(clause);
		free(claims);
	}
	return sb.len ? strbuf_detach(&sb) : (strbuf_release(&sb), NULL);
}

static bool same_text(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool write_state(struct plan *p, struct action *a)
{
	json_t *want = desired_state(p);
	char *status = status_text(p, want);
	bool empty = json_object_size(json_object_get(want, "ordinals")) == 0 && json_object_size(want) == 1;
	const char *have_text = kube_obj_annotation(p->in->sts, ANNOTATION_SCALEDOWN_STATE);
	bool state_same = empty ? have_text == NULL : (have_text && json_equal(want, p->state));
	if (state_same && same_text(status, kube_obj_annotation(p->in->sts, ANNOTATION_SCALEDOWN_STATUS))) {
		json_decref(want);
		free(status);
		return false;
	}
	record_state(p, a, SCALEDOWN_RECORD_STATE, empty ? (json_decref(want), NULL) : want, status);
	return true;
}

/* ---- the finalizer ---- */

/* Sets the StatefulSet's finalizers: the others it has, and ours or not. */
static void set_finalizer(const struct plan *p, bool ours, struct action *a)
{
	json_t *fins = json_array();
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(json_object_get(p->in->sts, "metadata"), "finalizers"), i, f) {
		if (!json_is_string(f) || strcmp(json_string_value(f), FINALIZER_SCALEDOWN))
			json_array_append(fins, f);
	}
	if (ours)
		json_array_append_new(fins, json_string(FINALIZER_SCALEDOWN));
	patch_sts(p, a, ours ? SCALEDOWN_ADD_FINALIZER : SCALEDOWN_REMOVE_FINALIZER,
		  json_pack("{s:{s:o}}", "metadata", "finalizers", fins));
}

/*
 * Deleted with propagationPolicy Orphan: the user, or the resize
 * controller, keeps pods and claims. The garbage collector removes the
 * orphan finalizer as soon as it has taken the owner references off the
 * pods, so a pod of the set that its selector matches but nothing
 * controls says the same after the finalizer is gone.
 */
bool scaledown_plan_orphaning(const json_t *sts, const json_t *pods)
{
	if (has_finalizer(sts, FINALIZER_ORPHAN) || resize_state_recreating(sts))
		return true;
	const json_t *selector = json_object_get(json_object_get(sts, "spec"), "selector");
	const char *name = kube_obj_str(sts, "metadata.name");
	if (!selector || !name)
		return false;
	char *prefix = scaledown_pod_prefix(name);
	bool orphaned = false;
	size_t i;
	const json_t *pod;
	json_array_foreach(pods, i, pod) {
		if (kube_name_ordinal(kube_obj_str(pod, "metadata.name"), prefix) >= 0 &&
		    label_selector_matches(selector, kube_obj_labels(pod)) && !has_controller(pod))
			orphaned = true;
	}
	free(prefix);
	return orphaned;
}

static bool work_left(const struct plan *p)
{
	for (size_t i = 0; i < p->nords; i++) {
		enum set_state s = p->ords[i].state;
		if (s == SET_CLEANING || (p->may_start && (s == SET_RETRY_WAIT || s == SET_STOP ||
							   s == SET_STOPPING || s == SET_READY)))
			return true;
	}
	return false;
}

/*
 * On deletion, claims that stay (cleanup given up or left alone) must not
 * go with the set: whenDeleted: Delete made the set their owner.
 */
static bool disown_kept_claims(const struct plan *p, struct action *a)
{
	for (size_t i = 0; i < p->nords; i++) {
		const struct ordinal *o = &p->ords[i];
		/* Only where a cleanup was wanted and did not happen: otherwise whenDeleted stands. */
		if (o->state != SET_GAVE_UP && o->state != SET_LEFT_ALONE)
			continue;
		for (int c = 0; c < o->nclaims; c++) {
			const struct claim *cl = &o->claims[c];
			if (cl->terminating || !kube_obj_owned_by(cl->obj, p->uid))
				continue;
			const json_t *had = json_object_get(json_object_get(cl->obj, "metadata"), "ownerReferences");
			json_t *refs = json_array();
			size_t r;
			json_t *ref;
			json_array_foreach(had, r, ref) {
				const char *u = kube_obj_str(ref, "uid");
				if (!u || strcmp(u, p->uid))
					json_array_append(refs, ref);
			}
			action_patch(a, SCALEDOWN_DISOWN_CLAIM, &KUBE_PVCS, cl->name,
				     json_pack("{s:{s:o}}", "metadata", "ownerReferences", refs));
			action_patch_precondition(a, kube_obj_str(cl->obj, "metadata.resourceVersion"), NULL);
			a->answers = ACTION_STALE_404 | ACTION_STALE_409;
			return true;
		}
	}
	return false;
}

static void finalizer_removed_event(const struct plan *p, struct action *a)
{
	struct strbuf kept = STRBUF_INIT;
	for (size_t i = 0; i < p->nords; i++) {
		const struct ordinal *o = &p->ords[i];
		if (o->nlive > 0 && !o->in_range)
			strbuf_appendf(&kept, "%s%ld", kept.len ? ", " : "", o->k);
	}
	if (kept.len)
		action_event(a, "Warning", "CleanupIncomplete",
			     "the StatefulSet is being deleted; the claims of ordinals %s were not cleaned up (see the "
			     "CleanupFailed events) and are kept",
			     kept.buf);
	else
		action_event(a, "Normal", "CleanupFinished",
			     "the StatefulSet is being deleted; every claim set was cleaned up, finalizer %s removed",
			     FINALIZER_SCALEDOWN);
	strbuf_release(&kept);
}

/* ---- the plan ---- */

bool scaledown_plan_asks_nothing(const json_t *sts)
{
	const json_t *ann = kube_obj_annotations(sts);
	return sts && !json_object_get(ann, ANNOTATION_SCALEDOWN_TEMPLATE) &&
	       !json_object_get(ann, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY) &&
	       !json_object_get(ann, ANNOTATION_SCALEDOWN_STATE) &&
	       !has_finalizer(sts, FINALIZER_SCALEDOWN);
}

void scaledown_plan(const struct scaledown_inputs *in, struct action *a)
{
	action_init(a);
	if (!in->sts)
		return;
	struct plan p = {.in = in, .deadline_ms = LLONG_MAX};
	p.ns = kube_obj_str(in->sts, "metadata.namespace");
	p.name = kube_obj_str(in->sts, "metadata.name");
	p.uid = kube_obj_str(in->sts, "metadata.uid");
	if (!p.ns || !p.name || !p.uid)
		return;
	struct refusal refusal;
	int parsed = scaledown_request_parse(in->sts, &p.req, &refusal);
	/* The key the resize controller honours too: the user takes this StatefulSet over. */
	p.may_start = parsed == 0 && p.req.enabled && !kube_obj_annotation_true(in->sts, ANNOTATION_IGNORE);
	if (!p.may_start) {
		p.req.max_attempts = SCALEDOWN_MAX_ATTEMPTS_DEFAULT;
		p.req.timeout_ms = SCALEDOWN_TIMEOUT_DEFAULT_MS;
		p.req.parallelism = 1;
	}
	format_duration(p.req.timeout_ms, p.timeout_text, sizeof(p.timeout_text));
	p.deleting = kube_obj_terminating(in->sts);
	bool held = has_finalizer(in->sts, FINALIZER_SCALEDOWN);

	if (!p.deleting && p.may_start && !held) {
		set_finalizer(&p, true, a);
		goto out;
	}
	if (p.deleting && !held)
		goto out; /* not held for us: the garbage collector takes it, and our pods with it */
	if (p.deleting && scaledown_plan_orphaning(in->sts, in->pods)) {
		/* Its cleanup pods stay too; the StatefulSet made again finds them by their label. */
		set_finalizer(&p, false, a);
		action_event(a, "Normal", "CleanupSkipped",
			     "the StatefulSet is deleted with orphan propagation (--cascade=orphan, or re-created by a "
			     "resize): its pods and claims stay, nothing is cleaned up");
		goto out;
	}

	const char *text = kube_obj_annotation(in->sts, ANNOTATION_SCALEDOWN_STATE);
	p.state = text ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(p.state)) {
		json_decref(p.state);
		p.state = json_object();
	}
	collect(&p);
	for (size_t i = 0; i < p.nords; i++)
		classify(&p, &p.ords[i]);

	for (size_t i = 0; i < p.nords; i++)
		if (p.ords[i].cleanup && act_on_cleanup(&p, &p.ords[i], a))
			goto out;
	if (schedule(&p, a))
		goto out;
	if (write_state(&p, a))
		goto out;
	if (held && p.deleting && !work_left(&p) && disown_kept_claims(&p, a))
		goto out;
	if (held && (p.deleting || !p.may_start) && !work_left(&p)) {
		/* On deletion the controller first checks live that no cleanup pod is left (the cache lags). */
		set_finalizer(&p, false, a);
		if (p.deleting)
			finalizer_removed_event(&p, a);
		goto out;
	}
	if (parsed < 0) {
		a->verb = ACTION_REFUSE;
		action_event(a, "Warning", refusal.reason, "%s", refusal.message);
		goto out;
	}
	if (p.deadline_ms != LLONG_MAX)
		a->verb = ACTION_WAIT;
out:
	if (p.deadline_ms != LLONG_MAX) {
		long long left = p.deadline_ms - in->now_ms;
		a->requeue_ms = left < 1 ? 1 : left > LONG_MAX ? LONG_MAX : (long)left;
	}
	for (size_t i = 0; i < p.nords; i++)
		free(p.ords[i].claims);
	free(p.ords);
	json_decref(p.state);
	scaledown_request_release(&p.req);
	refusal_release(&refusal);
}
