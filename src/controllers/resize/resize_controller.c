#include "controllers/resize/resize_controller.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "controllers/claim_names.h"
#include "controllers/resize/resize_dry_run.h"
#include "controllers/resize/resize_internal.h"
#include "controllers/resize/resize_trust.h"
#include "controllers/set_index.h"
#include "controllers/state_seal.h"
#include "controllers/state_version.h"
#include "runtime/reconciler.h"
#include "util/log.h"
#include "util/xalloc.h"

struct resize_ctx {
	struct resize_deps deps;
	struct controller *controller;
	struct resize_caches caches;
	pthread_mutex_t lock;
	json_t *refusals; /* under lock: key -> {claim: message} of LowerRequest patches refused, until recorded */
};

struct snapshot {
	struct resize_reads reads;
	json_t *saved;     /* the saved StatefulSet while the set is gone: Events name it */
	json_t *refusals;  /* this key's LowerRequest refusals (new reference), or NULL */
	/* What a reconcile would act on that this operator did not seal (static text, or NULL: all is sealed). */
	const char *untrusted;
	const char *remedy; /* what the user can do about it (static text) */
	enum resize_trust set_trust, backup_trust; /* resize_trust.h */
};

/* ---- which StatefulSet an event concerns ---- */

struct claim_event {
	struct resize_ctx *rc;
	const char *ns;
};

static void enqueue_candidate(void *ctx, const char *sts)
{
	struct claim_event *ce = ctx;
	char *key = xasprintf("%s/%s", ce->ns, sts);
	/* While a copy runs the StatefulSet may be gone: its saved copy names it then. */
	char *backup = resize_backup_name(key);
	char *rv = store_resource_version(ce->rc->caches.statefulsets, key);
	char *brv = rv ? NULL : store_resource_version(ce->rc->caches.backups, backup);
	if (rv || brv)
		controller_enqueue(ce->rc->controller, key);
	free(brv);
	free(rv);
	free(backup);
	free(key);
}

/* A claim <template>-<sts>-<ordinal> (or a copy's, by its label): every StatefulSet it may belong to. */
static void map_claim(void *ctx, struct controller *c, const json_t *pvc)
{
	struct claim_event ce = {ctx, kube_obj_str(pvc, "metadata.namespace")};
	if (ce.ns)
		claim_statefulset_candidates(kube_obj_str(pvc, "metadata.name"), enqueue_candidate, &ce);
	controller_enqueue_name(c, ce.ns, kube_obj_label(pvc, LABEL_COPY_OF));
}

/* A PV: the claim it is bound or pre-bound to. */
static void map_volume(void *ctx, struct controller *c, const json_t *pv)
{
	(void)c;
	struct claim_event ce = {ctx, kube_obj_str(pv, "spec.claimRef.namespace")};
	const char *name = kube_obj_str(pv, "spec.claimRef.name");
	if (ce.ns && name)
		claim_statefulset_candidates(name, enqueue_candidate, &ce);
}

/*
 * A pod the owner handlers cannot place: a copy Job's (by its label), or a
 * replica the orphan delete left without a controller (by its name). The
 * copy waits for both to go; without this it would notice at its next poll.
 */
static void map_pod(void *ctx, struct controller *c, const json_t *pod)
{
	struct claim_event ce = {ctx, kube_obj_str(pod, "metadata.namespace")};
	controller_enqueue_name(c, ce.ns, kube_obj_label(pod, LABEL_COPY_OF));
	if (!ce.ns || kube_obj_has_controller(pod))
		return;
	char *set = pod_set_name(kube_obj_str(pod, "metadata.name"));
	if (set)
		enqueue_candidate(&ce, set);
	free(set);
}

/* ---- the snapshot ---- */

/*
 * Whether the state this reconcile would act on was sealed by this
 * operator for the objects that carry it (resize_trust.h): the annotation
 * on the StatefulSet, the one on its backup ConfigMap, and the StatefulSet
 * saved there; sets s->untrusted and s->remedy when not. A backup that is
 * not sealed while the StatefulSet has no resize state is only a leftover
 * (of an older version, or someone's): the planner deletes it, as it
 * deletes any stale copy, and acts on nothing in it (one that reads as a
 * copy mid-swap it keeps, and only refuses: ResizeInterrupted).
 */
static void check_seals(const struct resize_ctx *rc, struct snapshot *s)
{
	const json_t *sts = s->reads.sts, *backup = s->reads.backup;
	s->set_trust = resize_trust_statefulset(rc->deps.base.seal, sts, backup);
	s->backup_trust = resize_trust_backup(rc->deps.base.seal, backup, sts);
	if (s->set_trust == RESIZE_TRUST_BROKEN) {
		s->untrusted = "the annotation " ANNOTATION_RESIZE_STATE " on the StatefulSet";
		s->remedy = "Undo the edit, or remove the annotation to start over; a resize in flight is then left "
			    "where it stands. A state copied from another StatefulSet (an earlier one of this name "
			    "too) never holds: a seal holds only on the object it was written to";
		return;
	}
	if (s->backup_trust != RESIZE_TRUST_BROKEN || (sts && s->set_trust == RESIZE_TRUST_NONE))
		return;
	s->untrusted = "ConfigMap <sts>" BACKUP_SUFFIX " (the saved StatefulSet or its state)";
	s->remedy = sts ? "A resize is in flight and its saved copy cannot be trusted: restore the ConfigMap as the "
			  "operator wrote it, or remove the StatefulSet's resize-state annotation and delete the "
			  "ConfigMap to start over"
			: "The StatefulSet is gone and the operator will not re-create it from this copy: re-create "
			  "the StatefulSet yourself from your manifest, then delete the ConfigMap";
}

static void plan_on(const struct resize_ctx *rc, const struct snapshot *s, long long now_ms, struct action *a)
{
	const struct resize_reads *r = &s->reads;
	struct resize_inputs in = {.sts = r->sts,
				   .backup = r->backup,
				   .pvcs = r->pvcs,
				   .pods = r->pods,
				   .storage_classes = r->classes,
				   .pvs = r->pvs,
				   .jobs = r->jobs,
				   .copy_image = rc->deps.copy_image,
				   .lower_refusals = s->refusals};
	resize_plan(&in, now_ms, a);
}

static void *read_snapshot(void *ctx, const struct reconcile_key *k)
{
	struct resize_ctx *rc = ctx;
	struct snapshot *s = xcalloc(1, sizeof(*s));
	resize_read(&rc->caches, k->key, false, &s->reads);
	if (s->reads.partial) {
		/* Nothing asked but what the template may say; no state that could be forged. */
		struct action a;
		plan_on(rc, s, 0, &a);
		bool nothing = a.verb == ACTION_NOTHING;
		action_release(&a);
		resize_reads_release(&s->reads);
		if (nothing) {
			free(s);
			return NULL;
		}
		/* The template outgrew a claim: decide again on everything the set has. */
		resize_read(&rc->caches, k->key, true, &s->reads);
	}
	check_seals(rc, s);
	if (!s->reads.sts)
		s->saved = plan_saved_statefulset(s->reads.backup);
	pthread_mutex_lock(&rc->lock);
	s->refusals = json_deep_copy(json_object_get(rc->refusals, k->key));
	pthread_mutex_unlock(&rc->lock);
	return s;
}

static void release_snapshot(void *ctx, void *snapshot)
{
	(void)ctx;
	struct snapshot *s = snapshot;
	resize_reads_release(&s->reads);
	json_decref(s->saved);
	json_decref(s->refusals);
	free(s);
}

/* The step writes the resize state of the StatefulSet: prepare seals it for the set itself. */
static bool writes_set_state(const struct action *a)
{
	const json_t *ann = json_object_get(json_object_get(a->body, "metadata"), "annotations");
	return a->verb == ACTION_PATCH && a->resource == &KUBE_STATEFULSETS &&
	       (!a->body || json_object_get(ann, ANNOTATION_RESIZE_STATE));
}

/*
 * A set carrying the state of a re-create from its backup, which does not
 * name it: the operator stopped between the create and the backup's record
 * of it, or the state was copied onto another set. Either way the set goes
 * (its pods stay) and is re-created from the saved copy, which the backup's
 * sealed state says to do.
 */
static void delete_unconfirmed(const struct snapshot *s, struct action *a)
{
	const json_t *sts = s->reads.sts;
	if (kube_obj_terminating(sts)) {
		action_wait(a, POLL_MS);
		return;
	}
	plan_orphan_delete(&(struct resize_inputs){.sts = sts}, a);
	a->what = "OrphanDeleteUnconfirmed";
	action_event(a, "Warning", "ResizeRecreateUnconfirmed",
		     "the StatefulSet carries the state of a re-create from ConfigMap %s, which does not record "
		     "that re-create (the operator stopped between the two, or the state was copied here): it is "
		     "deleted with propagationPolicy Orphan (its pods keep running) and re-created from the saved copy",
		     kube_obj_str(s->reads.backup, "metadata.name"));
}

/*
 * A state not sealed by this operator: a Warning (on the set, or its
 * backup while it is gone); nothing done. A state sealed for the object it
 * was made from is sealed for its own object first (resize_trust.h).
 */
static void plan(void *ctx, const struct reconcile_key *k, void *snapshot, long long now_ms, struct action *a)
{
	struct resize_ctx *rc = ctx;
	struct snapshot *s = snapshot;
	if (s->untrusted) {
		log_warn("resize", "%s: %s is not sealed by this operator; nothing done", k->key, s->untrusted);
		a->verb = ACTION_REFUSE;
		action_event(a, "Warning", "ResizeStateUntrusted",
			     "%s was not written by this operator for this object (its seal is missing or does not "
			     "match), so the operator does nothing with it. %s",
			     s->untrusted, s->remedy);
		return;
	}
	/* A state a newer operator wrote: not even re-sealed or re-created here (the planner says the same). */
	if (state_version_refuse(s->reads.sts, ANNOTATION_RESIZE_STATE, "StatefulSet", a) ||
	    state_version_refuse(s->reads.backup, ANNOTATION_RESIZE_STATE, "ConfigMap", a))
		return;
	if (s->backup_trust == RESIZE_TRUST_RESEAL) {
		/* Before anything else: the set it is sealed to may go with the next step. */
		action_patch(a, "ResealBackup", &KUBE_CONFIGMAPS, kube_obj_str(s->reads.backup, "metadata.name"),
			     resize_trust_reseal_backup(rc->deps.base.seal, s->reads.backup));
		a->answers = ACTION_STALE_409;
		return;
	}
	if (s->set_trust == RESIZE_TRUST_UNCONFIRMED) {
		delete_unconfirmed(s, a);
		return;
	}
	plan_on(rc, s, now_ms, a);
	if (s->set_trust == RESIZE_TRUST_RESEAL && !writes_set_state(a)) {
		/* The backup vouches for the set only while it is there: seal the set for itself first. */
		action_release(a);
		action_init(a);
		action_patch(a, "ResealState", &KUBE_STATEFULSETS, k->name,
			     resize_trust_reseal_statefulset(rc->deps.base.seal, s->reads.sts));
		a->answers = ACTION_STALE_409;
	}
}

/* Events go to the StatefulSet; while it is re-created, to its saved copy (or, refused, to the backup). */
static const json_t *about(void *ctx, void *snapshot)
{
	(void)ctx;
	struct snapshot *s = snapshot;
	if (s->reads.sts)
		return s->reads.sts;
	/* Events about a set being re-created name its saved copy; the ConfigMap when that is unreadable. */
	return s->untrusted || !s->saved ? s->reads.backup : s->saved;
}

/* ---- the steps that are the controller's own ---- */

/*
 * The state a step writes is sealed for the object it is written to
 * (state_seal.h): the set, or its backup while it is gone (each patch has
 * that object's resourceVersion as precondition, so the UID is the one
 * sealed for). A re-create's state is sealed for a re-create from the
 * backup: the new set's UID is not known yet. SetState and Finish are a
 * merge patch of the state and status annotations (a NULL value removes
 * the key).
 */
/* The seal of a re-created set's state: bound to its backup's UID (borrowed), the new set's UID being unknown. */
static struct state_seal_scope recreate_scope(const struct reconcile_key *k, const json_t *backup)
{
	return (struct state_seal_scope){k->ns, k->name, STATE_SEAL_RECREATED_FROM, kube_obj_str(backup, "metadata.uid")};
}

static void prepare(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a)
{
	struct resize_ctx *rc = ctx;
	struct snapshot *s = snapshot;
	bool on_set = a->resource == &KUBE_STATEFULSETS || a->resource == &KUBE_CONFIGMAPS;
	if (a->verb == ACTION_PATCH && on_set && !a->body) {
		const json_t *on = s->reads.sts ? s->reads.sts : s->reads.backup;
		char *text = a->state ? resize_state_text(a->state) : NULL;
		a->body = json_pack("{s:{s:{s:o, s:o}}}", "metadata", "annotations", ANNOTATION_RESIZE_STATE,
				    text ? json_string(text) : json_null(), ANNOTATION_RESIZE_STATUS,
				    a->status ? json_string(a->status) : json_null());
		free(text);
		/* resourceVersion in a merge patch is a precondition: a stale decision conflicts. */
		action_patch_precondition(a, kube_obj_str(on, "metadata.resourceVersion"), NULL);
	}
	json_t *ann = json_object_get(json_object_get(a->body, "metadata"), "annotations");
	if (!on_set || !json_object_get(ann, ANNOTATION_RESIZE_STATE))
		return;
	const json_t *to = a->resource == &KUBE_STATEFULSETS ? s->reads.sts : s->reads.backup;
	struct state_seal_scope scope = {k->ns, k->name, STATE_SEAL_OBJECT, kube_obj_str(to, "metadata.uid")};
	if (a->verb == ACTION_OWN && a->resource == &KUBE_STATEFULSETS)
		scope = recreate_scope(k, s->reads.backup); /* Recreate */
	state_seal_annotate(rc->deps.base.seal, ann, &scope, ANNOTATION_RESIZE_STATE);
}

/*
 * Before any write to PersistentVolume pv_name, or a claim asking for it:
 * a live read shows it is a volume of StatefulSet ns/name (see
 * resize_volume_owner.c). The state that named it is not proof: a forged
 * state must not turn the operator's PV rights against another tenant's
 * volumes. A volume that is gone passes (the write then finds it gone).
 */
static int check_volume_ours(struct resize_ctx *rc, const char *ns, const char *name, const char *pv_name,
			     struct kube_error *err)
{
	json_t *pv = NULL, *claim = NULL;
	if (kube_get(rc->deps.base.client, &KUBE_PVS, NULL, pv_name, &pv, err) < 0)
		return err->code == 404 ? 0 : -1;
	const char *claim_name = resize_volume_claim_of_set(pv, ns, name);
	struct kube_error cerr;
	if (claim_name && kube_get(rc->deps.base.client, &KUBE_PVCS, ns, claim_name, &claim, &cerr) < 0 && cerr.code != 404) {
		*err = cerr;
		json_decref(pv);
		return -1;
	}
	const char *why = NULL;
	bool owned = resize_volume_owned(pv, claim, ns, name, &why);
	json_decref(claim);
	json_decref(pv);
	if (owned)
		return 0;
	err->code = 0;
	snprintf(err->reason, sizeof(err->reason), "VolumeNotOwned");
	snprintf(err->message, sizeof(err->message),
		 "PersistentVolume %s is not a volume of StatefulSet %s/%s (%s); the operator will not change it. "
		 "If the resize-state names it, the state is wrong: abort the resize or remove the state",
		 pv_name, ns, name, why);
	return -1;
}

/* The PV a write touches, if any: the PV itself, or the volume a claim to create asks for. */
static const char *volume_written(const struct action *a)
{
	if ((a->verb == ACTION_PATCH || a->verb == ACTION_DELETE) && a->resource == &KUBE_PVS)
		return a->name;
	if (a->verb == ACTION_CREATE && a->resource == &KUBE_PVCS)
		return kube_obj_str(a->body, "spec.volumeName");
	return NULL;
}

/*
 * Before the orphan delete: the StatefulSet the resize will re-create
 * (with the new templates, as after the last batch of a copy), sealed as
 * prepare seals it, tried on the API server (resize_dry_run.h). What it
 * refuses is not deleted. A set without its saved copy or state is the
 * planner's to judge.
 */
static int check_recreate(struct resize_ctx *rc, const struct reconcile_key *k, const struct snapshot *s,
			  struct kube_error *err)
{
	json_t *saved = plan_saved_statefulset(s->reads.backup);
	struct resize_state st;
	resize_state_read(s->reads.sts, &st);
	int r = 0;
	if (saved && st.json) {
		json_t *state = json_deep_copy(st.json);
		json_t *sts = resize_recreated(saved, state, true, false);
		json_t *ann = json_object_get(json_object_get(sts, "metadata"), "annotations");
		/* Sealed as the Recreate step seals it: the webhook's create guard judges a dry run too. */
		struct state_seal_scope scope = recreate_scope(k, s->reads.backup);
		state_seal_annotate(rc->deps.base.seal, ann, &scope, ANNOTATION_RESIZE_STATE);
		r = resize_dry_run_recreate(rc->deps.base.client, k->ns, sts, err);
		json_decref(sts);
		json_decref(state);
	}
	resize_state_release(&st);
	json_decref(saved);
	return r;
}

static int check(void *ctx, const struct reconcile_key *k, void *snapshot, struct action *a, struct kube_error *err)
{
	const char *pv = volume_written(a);
	if (a->verb == ACTION_DELETE && a->resource == &KUBE_STATEFULSETS && streq(a->propagation, "Orphan"))
		return check_recreate(ctx, k, snapshot, err);
	return pv && check_volume_ours(ctx, k->ns, k->name, pv, err) < 0 ? -1 : 0;
}

/* Sets the state annotation in ann (borrowed), sealed for scope. */
static void annotate_state(struct resize_ctx *rc, json_t *ann, const struct state_seal_scope *scope,
			   const json_t *state)
{
	char *text = resize_state_text(state);
	json_object_set_new(ann, ANNOTATION_RESIZE_STATE, json_string(text));
	free(text);
	state_seal_annotate(rc->deps.base.seal, ann, scope, ANNOTATION_RESIZE_STATE);
}

/*
 * Save: the StatefulSet as the server has it (a fresh GET, every field),
 * with the state, into its backup, sealed for the set it saves (the
 * ConfigMap's UID is not known before the create), then at once for the
 * ConfigMap itself. A crash in between is seen next time (RESEAL).
 */
static int save(struct resize_ctx *rc, const struct reconcile_key *k, const struct action *a, struct kube_error *err)
{
	json_t *live = NULL, *saved = NULL, *cm = NULL, *made = NULL;
	char *text = NULL, *cm_name = NULL;
	int r = kube_get(rc->deps.base.client, &KUBE_STATEFULSETS, k->ns, k->name, &live, err);
	if (r < 0)
		goto out;
	struct state_seal_scope live_scope = state_seal_scope_of(live);
	live_scope.ns = k->ns;
	live_scope.name = k->name;
	saved = resize_saved_copy(live);
	json_t *meta = json_object_get(saved, "metadata");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	annotate_state(rc, json_object_get(meta, "annotations"), &live_scope, a->state);
	text = json_dumps(saved, JSON_COMPACT);
	cm_name = resize_backup_name(k->name);
	char *state_text = resize_state_text(a->state);
	cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
		       "metadata", "name", cm_name, "namespace", k->ns, "labels", LABEL_SAVED_STATEFULSET, k->name,
		       "annotations", ANNOTATION_RESIZE_STATE, state_text, "data", BACKUP_KEY, text);
	free(state_text);
	/* The saved StatefulSet is sealed as a whole: it is what the operator re-creates. */
	struct state_seal_scope from = {k->ns, k->name, STATE_SEAL_SAVED_FROM, live_scope.uid};
	resize_trust_seal_backup(rc->deps.base.seal, cm, &from);
	r = kube_create(rc->deps.base.client, &KUBE_CONFIGMAPS, k->ns, cm, &made, err);
	if (r < 0) {
		if (err->code == 409)
			r = 0; /* saved before a crash: the planner reads it next time */
		goto out;
	}
	json_t *reseal = resize_trust_reseal_backup(rc->deps.base.seal, made);
	struct kube_error perr;
	if (kube_patch(rc->deps.base.client, &KUBE_CONFIGMAPS, k->ns, cm_name, NULL, KUBE_PATCH_MERGE, reseal, NULL,
		       &perr) < 0)
		log_info("resize", "%s: saved copy not sealed for itself yet (%s); done next time", k->key, perr.message);
	json_decref(reseal);
out:
	json_decref(made);
	json_decref(cm);
	free(cm_name);
	free(text);
	json_decref(saved);
	json_decref(live);
	return r;
}

/*
 * Recreate: the StatefulSet from its saved copy (a->body, its state sealed
 * for a re-create from the backup), then the backup records, sealed, the
 * UID the create answered: only that set may carry the re-create's state
 * (resize_trust.h). A set there already (409) is looked at again.
 */
static int recreate(struct resize_ctx *rc, const struct reconcile_key *k, const struct snapshot *s,
		    const struct action *a, bool *stale, struct kube_error *err)
{
	json_t *made = NULL;
	if (kube_create(rc->deps.base.client, &KUBE_STATEFULSETS, k->ns, a->body, &made, err) < 0) {
		if (err->code != 409)
			return -1;
		*stale = true;
		return 0;
	}
	json_t *confirm = resize_trust_confirm(rc->deps.base.seal, s->reads.backup, kube_obj_str(made, "metadata.uid"));
	struct kube_error perr;
	if (kube_patch(rc->deps.base.client, &KUBE_CONFIGMAPS, k->ns, kube_obj_str(s->reads.backup, "metadata.name"),
		       NULL, KUBE_PATCH_MERGE, confirm, NULL, &perr) < 0)
		log_warn("resize", "%s: the re-create is not recorded on its saved copy (%s): it is re-created again",
			 k->key, perr.message);
	json_decref(confirm);
	json_decref(made);
	return 0;
}

static int perform_own(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a,
		       bool *stale, struct kube_error *err)
{
	if (a->resource == &KUBE_STATEFULSETS)
		return recreate(ctx, k, snapshot, a, stale, err);
	return save(ctx, k, a, err);
}

/*
 * Progress within a phase (replica k of n) shows in resize-status when a
 * step acts; waits are not written (each would cost a request, and the
 * last step already says where it stands). Best effort.
 */
static void show_status(struct resize_ctx *rc, const struct reconcile_key *k, const json_t *sts, const char *status)
{
	const char *shown = kube_obj_annotation(sts, ANNOTATION_RESIZE_STATUS);
	if (!sts || !status || (shown && !strcmp(shown, status)))
		return;
	/* The set's UID: a precondition, so the request may go on a kept-alive connection. */
	json_t *p = json_pack("{s:{s:{s:s}, s:s*}}", "metadata", "annotations", ANNOTATION_RESIZE_STATUS, status, "uid",
			      kube_obj_str(sts, "metadata.uid"));
	struct kube_error perr;
	if (kube_patch(rc->deps.base.client, &KUBE_STATEFULSETS, k->ns, k->name, NULL, KUBE_PATCH_MERGE, p, NULL, &perr) < 0)
		log_debug("resize", "%s: status not updated: %s", k->key, perr.message);
	json_decref(p);
}

static void performed(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a, int r,
		      const struct kube_error *err)
{
	struct resize_ctx *rc = ctx;
	struct snapshot *s = snapshot;
	const char *step = action_name(a);
	/* A refusal that carries a status (desired templates refused) shows it too: nothing else is written. */
	if (r == 0 && (!strcmp(step, "PatchPVC") || !strcmp(step, "DeletePod") || a->verb == ACTION_REFUSE))
		show_status(rc, k, s->reads.sts, a->status);
	if (r < 0 && s->reads.sts && !strcmp(err->reason, "VolumeNotOwned"))
		event_record(rc->deps.base.events, s->reads.sts, "Warning", "ResizeRefused", "%s", err->message);
	if (r < 0 && s->reads.sts && !strcmp(err->reason, RESIZE_RECREATE_REFUSED)) {
		event_record(rc->deps.base.events, s->reads.sts, "Warning", "ResizeRecreateRefused",
			     "the API server would refuse the StatefulSet this resize re-creates (a dry-run create "
			     "answered %s), so it is not deleted: nothing changed, and the operator tries again with "
			     "backoff. Fix what the answer names (often annotation %s), or remove annotation %s to "
			     "give this resize up",
			     err->message, ANNOTATION_DESIRED_TEMPLATES, ANNOTATION_RESIZE_STATE);
		show_status(rc, k, s->reads.sts,
			    "Refused: the API server would not take the re-created StatefulSet (Event "
			    "ResizeRecreateRefused); nothing deleted");
	}
	/*
	 * A refused LowerRequest (or RevertAttributesClass) is the outcome to
	 * record: the planner records it with the next SetState.
	 */
	pthread_mutex_lock(&rc->lock);
	if (r < 0 && (!strcmp(step, "LowerRequest") || !strcmp(step, "RevertAttributesClass"))) {
		json_t *mine = json_object_get(rc->refusals, k->key);
		if (!mine) {
			mine = json_object();
			json_object_set_new(rc->refusals, k->key, mine);
		}
		json_object_set_new(mine, a->name, json_string(err->message));
	} else if (r == 0 && (!strcmp(step, "SetState") || !strcmp(step, "Finish"))) {
		json_object_del(rc->refusals, k->key);
	}
	pthread_mutex_unlock(&rc->lock);
}

/* ---- the caches and the registration ---- */

void resize_caches_index(const struct resize_caches *c)
{
	if (!store_has_index(c->statefulsets, RESIZE_STATE_INDEX))
		store_add_index(c->statefulsets, RESIZE_STATE_INDEX, resize_state_index);
	set_index_ensure(c->pvcs, set_index_claim);
	set_index_ensure(c->pods, set_index_pod);
	if (c->pvs)
		set_index_ensure(c->pvs, set_index_volume);
	if (c->jobs)
		set_index_ensure(c->jobs, set_index_pod); /* by their copy-of label */
}

/* No resize annotation, state or saved copy: nothing asked of the resize controller but by the template. */
static bool asks_nothing(const json_t *sts, const json_t *backup)
{
	if (!sts || backup)
		return false;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)kube_obj_annotations(sts), key, v) {
		if (!strncmp(key, RESIZE_ANNOTATION_PREFIX, strlen(RESIZE_ANNOTATION_PREFIX)) ||
		    !strncmp(key, CLASS_ANNOTATION_PREFIX, strlen(CLASS_ANNOTATION_PREFIX)) ||
		    !strcmp(key, ANNOTATION_RESIZE_STATE) || !strcmp(key, ANNOTATION_DESIRED_TEMPLATES))
			return false;
	}
	return true;
}

void resize_read(const struct resize_caches *c, const char *key, bool everything, struct resize_reads *out)
{
	char *backup_key = resize_backup_name(key);
	memset(out, 0, sizeof(*out));
	if (store_refused(c->statefulsets, key) || store_refused(c->backups, backup_key)) {
		/*
		 * Too large to read (informer.h): the set is not gone, and a plan
		 * without it would take the saved copy for the set. Nothing is done
		 * until it is readable; its ObjectTooLarge Event says why.
		 */
		free(backup_key);
		out->partial = true;
		return;
	}
	out->sts = store_get(c->statefulsets, key);
	out->backup = store_get(c->backups, backup_key);
	out->pvcs = store_by_index(c->pvcs, SET_INDEX, key);
	free(backup_key);
	if (!everything && asks_nothing(out->sts, out->backup)) {
		out->partial = true;
		return;
	}
	out->pods = store_by_index(c->pods, SET_INDEX, key);
	out->classes = c->classes ? store_list(c->classes) : NULL;
	out->pvs = c->pvs ? store_by_index(c->pvs, SET_INDEX, key) : NULL;
	out->jobs = c->jobs ? store_by_index(c->jobs, SET_INDEX, key) : NULL;
}

void resize_reads_release(struct resize_reads *r)
{
	json_decref(r->sts);
	json_decref(r->backup);
	json_decref(r->pvcs);
	json_decref(r->pods);
	json_decref(r->classes);
	json_decref(r->pvs);
	json_decref(r->jobs);
	memset(r, 0, sizeof(*r));
}

static void free_ctx(void *ctx)
{
	struct resize_ctx *rc = ctx;
	json_decref(rc->refusals);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}

struct controller *resize_controller_new(const struct resize_deps *deps)
{
	static const struct reconciler_ops ops = {.name = "resize",
						  .read = read_snapshot,
						  .release = release_snapshot,
						  .plan = plan,
						  .about = about,
						  .prepare = prepare,
						  .check = check,
						  .perform_own = perform_own,
						  .performed = performed};
	struct resize_ctx *rc = xcalloc(1, sizeof(*rc));
	rc->deps = *deps;
	rc->refusals = json_object();
	pthread_mutex_init(&rc->lock, NULL);
	struct reconciler_deps rd = {.client = deps->base.client,
				     .events = deps->base.events,
				     .count = deps->base.obs ? observability_count : NULL,
				     .observe = deps->base.obs ? observability_observe : NULL,
				     .counter = deps->base.obs,

				     .workers = deps->base.workers};
	struct controller *c = rc->controller = reconciler_new(&ops, rc, free_ctx, &rd);
	struct informer_handlers h;

	struct manager *m = deps->base.manager;
	struct informer *sts = manager_informer(m, &KUBE_STATEFULSETS);
	struct informer *pvcs = manager_informer(m, &KUBE_PVCS);
	struct informer *pods = manager_informer(m, &KUBE_PODS);
	struct informer *backups = manager_informer_selected(m, &KUBE_CONFIGMAPS, LABEL_SAVED_STATEFULSET);
	rc->caches.statefulsets = informer_store(sts);
	rc->caches.pvcs = informer_store(pvcs);
	rc->caches.pods = informer_store(pods);
	rc->caches.backups = informer_store(backups);
	if (deps->can_read_storage_classes) {
		/* Cluster scope only: the copy strategy rebinds PersistentVolumes. */
		rc->caches.classes = informer_store(manager_informer(m, &KUBE_STORAGECLASSES));
		struct informer *pvs = manager_informer(m, &KUBE_PVS);
		struct informer *jobs = manager_informer_selected(m, &KUBE_JOBS, LABEL_COPY_OF);
		rc->caches.pvs = informer_store(pvs);
		rc->caches.jobs = informer_store(jobs);
		h = controller_label_handlers(c, LABEL_COPY_OF);
		informer_add_handlers(jobs, &h);
		h = controller_mapped_handlers(c, map_volume, rc);
		informer_add_handlers(pvs, &h);
	}
	resize_caches_index(&rc->caches);
	h = controller_object_handlers(c);
	informer_add_handlers(sts, &h);
	h = controller_mapped_handlers(c, map_claim, rc);
	informer_add_handlers(pvcs, &h);
	h = controller_owner_handlers(c, "StatefulSet");
	informer_add_handlers(pods, &h);
	h = controller_mapped_handlers(c, map_pod, rc);
	informer_add_handlers(pods, &h);
	h = controller_label_handlers(c, LABEL_SAVED_STATEFULSET);
	informer_add_handlers(backups, &h);
	return c;
}
