/*
 * What the scale-down planner's steps share: the retry backoff, the
 * scaledown-state and -status written on the StatefulSet, how a cleanup
 * pod reads. A leaf of the planner: it calls no other file of
 * src/controllers/scaledown.
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/scaledown/scaledown_plan_internal.h"
#include "controllers/state_version.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

long scaledown_backoff_ms(int failures)
{
	long ms = SCALEDOWN_BACKOFF_BASE_MS;
	for (int i = 1; i < failures && ms < SCALEDOWN_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < SCALEDOWN_BACKOFF_MAX_MS ? ms : SCALEDOWN_BACKOFF_MAX_MS;
}

void scaledown_due_at(struct plan *p, long long ms)
{
	if (ms < p->deadline_ms)
		p->deadline_ms = ms;
}

char *scaledown_claim_list(const struct ordinal *o)
{
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < o->nclaims; i++)
		strbuf_appendf(&sb, "%s%s", i ? ", " : "", o->claims[i].name);
	return strbuf_detach(&sb);
}

void scaledown_patch_sts(const struct plan *p, struct action *a, const char *what, json_t *body)
{
	action_patch(a, what, &KUBE_STATEFULSETS, p->name, body);
	action_patch_precondition(a, kube_obj_str(p->in->sts, "metadata.resourceVersion"), NULL);
	a->answers = ACTION_STALE_409;
}

void scaledown_record_state(const struct plan *p, struct action *a, const char *what, json_t *state, char *status)
{
	if (state)
		state_version_stamp(state); /* every write says which version it is */
	char *text = state ? json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	/* Its clauses quote the recorded messages (bounded where recorded): the line stays clean whatever they hold. */
	char *shown = text_sanitize(status, 0);
	scaledown_patch_sts(p, a, what,
		  json_pack("{s:{s:{s:s?, s:s?}}}", "metadata", "annotations", ANNOTATION_SCALEDOWN_STATE, text,
			    ANNOTATION_SCALEDOWN_STATUS, shown));
	free(shown);
	free(text);
	free(status);
	json_decref(state);
}

char *scaledown_status_text(struct plan *p, const json_t *state)
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
		char *claims = scaledown_claim_list(o), *clause = NULL;
		if (o->cleanup) {
			const char *uid = kube_obj_str(o->cleanup, "metadata.uid");
			const char *phase = scaledown_pod_phase(o->cleanup);
			if (last && uid && !strcmp(last, uid))
				clause = xasprintf("cleanup attempt %d of %d failed: %s", failures, max, msg);
			else if (!strcmp(phase, "Succeeded"))
				clause = xasprintf("cleanup succeeded, deleting claims %s", claims);
			else
				clause = xasprintf("cleanup pod %s %s (attempt %d of %d)",
						   kube_obj_str(o->cleanup, "metadata.name"), phase,
						   scaledown_pod_attempt(o->cleanup), max);
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

const char *scaledown_pod_phase(const json_t *pod)
{
	const char *phase = kube_obj_str(pod, "status.phase");
	return phase ? phase : "Pending";
}

int scaledown_pod_attempt(const json_t *pod)
{
	const char *a = kube_obj_annotation(pod, ANNOTATION_CLEANUP_ATTEMPT);
	return a ? atoi(a) : 0;
}
