#include "webhook/admission.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_trust.h"
#include "util/base64.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "webhook/template_diff.h"
#include "webhook/template_fields.h"

#define REVIEW_API_VERSION "admission.k8s.io/v1"
#define TEMPLATES_PATH "/spec/volumeClaimTemplates"

static bool same_str(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* ---- the answer ---- */

/* The AdmissionReview around response (stolen), echoing uid. New reference. */
static json_t *answer(const char *uid, json_t *response)
{
	json_object_set_new(response, "uid", json_string(uid ? uid : ""));
	return json_pack("{s:s, s:s, s:o}", "apiVersion", REVIEW_API_VERSION, "kind", "AdmissionReview", "response",
			 response);
}

static json_t *allowed(void)
{
	return json_pack("{s:b}", "allowed", 1);
}

/* The API server shows message after: admission webhook "<name>" denied the request: */
static json_t *denied(int code, const char *reason, const char *message)
{
	return json_pack("{s:b, s:{s:i, s:s, s:s}}", "allowed", 0, "status", "code", code, "reason", reason, "message",
			 message);
}

/* Allowed with patch (stolen: a JSON Patch array) and warnings (stolen, may be NULL). */
static json_t *patched(json_t *patch, json_t *warnings)
{
	char *text = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
	char *b64 = base64_encode(text, strlen(text));
	json_t *r = json_pack("{s:b, s:s, s:s}", "allowed", 1, "patchType", "JSONPatch", "patch", b64);
	if (warnings && json_array_size(warnings))
		json_object_set(r, "warnings", warnings);
	json_decref(warnings);
	json_decref(patch);
	free(text);
	free(b64);
	return r;
}

/* ---- the patch ---- */

/* A JSON Pointer reference token (RFC 6901): '~' is "~0", '/' is "~1". New string. */
static char *pointer_token(const char *key)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *p = key; *p; p++) {
		if (*p == '~')
			strbuf_appendf(&sb, "~0");
		else if (*p == '/')
			strbuf_appendf(&sb, "~1");
		else
			strbuf_appendf(&sb, "%c", *p);
	}
	return strbuf_detach(&sb);
}

/* Puts the stored templates back, exactly as stored (old NULL: the set had none). New reference. */
static json_t *restore_templates_op(const json_t *old)
{
	if (!old)
		return json_pack("{s:s, s:s}", "op", "remove", "path", TEMPLATES_PATH);
	return json_pack("{s:s, s:s, s:O}", "op", "add", "path", TEMPLATES_PATH, "value", old);
}

/* Sets annotation key to value on obj, whose metadata.annotations may be missing. New reference. */
static json_t *annotate_op(const json_t *obj, const char *key, const char *value)
{
	if (!json_is_object(kube_obj_annotations(obj)))
		return json_pack("{s:s, s:s, s:{s:s}}", "op", "add", "path", "/metadata/annotations", "value", key, value);
	char *token = pointer_token(key);
	char *path = xasprintf("/metadata/annotations/%s", token);
	json_t *op = json_pack("{s:s, s:s, s:s}", "op", "add", "path", path, "value", value);
	free(path);
	free(token);
	return op;
}

/* ---- the decision ---- */

static bool is_review(const json_t *review)
{
	const json_t *req = json_object_get(review, "request");
	return json_is_object(review) && same_str(kube_obj_str(review, "apiVersion"), REVIEW_API_VERSION) &&
	       same_str(kube_obj_str(review, "kind"), "AdmissionReview") && json_is_object(req) &&
	       json_is_string(json_object_get(req, "uid"));
}

/* An UPDATE of the StatefulSet itself (no subresource), with both objects there to compare. */
static bool statefulset_update(const json_t *req)
{
	const char *sub = kube_obj_str(req, "subResource");
	return same_str(kube_obj_str(req, "operation"), "UPDATE") && same_str(kube_obj_str(req, "kind.group"), "apps") &&
	       same_str(kube_obj_str(req, "kind.version"), "v1") &&
	       same_str(kube_obj_str(req, "kind.kind"), "StatefulSet") && (!sub || !*sub) &&
	       json_is_object(json_object_get(req, "object")) && json_is_object(json_object_get(req, "oldObject"));
}

/* A CREATE of a StatefulSet (no subresource). */
static bool statefulset_create(const json_t *req)
{
	const char *sub = kube_obj_str(req, "subResource");
	return same_str(kube_obj_str(req, "operation"), "CREATE") && same_str(kube_obj_str(req, "kind.group"), "apps") &&
	       same_str(kube_obj_str(req, "kind.version"), "v1") &&
	       same_str(kube_obj_str(req, "kind.kind"), "StatefulSet") && (!sub || !*sub) &&
	       json_is_object(json_object_get(req, "object"));
}

static bool opted_out(const json_t *sts)
{
	return same_str(kube_obj_label(sts, LABEL_WEBHOOK), WEBHOOK_DISABLED) ||
	       kube_obj_annotation_true(sts, ANNOTATION_IGNORE);
}

/* spec.volumeClaimTemplates; NULL when absent or null. Borrowed. */
static const json_t *templates_of(const json_t *sts)
{
	const json_t *t = json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
	return json_is_null(t) ? NULL : t;
}

/*
 * While a resize has the StatefulSet deleted (to take replicas down, or to
 * re-create it with new templates), the operator re-creates it from its
 * saved copy, carrying its resize state. A create by anyone else in that
 * window (a GitOps tool healing the "missing" object, a kubectl apply) would
 * start pods on claims in the middle of a swap and take the resize's place:
 * it is refused, to be retried once the operator's own is there (then it is
 * an update, which the webhook handles). The operator's own is told by who
 * sends it and by its state, sealed for a re-create from that very copy; a
 * copy the operator did not seal is no reason to refuse anything.
 */
static json_t *guard_recreate(const json_t *req, const struct admission_view *view)
{
	const json_t *sts = json_object_get(req, "object");
	const char *ns = kube_obj_str(req, "namespace"), *name = kube_obj_str(sts, "metadata.name");
	if (opted_out(sts) || !ns || !name || !view->saved_copy)
		return allowed();
	json_t *copy = view->saved_copy(view->saved_copy_ctx, ns, name);
	json_t *r = NULL;
	char *msg = NULL;
	if (!copy) {
		r = allowed();
	} else if (!view->seal || resize_trust_backup(view->seal, copy, NULL) != RESIZE_TRUST_SEALED) {
		msg = xasprintf("stateful-operator: ConfigMap %s" BACKUP_SUFFIX " is labelled as a saved copy of this "
				"StatefulSet but does not carry the operator's seal for it, so it holds nothing back; "
				"delete it if nobody needs it",
				name);
		r = json_pack("{s:b, s:[s]}", "allowed", 1, "warnings", msg);
	} else if (resize_trust_recreate_of(view->seal, sts, copy) &&
		   (!view->operator_user || same_str(kube_obj_str(req, "userInfo.username"), view->operator_user))) {
		r = allowed();
	} else {
		msg = xasprintf("stateful-operator is resizing the volumes of StatefulSet %s and re-creates it in a "
				"moment from its saved copy (ConfigMap %s" BACKUP_SUFFIX "); retry then: your manifest is "
				"applied as an update, and a change of its volumeClaimTemplates is carried out after "
				"this resize",
				name, name);
		r = denied(409, "AlreadyExists", msg);
	}
	free(msg);
	json_decref(copy);
	return r;
}

static json_t *decide(const json_t *req, const struct admission_view *view)
{
	const json_t *sts = json_object_get(req, "object"), *stored = json_object_get(req, "oldObject");
	if (statefulset_create(req))
		return guard_recreate(req, view);
	if (!statefulset_update(req) || opted_out(sts))
		return allowed();

	const json_t *old = templates_of(stored), *new = templates_of(sts);
	struct template_decision d;
	template_diff_decide(old, new, sts, view, &d);
	json_t *r = NULL;
	switch (d.verdict) {
	case TEMPLATES_NOT_UNDERSTOOD:
		r = allowed();
		break;
	case TEMPLATES_EQUAL:
		/* The same claims written otherwise (order, status, a size's unit): keep the stored text, so the rest
		   of the update passes. */
		if ((!old && !new) || (old && new && json_equal(old, new)))
			r = allowed();
		else
			r = patched(json_pack("[o]", restore_templates_op(old)),
				    json_pack("[s]", "stateful-operator: volumeClaimTemplates kept as stored: they ask "
						     "for the same volumes, written otherwise"));
		break;
	case TEMPLATES_DENIED:
		r = denied(422, "Invalid", d.message);
		break;
	case TEMPLATES_CHANGED: {
		char *text = template_desired_text(new);
		json_t *patch = json_pack("[o, o]", restore_templates_op(old),
					  annotate_op(sts, ANNOTATION_DESIRED_TEMPLATES, text));
		r = patched(patch, json_incref(d.warnings));
		free(text);
		break;
	}
	}
	template_decision_release(&d);
	return r;
}

json_t *admission_review(const json_t *review, const struct admission_view *view)
{
	const json_t *req = json_object_get(review, "request");
	const char *uid = kube_obj_str(req, "uid");
	if (!is_review(review))
		return answer(uid, denied(400, "BadRequest", "the body is not an AdmissionReview " REVIEW_API_VERSION
						      " with a request and its uid"));
	/* dryRun needs nothing different: the object is the only record, and a dry run does not store it. */
	return answer(uid, decide(req, view));
}
