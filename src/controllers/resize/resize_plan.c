#include "controllers/resize/resize_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/resize/resize_internal.h"
#include "controllers/state_version.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* ---- starting a resize ---- */

/*
 * The index in templates of the template claim was made from, when claim
 * is <template>-<sts>-<ordinal> (resize_claim_name) with the ordinal in
 * [start, start + replicas) and index (name: position) has the template;
 * else -1.
 */
static long long claim_template(const char *claim, const char *sts, long long start, long long replicas,
				const json_t *index)
{
	const char *dash = strrchr(claim, '-');
	size_t slen = strlen(sts);
	if (!dash || (size_t)(dash - claim) < slen + 2)
		return -1;
	char *end = NULL, digits[24];
	long long ord = strtoll(dash + 1, &end, 10);
	snprintf(digits, sizeof(digits), "%lld", ord);
	if (!dash[1] || *end || strcmp(digits, dash + 1) || ord < start || ord - start >= replicas)
		return -1;
	const char *set = dash - slen;
	if (strncmp(set, sts, slen) || set[-1] != '-')
		return -1;
	const json_t *i = json_object_getn(index, claim, (size_t)(set - 1 - claim));
	return i ? (long long)json_integer_value(i) : -1;
}

static const char *template_size_at(const json_t *templates, long long i)
{
	return kube_obj_str(json_array_get(templates, (size_t)i), "spec.resources.requests.storage");
}

/*
 * Adds the vshn-style trigger: a template already bigger than some of its
 * PVCs (the user re-created the StatefulSet with a bigger template). One
 * pass over the set's claims, never a lookup per ordinal: spec.replicas is
 * the tenant's to write, up to two billion.
 */
static void add_template_targets(const struct resize_inputs *in, struct resize_request *req)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *sts_name = kube_obj_str(in->sts, "metadata.name");
	const json_t *templates = json_object_get(json_object_get(in->sts, "spec"), "volumeClaimTemplates");
	long long start, replicas = plan_replicas(in->sts, &start);
	size_t n = json_array_size(templates), i;
	json_t *t;
	if (!n || !sts_name || req->ntargets == RESIZE_MAX_TEMPLATES)
		return;
	/* The templates with a size, by name (the first of a name, as a lookup finds it). */
	json_t *index = json_object();
	bool *smaller = xcalloc(n, sizeof(*smaller));
	struct quantity want;
	json_array_foreach(templates, i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		const char *size = kube_obj_str(t, "spec.resources.requests.storage");
		if (tmpl && size && !json_object_get(index, tmpl) && quantity_parse(size, &want, NULL) == 0)
			json_object_set_new(index, tmpl, json_integer((json_int_t)i));
	}
	const json_t *p;
	json_array_foreach(in->pvcs, i, p) {
		const char *claim = kube_obj_str(p, "metadata.name");
		const char *claim_ns = kube_obj_str(p, "metadata.namespace");
		if (!claim || (ns && (!claim_ns || strcmp(claim_ns, ns))))
			continue;
		long long k = claim_template(claim, sts_name, start, replicas, index);
		if (k < 0 || smaller[k] || quantity_parse(template_size_at(templates, k), &want, NULL) < 0)
			continue;
		smaller[k] = plan_cmp_size(kube_obj_str(p, "spec.resources.requests.storage"), &want) < 0;
	}
	json_array_foreach(templates, i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		if (req->ntargets == RESIZE_MAX_TEMPLATES)
			break;
		if (!smaller[i])
			continue;
		bool asked = false;
		for (int k = 0; k < req->ntargets; k++)
			asked |= !strcmp(req->targets[k].template_name, tmpl);
		if (asked || quantity_parse(template_size_at(templates, i), &want, NULL) < 0)
			continue;
		struct resize_target *rt = &req->targets[req->ntargets++];
		memset(rt, 0, sizeof(*rt));
		snprintf(rt->template_name, sizeof(rt->template_name), "%s", tmpl);
		rt->size = want;
		rt->template_size = want;
	}
	free(smaller);
	json_decref(index);
}

/* Why target t cannot be carried out as asked (a new string), or NULL; *copy set when it needs the copy cycle. */
static char *check_target(const struct resize_inputs *in, const struct resize_request *req,
			  const struct resize_target *t, const char **reason, const json_t **class_out, bool *copy)
{
	if (!in->storage_classes) {
		*reason = "ResizeStorageClassUnknown";
		return xasprintf("cannot read StorageClasses (namespace scope: a Role cannot grant them), so whether %s "
				 "can grow in place is unknown; run the operator with cluster RBAC to resize",
				 t->template_name);
	}
	const char *class_name = kube_obj_str(resize_template(in->sts, t->template_name), "spec.storageClassName");
	const json_t *sc = plan_storage_class(in, class_name);
	*reason = "ResizeStorageClassNotFound";
	if (!sc && class_name)
		return xasprintf("volumeClaimTemplate %s names StorageClass \"%s\", which does not exist; create it "
				 "or fix the template",
				 t->template_name, class_name);
	if (!sc)
		return xasprintf("volumeClaimTemplate %s names no StorageClass and the cluster has no default one",
				 t->template_name);
	bool expandable = json_is_true(json_object_get(sc, "allowVolumeExpansion"));
	if (req->strategy == RESIZE_EXPAND && !expandable) {
		*reason = "ResizeNotExpandable";
		return xasprintf("strategy expand, but StorageClass %s does not allow volume expansion "
				 "(allowVolumeExpansion is not true); use strategy copy or auto",
				 kube_obj_str(sc, "metadata.name"));
	}
	if (t->storage_class[0] && !plan_storage_class(in, t->storage_class))
		return xasprintf("annotation " CLASS_ANNOTATION_PREFIX "%s names StorageClass \"%s\", which does not "
				 "exist; create it or fix the annotation",
				 t->template_name, t->storage_class);
	/* One strategy for the whole resize: copy as soon as one template needs it. */
	*copy |= !expandable || t->storage_class[0] || quantity_cmp(&t->size, &t->template_size) < 0;
	*class_out = sc;
	return NULL;
}

/*
 * Only the templates change (claims' labels and annotations, templates
 * added or removed): no data moves, so the in-place cycle carries it out
 * with nothing to expand: the claims get their metadata, then the
 * StatefulSet is re-created with the desired templates.
 */
static void templates_start(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	json_t *none = json_object();
	expand_start(in, now_ms, none, a);
	json_decref(none);
	action_event(a, "Normal", "ResizeStarted",
		     "updating the volumeClaimTemplates as applied: the claims' labels and annotations first, then "
		     "the StatefulSet is re-created with the new templates");
	action_status(a, "Updating the volumeClaimTemplates");
}

/* The first step of what req (completed here with the templates' own targets) asks; nothing when nothing is. */
static void resize_start(const struct resize_inputs *in, long long now_ms, struct resize_request *req,
			 struct action *a)
{
	add_template_targets(in, req);
	if (!req->ntargets && !req->templates_change) {
		/* Nothing asked: a refusal of desired templates since removed no longer stands. */
		const char *shown = kube_obj_annotation(in->sts, ANNOTATION_RESIZE_STATUS);
		if (shown && !strncmp(shown, RESIZE_INVALID_TEMPLATES_STATUS, strlen(RESIZE_INVALID_TEMPLATES_STATUS)))
			plan_finish(in, a);
		return;
	}
	json_t *targets = json_object();
	json_t *classes = json_object();
	/* Recorded at the start: a crash resumes, and the re-create uses, exactly these. */
	json_t *templates = req->desired ? json_loads(req->desired, 0, NULL) : NULL;
	json_t *attributes = NULL;
	bool copy = false;
	for (int i = 0; i < req->ntargets; i++) {
		const struct resize_target *t = &req->targets[i];
		const char *reason = NULL;
		const json_t *sc = NULL;
		char *why = check_target(in, req, t, &reason, &sc, &copy);
		if (why) {
			plan_refuse(a, reason, why);
			goto out;
		}
		char *size = quantity_format(&t->size);
		json_object_set_new(targets, t->template_name, json_string(size));
		free(size);
		const char *cls = t->storage_class[0] ? t->storage_class : kube_obj_str(sc, "metadata.name");
		json_object_set_new(classes, t->template_name, json_string(cls));
	}
	copy |= req->ntargets && req->strategy == RESIZE_COPY;
	attributes = modify_targets(in->sts, templates);
	if (copy && json_object_size(attributes)) {
		/* A copy makes new claims: their class would be changed after the re-create, not before. */
		plan_refuse(a, "ResizeAttributesClassWithCopy",
			    xasprintf("annotation %s changes a volumeAttributesClassName together with a change that "
				      "copies the data (a smaller size, another StorageClass, or a class that cannot "
				      "expand); apply the attributes class change on its own, before or after",
				      ANNOTATION_DESIRED_TEMPLATES));
		goto out;
	}
	if (!req->ntargets)
		templates_start(in, now_ms, a);
	else if (copy)
		copy_plan_start(in, now_ms, req, targets, classes, a);
	else
		expand_start(in, now_ms, targets, a);
	if (templates && a->state && !strcmp(action_name(a), "SetState")) {
		json_object_set(a->state, "templates", templates);
		if (json_object_size(attributes))
			json_object_set(a->state, "attributesClasses", attributes);
	}
out:
	json_decref(attributes);
	json_decref(templates);
	json_decref(classes);
	json_decref(targets);
}

/*
 * An abort asked on a StatefulSet the copy is orphan-deleting (a set in
 * deletion still takes patches) would vanish with it, and anything written
 * to it too: the abort is carried to the backup, which holds the resize
 * until the set is re-created, and acted on from there.
 */
static void carry_abort_to_backup(const struct resize_inputs *in, struct action *a)
{
	if (kube_obj_annotation_true(in->backup, ANNOTATION_ABORT)) {
		action_wait(a, POLL_MS); /* carried: acted on once the set is gone */
		return;
	}
	action_patch(a, "CarryAbort", &KUBE_CONFIGMAPS, kube_obj_str(in->backup, "metadata.name"),
		     json_pack("{s:{s:{s:s}}}", "metadata", "annotations", ANNOTATION_ABORT, "true"));
	action_patch_precondition(a, NULL, kube_obj_str(in->backup, "metadata.uid"));
	action_status(a, "Aborting: the abort is kept on ConfigMap %s while the StatefulSet is re-created",
		      kube_obj_str(in->backup, "metadata.name"));
}

/*
 * The backup's own state (where a copy keeps it while the set is gone)
 * stands at Copy or Swap of a batch, not restoring: the operator
 * re-creates the set only after the swap (or once a restore is done), so a
 * set there without a state was created by someone else (the webhook not
 * answering, an opt-out, no webhook) while the batch's claims may be
 * deleted or on other volumes. The backup is then the one record of where
 * their data is: why it must stay (a new string), or NULL when it is a
 * leftover. Read only to refuse: nothing is written from it.
 */
static char *swap_interrupted(const struct resize_inputs *in)
{
	struct resize_state st;
	resize_state_read(in->backup, &st);
	if (!st.copy || st.phase != RESIZE_PHASE_COPYING || st.restore ||
	    (st.stage != COPY_STAGE_COPY && st.stage != COPY_STAGE_SWAP)) {
		resize_state_release(&st);
		return NULL;
	}
	struct strbuf vols = STRBUF_INIT;
	size_t i;
	json_t *vol;
	json_array_foreach(json_object_get(st.batch, "volumes"), i, vol) {
		const char *claim = str_or(kube_obj_str(vol, "claim"), "?"), *copy = kube_obj_str(vol, "newPV");
		strbuf_appendf(&vols, "%s%s: original volume %s, ", i ? "; " : "", claim,
			       str_or(kube_obj_str(vol, "oldPV"), "?"));
		if (copy)
			strbuf_appendf(&vols, "copy on volume %s", copy);
		else
			strbuf_appendf(&vols, "copy on claim %s" TEMP_SUFFIX, claim);
	}
	char *ords = json_dumps(json_object_get(st.batch, "ordinals"), JSON_COMPACT);
	const char *cm = kube_obj_str(in->backup, "metadata.name");
	char *why = xasprintf("StatefulSet %s was created by someone else while the operator had it deleted to copy "
			      "replica(s) %s, whose volumes are in the middle of a swap (%s); ConfigMap %s records where "
			      "their data is, so the operator keeps it and changes nothing. To return the replicas to "
			      "their original volumes: annotate ConfigMap %s " ANNOTATION_ABORT "=true, then delete the "
			      "StatefulSet with --cascade=orphan and the pods of those replicas; the operator restores "
			      "them and re-creates the StatefulSet",
			      kube_obj_str(in->sts, "metadata.name"), ords ? ords : "?", strbuf_str(&vols), cm, cm);
	free(ords);
	strbuf_release(&vols);
	resize_state_release(&st);
	return why;
}

/* ---- the plan: a switch on the phase ---- */

static void plan_with_statefulset(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	struct resize_request req;
	struct refusal refusal;
	int parsed = resize_request_parse(in->sts, in->storage_classes, &req, &refusal);
	struct resize_state st;
	resize_state_read(in->sts, &st);
	char *why = NULL;
	if (parsed == 0 && req.ignore)
		goto out;
	/* A state a newer operator wrote (on the set, or the backup a start would delete) is not this one's to carry on. */
	if (state_version_refuse(in->sts, ANNOTATION_RESIZE_STATE, "StatefulSet", a) ||
	    state_version_refuse(in->backup, ANNOTATION_RESIZE_STATE, "ConfigMap", a))
		goto out;
	if (json_is_true(json_object_get(st.json, "restoreFieldManagers"))) {
		plan_restore_field_managers(in, now_ms, &st, a);
		goto out;
	}
	if (st.copy && (st.phase == RESIZE_PHASE_COPYING || st.phase == RESIZE_PHASE_CLEANING)) {
		/* Everything the copy needs was recorded when it started: the annotations may change now. */
		bool abort_asked = kube_obj_annotation_true(in->sts, ANNOTATION_ABORT);
		if (abort_asked && kube_obj_terminating(in->sts) && in->backup)
			carry_abort_to_backup(in, a);
		else
			copy_plan(in, now_ms, abort_asked, &st, a);
		goto out;
	}
	switch (st.phase) {
	case RESIZE_PHASE_NONE:
		if (parsed < 0) {
			/* Desired templates refused: written by hand, nobody was told at admission; resize-status says it. */
			if (streq(refusal.reason, RESIZE_INVALID_TEMPLATES))
				action_status(a, RESIZE_INVALID_TEMPLATES_STATUS "%s", refusal.message);
			plan_refuse(a, refusal.reason, refusal.message);
			refusal.message = NULL;
		} else if (in->backup && (why = swap_interrupted(in))) {
			plan_refuse(a, "ResizeInterrupted", why);
		} else if (in->backup) {
			/* A leftover copy of an earlier StatefulSet (a different UID now exists). */
			plan_delete_backup(in, a);
		} else if (!req.abort) {
			resize_start(in, now_ms, &req, a);
		}
		break;
	case RESIZE_PHASE_EXPANDING:
		if (!req.abort) {
			expand_expanding(in, now_ms, &st, a);
			break;
		}
		plan_finish(in, a);
		action_event(a, "Warning", "ResizeAborted",
			     "resize aborted on request; volumes already grown keep their new size (a volume "
			     "cannot shrink in place), the StatefulSet template is unchanged");
		break;
	case RESIZE_PHASE_MODIFYING:
		if (!req.abort) {
			expand_modifying(in, now_ms, &st, a);
			break;
		}
		plan_finish(in, a);
		action_event(a, "Warning", "ResizeAborted",
			     "resize aborted on request; claims already modified keep their new VolumeAttributesClass, "
			     "the StatefulSet template is unchanged");
		break;
	case RESIZE_PHASE_SAVING:
		expand_saving(in, now_ms, &st, a);
		break;
	case RESIZE_PHASE_RECREATING:
		expand_recreating(in, now_ms, &st, a);
		break;
	case RESIZE_PHASE_ADOPTING:
		expand_adopting(in, now_ms, &st, a);
		break;
	case RESIZE_PHASE_FAILED:
		resize_failed(in, &st, &req, parsed, a);
		break;
	case RESIZE_PHASE_COPYING:  /* without the copy strategy: not this version's */
	case RESIZE_PHASE_CLEANING:
	case RESIZE_PHASE_UNKNOWN:
		break;
	}
out:
	resize_state_release(&st);
	refusal_release(&refusal);
}

/* While the StatefulSet is gone, the state is on the backup ConfigMap, or in the copy it saved. */
static void plan_without_statefulset(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	struct resize_state st;
	if (state_version_refuse(in->backup, ANNOTATION_RESIZE_STATE, "ConfigMap", a) ||
	    state_version_refuse(saved, ANNOTATION_RESIZE_STATE, "saved StatefulSet", a)) {
		json_decref(saved);
		return;
	}
	if (!resize_state_read(in->backup, &st))
		resize_state_read(saved, &st);
	if (st.copy) {
		/* The user can abort on the ConfigMap while the StatefulSet is gone. */
		bool abort_asked = kube_obj_annotation_true(in->backup, ANNOTATION_ABORT) ||
				   kube_obj_annotation_true(saved, ANNOTATION_ABORT);
		if (!kube_obj_annotation_true(saved, ANNOTATION_IGNORE))
			copy_plan(in, now_ms, abort_asked, &st, a);
	} else if (st.phase == RESIZE_PHASE_RECREATING) {
		expand_recreating(in, now_ms, &st, a);
	}
	resize_state_release(&st);
	json_decref(saved);
}

void resize_plan(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	action_init(a);
	if (in->sts)
		plan_with_statefulset(in, now_ms, a);
	else if (in->backup)
		plan_without_statefulset(in, now_ms, a);
}
