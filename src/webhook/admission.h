/*
 * The mutating admission webhook's decision on a StatefulSet update
 * (GitOps, issue 16): volumeClaimTemplates are immutable, so an update that
 * changes them is turned into one the API server accepts. The stored
 * templates are put back into the object, the applied ones are recorded in
 * ANNOTATION_DESIRED_TEMPLATES (contract.h) for the resize controller, and
 * every other change of the update goes through untouched. A change the
 * operator cannot carry out is denied with a message that says what to fix.
 * A create of a StatefulSet that a resize has deleted and is about to
 * re-create (its saved copy, sealed by the operator, exists) is refused
 * unless it is the operator's own: sent by the operator's identity and
 * carrying the resize state sealed for a re-create from that saved copy
 * (resize_trust.h). So a GitOps tool healing the "missing" object, or a
 * user replaying the operator's create, cannot take the resize's place
 * mid-swap; and a ConfigMap of that name that the operator did not seal
 * (anyone who may create ConfigMaps can make one) holds no create back.
 *
 * Pure: no I/O, no clock but the review's time budget (view->budget);
 * answers from what the caller's caches hold. Safe from any thread on
 * inputs nobody modifies.
 */
#ifndef SOP_WEBHOOK_ADMISSION_H
#define SOP_WEBHOOK_ADMISSION_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/state_seal.h"

/*
 * The webhook configuration's matchConditions expression: only updates
 * whose templates differ reach the webhook, so every other update never
 * waits on it. has() guards both sides because a missing field is a CEL
 * error, and with failurePolicy Ignore an error skips the webhook: the
 * first template added to a set that had none would then be refused.
 */
#define ADMISSION_MATCH_CONDITION                                                           \
	"(has(object.spec.volumeClaimTemplates) ? object.spec.volumeClaimTemplates : []) != " \
	"(has(oldObject.spec.volumeClaimTemplates) ? oldObject.spec.volumeClaimTemplates : [])"

/*
 * The most templates one update may name (old or new); more is denied,
 * before any check that compares templates in pairs or walks the pod
 * template once per template, so the work stays linear in the review.
 */
#define ADMISSION_MAX_TEMPLATES 16

struct work_budget;

/* What the caches know of the cluster; all borrowed. */
struct admission_view {
	/*
	 * Every StorageClass (array). NULL: the operator cannot read them
	 * (namespace scope), so it cannot resize: a new size or class is denied.
	 */
	const json_t *storage_classes;
	const json_t *attributes_classes; /* every VolumeAttributesClass (array); NULL = the cluster serves none */
	bool attributes_classes_unreadable; /* attributes_classes NULL: served, but the operator may not list them */
	/*
	 * attributes_classes NULL: the caller keeps no list of them (the resize
	 * controller), so a name is checked for its form only (a DNS subdomain,
	 * as the API server requires of a claim's).
	 */
	bool attributes_classes_unlisted;
	/*
	 * ConfigMap <name>-sts-backup of namespace ns, where a resize keeps its
	 * saved copy of StatefulSet ns/name while it has the set deleted: a new
	 * reference, or NULL when there is none. NULL: none is known.
	 */
	json_t *(*saved_copy)(void *ctx, const char *ns, const char *name);
	void *saved_copy_ctx;
	/*
	 * The review's time budget (util/work_budget.h; its steps are counted
	 * here), or NULL: none. Once it is spent the decision stops and its
	 * answer (allowed, untouched) means nothing was decided: the caller
	 * sends an error instead (webhook.c: 503, which failurePolicy Ignore
	 * turns into the API server's own judgement).
	 */
	struct work_budget *budget;
	const struct state_seal *seal; /* checks a saved copy and a re-create's state; NULL: no copy holds */
	const char *operator_user;     /* the operator's own username; NULL: not known, the seal alone decides */
};

/*
 * The AdmissionReview (admission.k8s.io/v1) answering review (borrowed: the
 * body the API server POSTed, parsed). Always a new reference, whose
 * response.uid echoes request.uid:
 *  - allowed, no patch: not an UPDATE of an apps/v1 StatefulSet, a
 *    subresource, a malformed request, the set opted out (label
 *    LABEL_WEBHOOK: WEBHOOK_DISABLED, or ANNOTATION_IGNORE "true"), or the
 *    templates identical. Whatever this does not understand it lets
 *    through; the API server then refuses a template change as it always did.
 *  - allowed with a JSONPatch (base64) and warnings: a change the operator
 *    carries out (sizes, storageClassName, volumeAttributesClassName,
 *    template labels and annotations, templates added or removed). The
 *    patch puts the stored templates back and sets the annotation; the
 *    rest of the update is untouched. Templates that ask for the same
 *    volumes written otherwise (order, status, "10Gi" as "10240Mi") get
 *    only the first op, and no annotation.
 *  - denied, status 422 (reason Invalid), message says what to fix: a
 *    change of any other field, a shrink without copy + allow-shrink, an
 *    unknown (attributes) class, expand with a class change or on a class
 *    that cannot expand, an attributes class set together with a change
 *    that copies, a per-template annotation that disagrees, an added
 *    template named no DNS label, a removed template still mounted, more
 *    than ADMISSION_MAX_TEMPLATES templates, and in namespace scope
 *    (view->storage_classes NULL) any new size or StorageClass, which
 *    the operator cannot carry out there (template_diff.c).
 *  - a CREATE of a StatefulSet whose saved copy the operator sealed:
 *    denied, status 409 (reason AlreadyExists), unless request.userInfo
 *    names the operator (view->operator_user) and the set's resize state
 *    is sealed for a re-create from that copy. A ConfigMap of the copy's
 *    name without the operator's seal: allowed, with a warning that says
 *    so. Any other CREATE: allowed.
 *  - denied, status 400: review is not an AdmissionReview v1 at all.
 * dryRun requests get the same answer: the only record is the object.
 * Serve every answer with HTTP 200: to the API server any other status is
 * a webhook failure, which failurePolicy Ignore turns into "allowed".
 */
json_t *admission_review(const json_t *review, const struct admission_view *view);

#endif
