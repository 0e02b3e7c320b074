#include "controllers/scaledown/scaledown_plan.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/kube_object.h"
#include "client/label_selector.h"
#include "controllers/resize/resize_state.h"
#include "controllers/claim_names.h"
#include "controllers/scaledown/scaledown_plan_internal.h"
#include "controllers/state_version.h"
#include "util/duration.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* ---- reading the cluster ---- */

/* "1h", "90s", "1500ms": a timeout as the user wrote it, near enough. */
static void format_duration(long long ms, char *buf, size_t len)
{
	static const struct {
		long long ms;
		const char *unit;
	} units[] = {{3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
	size_t i = 0;
	while (ms % units[i].ms)
		i++;
	snprintf(buf, len, "%lld%s", ms / units[i].ms, units[i].unit);
}

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
		char *prefix = set_name_prefix(tmpl, p->name);
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
	char *pod_prefix = set_name_prefix(NULL, p->name);
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
		scaledown_due_at(p, retry_at_ms(o->entry));
}

/*
 * The controller checks live that the set still controls the pod (gone
 * already: done); a 404 or 409 on the delete itself means it moved on.
 */
static void stop_pod(const struct ordinal *o, struct action *a)
{
	action_delete(a, SCALEDOWN_STOP_POD, &KUBE_PODS, o->other);
	a->answers = ACTION_STALE_404 | ACTION_STALE_409;
	char *claims = scaledown_claim_list(o);
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
				scaledown_start_cleanup(p, o, a);
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

static bool write_state(struct plan *p, struct action *a)
{
	json_t *want = desired_state(p);
	char *status = scaledown_status_text(p, want);
	/* Nothing but ordinals (and the version a write adds): the annotation goes. */
	bool empty = json_object_size(json_object_get(want, "ordinals")) == 0 &&
		     json_object_size(want) == 1 + !!json_object_get(want, STATE_VERSION_KEY);
	const char *have_text = kube_obj_annotation(p->in->sts, ANNOTATION_SCALEDOWN_STATE);
	bool state_same = empty ? have_text == NULL : (have_text && json_equal(want, p->state));
	const char *have_status = kube_obj_annotation(p->in->sts, ANNOTATION_SCALEDOWN_STATUS);
	if (state_same && (status ? have_status && !strcmp(status, have_status) : !have_status)) {
		json_decref(want);
		free(status);
		return false;
	}
	scaledown_record_state(p, a, SCALEDOWN_RECORD_STATE, empty ? (json_decref(want), NULL) : want, status);
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
	scaledown_patch_sts(p, a, ours ? SCALEDOWN_ADD_FINALIZER : SCALEDOWN_REMOVE_FINALIZER,
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
	if (kube_obj_has_finalizer(sts, FINALIZER_ORPHAN) || resize_state_recreating(sts))
		return true;
	const json_t *selector = json_object_get(json_object_get(sts, "spec"), "selector");
	const char *name = kube_obj_str(sts, "metadata.name");
	if (!selector || !name)
		return false;
	char *prefix = set_name_prefix(NULL, name);
	bool orphaned = false;
	size_t i;
	const json_t *pod;
	json_array_foreach(pods, i, pod) {
		if (kube_name_ordinal(kube_obj_str(pod, "metadata.name"), prefix) >= 0 &&
		    label_selector_matches(selector, kube_obj_labels(pod)) && !kube_obj_has_controller(pod))
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
	       !kube_obj_has_finalizer(sts, FINALIZER_SCALEDOWN);
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
	bool held = kube_obj_has_finalizer(in->sts, FINALIZER_SCALEDOWN);
	/* A state a newer operator wrote: not even the finalizer moves, the newer one carries it on. */
	if (state_version_refuse(in->sts, ANNOTATION_SCALEDOWN_STATE, "StatefulSet", a))
		goto out;

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

	p.state = kube_obj_annotation_json(in->sts, ANNOTATION_SCALEDOWN_STATE);
	if (!json_is_object(p.state)) {
		json_decref(p.state);
		p.state = json_object();
	}
	collect(&p);
	for (size_t i = 0; i < p.nords; i++)
		classify(&p, &p.ords[i]);

	for (size_t i = 0; i < p.nords; i++)
		if (p.ords[i].cleanup && scaledown_act_on_cleanup(&p, &p.ords[i], a))
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
