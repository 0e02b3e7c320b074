#include "pvc_modifier.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim_status.h"
#include "client/kube_object.h"
#include "client/kube_resource.h"
#include "pvc_modify_plan.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#define COMPONENT "resizer"
#define MAX_STEPS_PER_RECONCILE 6

/* When the modification of one claim to one class started (main thread only). */
struct modify_clock {
	char *uid, *target;
	uint64_t started_ns;
};

static void clock_free(void *p)
{
	struct modify_clock *c = p;
	if (c) {
		free(c->uid);
		free(c->target);
	}
	free(c);
}

void pvc_modifier_init(struct pvc_modifier *m)
{
	hashmap_init(&m->clocks);
}

void pvc_modifier_release(struct pvc_modifier *m)
{
	hashmap_release(&m->clocks, clock_free);
}

static void forget(struct pvc_modifier *m, const char *key)
{
	clock_free(hashmap_remove(&m->clocks, key));
}

/*
 * Milliseconds left of delay_ms for the claim uid's modification to
 * target; the clock starts at the first look (after a restart, again).
 */
static long delay_left(struct pvc_modifier *m, const char *key, const char *uid, const char *target,
		       long delay_ms)
{
	struct modify_clock *c = hashmap_get(&m->clocks, key);
	if (!c || strcmp(c->uid, uid) || strcmp(c->target, target)) {
		forget(m, key);
		c = xcalloc(1, sizeof(*c));
		c->uid = xstrdup(uid);
		c->target = xstrdup(target);
		c->started_ns = clock_mono_ns();
		hashmap_put(&m->clocks, key, c);
	}
	if (delay_ms <= 0)
		return 0;
	long elapsed = (long)((clock_mono_ns() - c->started_ns) / 1000000);
	return elapsed >= delay_ms ? 0 : delay_ms - elapsed;
}

/* *vac: the class name (new reference), or NULL when it does not exist. Returns 0, or -1 on error. */
static int get_class(struct pvc_modifier *m, const char *name, json_t **vac)
{
	*vac = store_get(m->vacs, name);
	if (*vac)
		return 0;
	/* A class created just before the claim's change may not be cached yet. */
	struct kube_error err;
	if (kube_get(m->client, &KUBE_VOLUMEATTRIBUTESCLASSES, NULL, name, vac, &err) == 0)
		return 0;
	*vac = NULL;
	if (err.code == 404)
		return 0;
	log_warn(COMPONENT, "get volumeattributesclass %s: %s", name, err.message);
	return -1;
}

/* The bound PV of the claim uid gets spec.volumeAttributesClassName target, unless it has it or is not CSI. */
static int set_pv_class(struct pvc_modifier *m, const char *volume, const char *uid, const char *target)
{
	json_t *pv = store_get(m->pvs, volume);
	struct kube_error err;
	if (!pv && kube_get(m->client, &KUBE_PVS, NULL, volume, &pv, &err) < 0) {
		log_warn(COMPONENT, "get pv %s: %s", volume, err.message);
		return -1;
	}
	int rc = -1;
	const char *claim_uid = kube_obj_str(pv, "spec.claimRef.uid");
	const char *now = kube_obj_str(pv, "spec.volumeAttributesClassName");
	if (!claim_uid || strcmp(claim_uid, uid)) {
		log_warn(COMPONENT, "pv %s is not bound to claim uid %s; leaving it", volume, uid);
		goto out;
	}
	if ((now && !strcmp(now, target)) || !modify_pv_takes_class(pv)) {
		rc = 0;
		goto out;
	}
	json_t *patch = json_pack("{s:{s:s}}", "spec", "volumeAttributesClassName", target);
	rc = kube_patch(m->client, &KUBE_PVS, NULL, volume, NULL, KUBE_PATCH_MERGE, patch, NULL, &err);
	json_decref(patch);
	if (rc < 0) {
		log_warn(COMPONENT, "pv %s: patch volumeAttributesClassName: %s", volume, err.message);
		goto out;
	}
	log_info(COMPONENT, "pv %s: spec.volumeAttributesClassName %s -> %s", volume, now ? now : "(none)", target);
out:
	json_decref(pv);
	return rc;
}

/* The claim's status patch (claim_status_patch), guarded by the resourceVersion it was decided on. */
static int patch_status(struct pvc_modifier *m, json_t **pvc, json_t *status, const char *what)
{
	return claim_status_patch(m->client, pvc, kube_obj_str(*pvc, "metadata.resourceVersion"), status, what);
}

/* Copies of what the log line after a patch names (the patch replaces the claim). */
struct seen {
	char uid[64], volume[256], spec[256], current[256];
};

/* Fills *s from a Bound claim; false when the claim is not Bound to a volume (none of our business). */
static bool see(const json_t *pvc, struct seen *s)
{
	const char *phase = kube_obj_str(pvc, "status.phase");
	const char *uid = kube_obj_str(pvc, "metadata.uid");
	const char *volume = kube_obj_str(pvc, "spec.volumeName");
	if (!phase || strcmp(phase, "Bound") || !uid || !volume || !*volume)
		return false;
	const char *spec = kube_obj_str(pvc, "spec.volumeAttributesClassName");
	const char *current = kube_obj_str(pvc, "status.currentVolumeAttributesClassName");
	snprintf(s->uid, sizeof(s->uid), "%s", uid);
	snprintf(s->volume, sizeof(s->volume), "%s", volume);
	snprintf(s->spec, sizeof(s->spec), "%s", spec ? spec : "(none)");
	snprintf(s->current, sizeof(s->current), "%s", current ? current : "(none)");
	return true;
}

/* The Event the external-resizer records for step on the claim pvc (borrowed), if any. */
static void record(struct pvc_modifier *m, const json_t *pvc, enum modify_step step, const char *target)
{
	if (!m->events)
		return;
	const char *name = kube_obj_str(pvc, "metadata.name");
	switch (step) {
	case MODIFY_PENDING:
		event_record(m->events, pvc, EVENT_WARNING, "VolumeModifyFailed", "VAC \"%s\" does not exist.", target);
		break;
	case MODIFY_START:
		event_record(m->events, pvc, EVENT_NORMAL, "VolumeModify", "external resizer is modifying volume %s with vac %s",
			     name, target);
		break;
	case MODIFY_INFEASIBLE:
		event_record(m->events, pvc, EVENT_WARNING, "VolumeModifyFailed",
			     "rpc error: code = InvalidArgument desc = testbed: VolumeAttributesClass %s has %s: true",
			     target, MODIFY_FAIL_PARAMETER);
		break;
	case MODIFY_FINISH:
		event_record(m->events, pvc, EVENT_NORMAL, "VolumeModifySuccessful",
			     "external resizer modified volume %s with vac %s successfully", name, target);
		break;
	case MODIFY_CANCEL:
		event_record(m->events, pvc, EVENT_NORMAL, "VolumeModifyCanceled", "Cancelled modify.");
		break;
	case MODIFY_NONE:
	case MODIFY_WAIT_DELAY:
		break;
	}
}

int pvc_modifier_reconcile(struct pvc_modifier *m, const char *ns, const char *name, long *requeue_ms)
{
	char *key = xasprintf("%s/%s", ns, name);
	json_t *pvc = NULL;
	struct kube_error err;
	int rc = 0;
	long delay_ms = -1;

	*requeue_ms = 0;
	if (kube_get(m->client, &KUBE_PVCS, ns, name, &pvc, &err) < 0) {
		if (err.code == 404) {
			forget(m, key);
		} else {
			log_warn(COMPONENT, "%s: get: %s", key, err.message);
			rc = -1;
		}
		goto out;
	}
	for (int i = 0; i < MAX_STEPS_PER_RECONCILE; i++) {
		struct seen s;
		if (!see(pvc, &s) || !modify_needed(pvc)) {
			forget(m, key);
			goto out;
		}
		const char *target_ref = modify_target_name(pvc);
		char *target = target_ref ? xstrdup(target_ref) : NULL;
		json_t *vac = NULL;
		long left = 0;
		if (target && get_class(m, target, &vac) < 0) {
			free(target);
			rc = -1;
			goto out;
		}
		if (target && vac) {
			if (delay_ms < 0 && (delay_ms = m->delay_ms(m->ctx, pvc)) < 0) {
				json_decref(vac);
				free(target);
				rc = -1;
				goto out;
			}
			left = delay_left(m, key, s.uid, target, delay_ms);
		}
		enum modify_step step = modify_plan(pvc, vac, left == 0);
		json_decref(vac);
		log_debug(COMPONENT, "%s: volumeAttributesClassName %s current %s: modify %s", key, s.spec, s.current,
			  modify_step_names[step]);
		char now[32];
		claim_status_now(now, sizeof(now));
		json_t *status = modify_status(pvc, step, target ? target : "", now);
		switch (step) {
		case MODIFY_NONE:
			break;
		case MODIFY_WAIT_DELAY:
			*requeue_ms = left;
			break;
		case MODIFY_FINISH:
			/* The PV first, as the external-resizer does: a claim never shows a class its PV lacks. */
			if ((rc = set_pv_class(m, s.volume, s.uid, target)) < 0)
				break;
			if ((rc = patch_status(m, &pvc, status, "modify finished")) == 0) {
				log_info(COMPONENT, "%s: volumeAttributesClassName %s -> %s", key, s.current, target);
				record(m, pvc, step, target);
				forget(m, key);
			}
			status = NULL;
			break;
		default:
			if ((rc = patch_status(m, &pvc, status, modify_step_names[step])) == 0) {
				record(m, pvc, step, target ? target : "");
				log_info(COMPONENT, "%s: modify to %s: %s", key, target ? target : "(none)",
					 step == MODIFY_PENDING	   ? "Pending (no such VolumeAttributesClass)"
					 : step == MODIFY_START	   ? "InProgress"
					 : step == MODIFY_INFEASIBLE ? "Infeasible (the class asks to fail); the "
								       "current class stays"
								     : "cancelled (class cleared)");
			}
			status = NULL;
			break;
		}
		json_decref(status);
		free(target);
		if (rc < 0 || step == MODIFY_NONE || step == MODIFY_WAIT_DELAY)
			goto out;
	}
out:
	json_decref(pvc);
	free(key);
	return rc;
}

int pvc_modifier_provisioned(struct pvc_modifier *m, const char *pv_name)
{
	json_t *pv = NULL, *pvc = NULL, *vac = NULL, *patch = NULL;
	struct kube_error err;
	int rc = -1;
	if (kube_get(m->client, &KUBE_PVS, NULL, pv_name, &pv, &err) < 0) {
		rc = err.code == 404 ? 0 : -1;
		if (rc < 0)
			log_warn(COMPONENT, "get pv %s: %s", pv_name, err.message);
		goto out;
	}
	const char *ns = kube_obj_str(pv, "spec.claimRef.namespace");
	const char *claim = kube_obj_str(pv, "spec.claimRef.name");
	if (!ns || !claim) {
		rc = 0;
		goto out;
	}
	if (kube_get(m->client, &KUBE_PVCS, ns, claim, &pvc, &err) < 0) {
		rc = err.code == 404 ? 0 : -1;
		if (rc < 0)
			log_warn(COMPONENT, "get pvc %s/%s: %s", ns, claim, err.message);
		goto out;
	}
	const char *cls = modify_provisioned_class(pv, pvc);
	if (!cls) {
		rc = 0;
		goto out;
	}
	if (get_class(m, cls, &vac) < 0)
		goto out;
	if (!vac) {
		log_info(COMPONENT, "pv %s: claim %s/%s waits for VolumeAttributesClass %s", pv_name, ns, claim, cls);
		rc = 0;
		goto out;
	}
	/* The resourceVersion read: a PV changed meanwhile is looked at again, never overwritten. */
	patch = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "resourceVersion",
			  kube_obj_str(pv, "metadata.resourceVersion"), "spec", "volumeAttributesClassName", cls);
	if (kube_patch(m->client, &KUBE_PVS, NULL, pv_name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0) {
		log_warn(COMPONENT, "pv %s: patch volumeAttributesClassName: %ld %s", pv_name, err.code, err.message);
		goto out;
	}
	log_info(COMPONENT, "pv %s: volumeAttributesClassName %s, as its claim %s/%s asks (provisioned without it)",
		 pv_name, cls, ns, claim);
	rc = 0;
out:
	json_decref(patch);
	json_decref(vac);
	json_decref(pvc);
	json_decref(pv);
	return rc;
}
