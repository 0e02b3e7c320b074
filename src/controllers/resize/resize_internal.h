/*
 * What the files of src/controllers/resize share; private to it. Each
 * section names the file it is in. All pure (no I/O) and safe from any
 * thread; planners take in and st borrowed, and now_ms dates what the
 * state records.
 */
#ifndef SOP_RESIZE_INTERNAL_H
#define SOP_RESIZE_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "client/quantity.h"
#include "controllers/refusal.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_state.h"
#include "runtime/action.h"

/* Null-safe: a field missing (a state written by hand) compares unequal, never crashes. */
static inline bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static inline const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* How often to look again while the cluster works (watch events usually come first). */
#define POLL_MS 2000L

#define JOB_BACKOFF_LIMIT 2 /* a copy Job's retries before it counts as failed */

/*
 * ---- what the user asked (resize_request.c) ----
 *
 * What the user asked a StatefulSet's volumes to become, read from its
 * annotations: README.md lists them with their values, contract.h spells
 * them.
 */

#define COPY_TIMEOUT_DEFAULT_MS (6LL * 3600 * 1000)

#define RESIZE_MAX_TEMPLATES 16
#define RESIZE_NAME_MAX 254 /* a DNS subdomain, and its NUL */

enum resize_strategy { RESIZE_AUTO, RESIZE_EXPAND, RESIZE_COPY };

struct resize_target {
	char template_name[RESIZE_NAME_MAX];
	struct quantity size;       /* what the volumes should become */
	struct quantity template_size; /* what the template says now */
	char storage_class[RESIZE_NAME_MAX]; /* the class to move to; "" = the template's own */
};

struct resize_request {
	enum resize_strategy strategy;
	bool allow_shrink;
	bool ignore;
	bool abort;
	/* The copy strategy's settings (validated; strings borrowed from the StatefulSet). */
	bool offline;
	bool precopy;
	const char *copy_image;           /* NULL: --copy-image */
	long long copy_timeout_ms;
	long long keep_old_ms;            /* 0: delete the old volumes when the resize completes */
	const char *copy_resources;       /* JSON ResourceRequirements, or NULL */
	const char *copy_pod_annotations; /* JSON object of strings, or NULL */
	int ntargets;
	struct resize_target targets[RESIZE_MAX_TEMPLATES];
	/*
	 * The desired-templates annotation (borrowed from the StatefulSet), or
	 * NULL; templates_change: it asks more than the sizes and classes in
	 * targets (claim labels/annotations, templates added or removed), so
	 * the StatefulSet is re-created with the desired templates.
	 */
	const char *desired;
	bool templates_change;
};

/*
 * Reads sts (borrowed) into req: the templates whose annotation asks for a
 * size other than the template's. Returns 0 (ntargets may be 0: nothing
 * asked), or -1 with *refusal filled when the request cannot be carried
 * out as written; then nothing must be changed. storage_classes (borrowed;
 * NULL: unreadable, namespace scope) are what the desired templates are
 * judged against.
 */
int resize_request_parse(const json_t *sts, const json_t *storage_classes, struct resize_request *req,
			 struct refusal *refusal) __attribute__((warn_unused_result));

/* The volumeClaimTemplate named name, or NULL. Borrowed. */
const json_t *resize_template(const json_t *sts, const char *name);

/*
 * One template's size (text) or StorageClass (cls), asked by annotation
 * key, added to req under the rules of resize.stateful-operator.io/<t> and
 * storage-class.stateful-operator.io/<t>: an unknown template, a size that
 * is no quantity, a shrink without copy and allow-shrink, a class change
 * under expand are refused. Nothing is added when it is so already.
 */
int resize_request_add_size(const json_t *sts, const char *key, const char *tmpl, const char *text,
			    struct resize_request *req, struct refusal *refusal) __attribute__((warn_unused_result));
int resize_request_add_class(const json_t *sts, const char *key, const char *tmpl, const char *cls,
			     struct resize_request *req, struct refusal *refusal) __attribute__((warn_unused_result));

/*
 * ---- the desired templates (resize_desired.c) ----
 *
 * The admission webhook records the volumeClaimTemplates an update asked
 * for in ANNOTATION_DESIRED_TEMPLATES (a JSON array of {"metadata":
 * {"name", "labels"?, "annotations"?}, "spec"}); the StatefulSet keeps its
 * stored ones. Precedence: resize.stateful-operator.io/<t> and
 * storage-class.stateful-operator.io/<t> win over the desired templates
 * for their field (size, class). The webhook never lets them disagree at
 * admission, so a disagreement comes from an annotation changed later,
 * which is the newer word.
 */

/*
 * Reads the annotation text into *out (a new reference): a JSON array of
 * objects, each with a metadata.name and, when there, an object spec.
 * Anything else is refused (ResizeInvalidAnnotation). How many, and
 * whether the names are unique and valid, is the judgement's to say.
 */
int resize_desired_parse(const char *text, json_t **out, struct refusal *refusal)
	__attribute__((warn_unused_result));
/*
 * Adds to req (read from sts's other annotations already) what sts's
 * desired templates ask: size and class targets where no per-template
 * annotation speaks for that field, and req->desired/templates_change.
 * Judged first as the webhook judges an update (resize_desired_judge),
 * against storage_classes (borrowed; NULL: unreadable); refused like the
 * per-template annotations when it cannot be carried out. Nothing is read
 * from a set the operator ignores (req->ignore).
 */
int resize_desired_request(const json_t *sts, const json_t *storage_classes, struct resize_request *req,
			   struct refusal *refusal) __attribute__((warn_unused_result));
/*
 * The volumeClaimTemplates the StatefulSet gets: in desired's order, each
 * the stored template of that name (from stored, borrowed) with desired's
 * labels and annotations, and the keys of desired's spec set over its
 * spec (what the reduced form omits is kept; status dropped); a template
 * only desired has comes as desired wrote it. New reference.
 */
json_t *resize_templates_merged(const json_t *stored, const json_t *desired);
/*
 * resize_templates_merged with desired's resources and storageClassName
 * set over the stored ones too: the templates as they are once everything
 * desired asks is carried out, for the judgement. New reference.
 */
json_t *resize_templates_asked(const json_t *stored, const json_t *desired);

/*
 * ---- the desired templates judged (resize_desired_judge.c) ----
 *
 * Written by hand (kubectl annotate), the annotation never met the
 * admission webhook: the controller asks the webhook's own judgement
 * (webhook/template_diff.h) of it before acting on it, so what the webhook
 * would deny is refused here with the same message, and nothing changes.
 */

/* The Event reason of such a refusal; resize-status then says it too. */
#define RESIZE_INVALID_TEMPLATES "ResizeInvalidTemplates"
/* How resize-status begins while it says so. */
#define RESIZE_INVALID_TEMPLATES_STATUS "Refused: "

/*
 * Judges desired (borrowed, read by resize_desired_parse) as the
 * templates of sts (borrowed) once carried out: the stored ones with
 * desired's set over them, and each per-template annotation's size and
 * class over its template (they win for their field). storage_classes
 * (borrowed) as in resize_request_parse; VolumeAttributesClasses are not
 * cached here, so their names are checked for form only. Returns 0, or -1
 * with *refusal (RESIZE_INVALID_TEMPLATES) saying what the webhook would.
 */
int resize_desired_judge(const json_t *sts, const json_t *desired, const json_t *storage_classes,
			 struct refusal *refusal) __attribute__((warn_unused_result));
/*
 * "PatchClaimMetadata": the first claim of the set (highest ordinal first)
 * whose labels or annotations are not yet those of the template recorded
 * in state.templates gets one merge patch: keys set or changed by the
 * desired template set, keys the stored template (sts's) had and the
 * desired one does not removed. False when every claim has its metadata.
 */
bool resize_claim_metadata_step(const struct resize_inputs *in, const json_t *sts, const json_t *state,
				struct action *a);
/*
 * The Event when the re-create drops templates of saved that
 * state.templates does not have: their claims are kept. NULL when none is
 * dropped. New string.
 */
char *resize_templates_removed(const struct resize_inputs *in, const json_t *saved, const json_t *state);

/* ---- the names the resize reads and makes (resize_steps.c): each a new string ---- */

/* Pod <sts>-<ordinal>. */
char *resize_pod_name(const char *sts, long long ord);
/* Claim <template>-<sts>-<ordinal>, as the StatefulSet controller names it. */
char *resize_claim_name(const char *tmpl, const char *sts, long long ord);
/* "<template>-<sts>-": what the template's claims of the set start with. */
char *resize_claim_prefix(const char *tmpl, const char *sts);
/* The copy's new claim <claim>-copy. */
char *resize_new_claim_name(const char *claim);
/* ConfigMap <sts>-sts-backup: the saved StatefulSet. */
char *resize_backup_name(const char *sts);
/* Job "<sts>-<ordinal>-<suffix>", at most 63 characters (the job-name label). */
char *resize_job_name(const char *sts, long long ord, const char *suffix);

/* ---- reading the cluster's objects (resize_steps.c) ---- */

/* Compares a quantity string with q; a missing or bad string counts as smaller. */
int plan_cmp_size(const char *text, const struct quantity *q);
/* The StorageClass named name, or the default one (name NULL); NULL when none. Borrowed. */
const json_t *plan_storage_class(const struct resize_inputs *in, const char *name);
/* The StatefulSet saved in a backup ConfigMap (new reference), or NULL. */
json_t *plan_saved_statefulset(const json_t *backup);
/* The ordinals of sts (borrowed): *start, and the replica count. */
long long plan_replicas(const json_t *sts, long long *start);
/*
 * The pods of StatefulSet ns/sts are the set's with uid: the pods of
 * ordinals (a JSON array, borrowed), owned and Ready; or, ordinals NULL,
 * each of the count from start that exists, owned. Else false, *missing
 * naming the first that is not (a new string).
 */
bool plan_pods_adopted(const struct resize_inputs *in, const char *ns, const char *sts, const json_t *ordinals,
		       long long start, long long count, const char *uid, char **missing);
/* The backup holds the StatefulSet with UID uid as saved by this resize (its state names uid). */
bool plan_saved_for(const struct resize_inputs *in, const char *uid);
/*
 * The saved copy misses a change made to in->sts since it was taken: its
 * spec, labels or annotations other than the resize's own state and status
 * (a GitOps sync's desired templates, a scale, an edit, the other
 * controllers' state between Save and OrphanDelete). The set must be saved
 * again, or the re-created one would silently undo the change.
 */
bool plan_saved_is_stale(const struct resize_inputs *in);
/* The reclaim policy of pv, and the one the copy cycle recorded before it Retained it (or NULL). */
const char *plan_reclaim_policy(const json_t *pv);
const char *plan_original_policy(const json_t *pv);

/* ---- the steps every phase takes (resize_steps.c) ---- */

/* A refusal: a Warning with message (stolen); nothing changes. */
void plan_refuse(struct action *a, const char *reason, char *message);
/*
 * "SetState": writes st (stolen) and a->status on the StatefulSet, or on
 * its backup ConfigMap while it is gone: a merge patch of their
 * annotations, which the controller writes and seals (no body here).
 */
void plan_set_state(const struct resize_inputs *in, struct action *a, json_t *st);
/* "Finish": the state and status go from the StatefulSet. */
void plan_finish(const struct resize_inputs *in, struct action *a);
/* "Save": the StatefulSet with state st (stolen) into its backup ConfigMap (the controller's own step). */
void plan_save(struct action *a, json_t *st);
/* "OrphanDelete": the StatefulSet goes, its pods stay (UID precondition). */
void plan_orphan_delete(const struct resize_inputs *in, struct action *a);
/*
 * "Recreate": the StatefulSet from its saved copy, with the new volume
 * template when new_template, carrying state st (stolen) and, when
 * keep_abort, the abort asked on the ConfigMap. False when the backup
 * holds no readable StatefulSet: a is then a refusal with a Warning that
 * says so (the caller adds nothing).
 */
bool plan_recreate(const struct resize_inputs *in, struct action *a, json_t *st, bool new_template,
		   bool keep_abort);
/*
 * The StatefulSet plan_recreate creates from saved (borrowed): with the new
 * templates when new_template, carrying state st (borrowed; marked
 * restoreFieldManagers when saved has managers to put back) and, when
 * keep_abort, the abort. New reference; the state annotation is not sealed
 * yet (the controller seals what it sends).
 */
json_t *resize_recreated(const json_t *saved, json_t *st, bool new_template, bool keep_abort);
/* "DeleteBackup": the backup ConfigMap goes. */
void plan_delete_backup(const struct resize_inputs *in, struct action *a);
/*
 * After a re-create (state "restoreFieldManagers"): the saved set's
 * managedFields put back, with the flag cleared in the same patch.
 */
void plan_restore_field_managers(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
				 struct action *a);
/* A delete of obj (borrowed; UID precondition): gone or replaced already is done (seen next time). */
void plan_delete(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj);
/* plan_delete, or a wait while obj is being deleted already. True when the delete was chosen. */
bool plan_delete_or_wait(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj);
/*
 * A merge patch (body stolen) of PV pv, decided on its cached state: the
 * cached resourceVersion is a precondition, so a stale decision conflicts
 * (409, retried on fresh state) instead of undoing what the PV controller
 * just did, e.g. a pre-binding written over a binding.
 */
void plan_patch_pv(struct action *a, const char *what, const json_t *pv, json_t *body);
/* pv gets reclaim policy back, and the copy cycle's marks go: its last write to pv. */
void plan_restore_policy(struct action *a, const char *what, const json_t *pv, const char *policy);

/* ---- in place (resize_expand_plan.c; the map is in resize_plan.h): in->sts exists unless said otherwise ---- */

/* (none) -> Expanding with targets {template: size} (borrowed). */
void expand_start(const struct resize_inputs *in, long long now_ms, const json_t *targets, struct action *a);
void expand_expanding(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		      struct action *a);
void expand_saving(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		   struct action *a);
/* Recreating: in->sts may be NULL (orphan-deleted: re-create it from the backup). */
void expand_recreating(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		       struct action *a);
void expand_adopting(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		     struct action *a);

/* ---- a template added: the pods restarted to mount it (resize_added_volume.c) ---- */

/*
 * The first template of sts that the saved StatefulSet lacks and pod (of
 * ordinal) has no volume for, or NULL. Borrowed from sts.
 */
const char *resize_added_template_missing(const json_t *sts, const json_t *saved, const json_t *pod,
					  long long ordinal);
/*
 * While the backup is kept: the next step restarting the pods made before a
 * template was added (state "restart": {pod, uid, ordinal}), or false when
 * every pod has every volume.
 */
bool resize_restart_for_added_templates(const struct resize_inputs *in, long long now_ms,
					const struct resize_state *st, struct action *a);
/*
 * Failed (either strategy): stays failed (and reported) until the user
 * changes what is asked (req; parsed: resize_request_parse's result);
 * in place, the requests are first lowered back to the capacity.
 */
void resize_failed(const struct resize_inputs *in, const struct resize_state *st, const struct resize_request *req,
		   int parsed, struct action *a);

/* ---- the attributes class, in place (resize_modify_plan.c; its map at its top) ---- */

/*
 * {template: VolumeAttributesClass} of the desired templates (borrowed)
 * whose volumeAttributesClassName differs from sts's stored template.
 * New reference (empty when none).
 */
json_t *modify_targets(const json_t *sts, const json_t *desired);
/* Modifying: the claims of st.attributesClasses, one a step; then Saving (or Failed: Infeasible). */
void expand_modifying(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		      struct action *a);
/* Failed after an infeasible class: the claim put back, then the outcome recorded. False when nothing to do. */
bool modify_revert(const struct resize_inputs *in, const struct resize_state *st, struct action *a);

/* ---- by copy (resize_copy_plan.c, its map at its top), while the state says "strategy": "copy" ---- */

/* Starts copying to targets {template: size} in classes {template: class} (both borrowed). */
void copy_plan_start(const struct resize_inputs *in, long long now_ms, const struct resize_request *req,
		     const json_t *targets, const json_t *classes, struct action *a);
/*
 * Why the copy of targets {template: size} (borrowed) as req asks cannot be
 * done on volumes in volumeMode Block (resize_copy_block.c): a smaller
 * device, or a precopy. A new string with *reason its Event reason, or NULL.
 */
char *copy_block_refusal(const struct resize_inputs *in, const struct resize_request *req, const json_t *targets,
			 const char **reason);
/* The next step of a copy resize; abort_asked: the user asked to abort (on the set or its saved copy). */
void copy_plan(const struct resize_inputs *in, long long now_ms, bool abort_asked, const struct resize_state *st,
	       struct action *a);

/*
 * Hands the first of old_volumes (PV names, borrowed) still taken for
 * StatefulSet ns/sts back to the user: its taken-for mark goes (it stays
 * Retained and labelled, its original policy named), so nothing the
 * operator reads later can make it write that PV again. True when a step
 * was chosen into a; false when none is marked.
 */
bool copy_hand_back(const struct resize_inputs *in, const char *ns, const char *sts, const json_t *old_volumes,
		    struct action *a);

/*
 * A volume of a batch, as the state records it: {"claim", "uid", "template",
 * "ordinal", "oldPV", "size", "accessModes", "labels", "volumeMode", and
 * once copied "newPV", "newClaimUID"}.
 *
 * resize_swap.c: puts claim vol.claim of StatefulSet ns/sts on PV pv_name
 * (requesting size), moving it off whatever PV it is on now, with both PVs
 * Retained before any claim is deleted. Returns 1 when the claim is Bound
 * to it and the PV has its own reclaim policy back, 0 when an action was
 * chosen into a, -1 when it cannot be done (*why: a new string saying why).
 */
int resize_bind_claim(const struct resize_inputs *in, const char *ns, const char *sts, long long now_ms,
		      const json_t *vol, const char *pv_name, const char *size, struct action *a, char **why);

/* ---- the objects the copy cycle creates (resize_copy_objects.c): each a new reference ---- */

/* The new claim <claim>-copy for vol: the target size and class, labelled as the operator's. */
json_t *copy_new_claim(const json_t *st, const char *ns, const char *sts_name, const json_t *vol);
/* The claim vol.claim re-created on PV pv (spec.volumeName), requesting size, with vol's labels. */
json_t *copy_rebound_claim(const char *ns, const json_t *vol, const json_t *pv, const char *size);
/*
 * The Job copying replica ord's volumes vols (pass "precopy", "full" or
 * "delta"), with the image, timeout, resources and pod annotations of state
 * st, pinned where the source volume (or, for a precopy, the running pod)
 * is. A volume in volumeMode Block is handed to it as two volumeDevices,
 * at the paths a file system would be mounted at.
 */
json_t *copy_job(const struct resize_inputs *in, const json_t *st, const char *ns, const char *sts_name,
		 long long ord, const char *pass, const json_t *vols);

/*
 * ---- whether a PersistentVolume is a StatefulSet's (resize_volume_owner.c) ----
 *
 * Judged only on what namespace users cannot forge: the PV itself
 * (cluster-scoped) and the live claim it is bound to. The controller asks
 * this, on a fresh read, before every write to a PV; names in the resize
 * state only say which PV a step is about, never that it may be changed.
 */

/*
 * The claim pv's claimRef names, if it could be one of StatefulSet
 * ns/sts's (<template>-<sts>-<ordinal>, or the copy cycle's
 * <template>-<sts>-<ordinal>-copy, in namespace ns); NULL otherwise.
 * Borrowed from pv.
 */
const char *resize_volume_claim_of_set(const json_t *pv, const char *ns, const char *sts);
/*
 * True when pv belongs to StatefulSet ns/sts: the copy cycle took it for
 * this set (annotation taken-for = ns/sts), or it is bound to claim, a
 * claim of this set that exists now (read live by the caller; NULL when
 * there is none) with the UID the claimRef names and pv as its volume.
 * Otherwise false, with why (static text) saying what is missing.
 */
bool resize_volume_owned(const json_t *pv, const json_t *claim, const char *ns, const char *sts, const char **why);

#endif
