/*
 * The desired volumeClaimTemplates (GitOps): what the admission webhook
 * recorded in ANNOTATION_DESIRED_TEMPLATES, read into the resize request,
 * merged into the template the StatefulSet is re-created with, and carried
 * to the claims (labels, annotations). The map is in resize_internal.h.
 */
#include "controllers/resize/resize_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "util/yaml_json.h"

static const json_t *templates_of(const json_t *sts)
{
	return json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
}

static const json_t *metadata_field(const json_t *tmpl, const char *key)
{
	return json_object_get(json_object_get(tmpl, "metadata"), key);
}

/* obj is absent, or a JSON object whose values are all strings (labels, annotations). */
static bool strings_or_absent(const json_t *obj)
{
	if (!obj)
		return true;
	if (!json_is_object(obj))
		return false;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v) if (!json_is_string(v)) return false;
	return true;
}

/*
 * Why template t is not one the controller can read, or NULL. Static
 * text. A name longer than any claim's cannot be a template's. How many
 * there are and whether their names are unique is the judgement's to say
 * (in the webhook's words): this is linear, under the annotation limits.
 */
static const char *template_problem(const json_t *t)
{
	const char *name = kube_obj_str(t, "metadata.name");
	if (!json_is_object(t))
		return "an element is not a JSON object";
	if (!name || !*name)
		return "a template has no metadata.name";
	if (strlen(name) >= RESIZE_NAME_MAX)
		return "a template's metadata.name is longer than 253 characters";
	if (json_object_get(t, "spec") && !json_is_object(json_object_get(t, "spec")))
		return "a template's spec is not a JSON object";
	if (!strings_or_absent(metadata_field(t, "labels")) || !strings_or_absent(metadata_field(t, "annotations")))
		return "a template's labels or annotations are not a JSON object of strings";
	return NULL;
}

int resize_desired_parse(const char *text, json_t **out, struct refusal *refusal)
{
	json_t *v = NULL;
	char *msg = NULL;
	*out = NULL;
	if (json_load_limited(text, strlen(text), 0, &doc_limits_annotation, &v, &msg) < 0) {
		int rc = refuse(refusal, "ResizeInvalidAnnotation",
				"annotation %s is not readable JSON (%s); apply the StatefulSet's manifest again, or "
				"remove the annotation",
				ANNOTATION_DESIRED_TEMPLATES, msg);
		free(msg);
		return rc;
	}
	const char *problem = json_is_array(v) ? NULL : "it is not a JSON array";
	size_t i;
	json_t *t;
	json_array_foreach(v, i, t) {
		if (!problem)
			problem = template_problem(t);
	}
	if (problem) {
		json_decref(v);
		return refuse(refusal, "ResizeInvalidAnnotation",
			      "annotation %s must be a JSON array of volumeClaimTemplates, each with metadata.name, "
			      "but %s; apply the StatefulSet's manifest again, or remove the annotation",
			      ANNOTATION_DESIRED_TEMPLATES, problem);
	}
	*out = v;
	return 0;
}

/* The annotation key that speaks for tmpl's field: prefix + tmpl is on sts. */
static bool annotation_speaks(const json_t *sts, const char *prefix, const char *tmpl)
{
	char *key = xasprintf("%s%s", prefix, tmpl);
	bool yes = kube_obj_annotation(sts, key) != NULL;
	free(key);
	return yes;
}

/* A copy of the stored templates as they compare with merged ones (their status dropped). New reference. */
static json_t *templates_as_stored(const json_t *stored)
{
	json_t *out = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(stored, i, t) {
		json_t *c = json_deep_copy(t);
		json_object_del(c, "status");
		json_array_append_new(out, c);
	}
	return out;
}

int resize_desired_request(const json_t *sts, const json_t *storage_classes, struct resize_request *req,
			   struct refusal *refusal)
{
	const char *text = kube_obj_annotation(sts, ANNOTATION_DESIRED_TEMPLATES);
	if (!text || req->ignore)
		return 0;
	json_t *desired = NULL;
	if (resize_desired_parse(text, &desired, refusal) < 0)
		return -1;
	int rc = resize_desired_judge(sts, desired, storage_classes, refusal);
	if (rc < 0)
		goto out;
	size_t i;
	json_t *d;
	json_array_foreach(desired, i, d) {
		const char *name = kube_obj_str(d, "metadata.name");
		const json_t *stored = resize_template(sts, name);
		if (!stored)
			continue; /* a template added: the re-create brings it */
		const char *size = kube_obj_str(d, "spec.resources.requests.storage");
		const char *cls = kube_obj_str(d, "spec.storageClassName");
		if (size && !annotation_speaks(sts, RESIZE_ANNOTATION_PREFIX, name))
			rc = resize_request_add_size(sts, ANNOTATION_DESIRED_TEMPLATES, name, size, req, refusal);
		if (rc == 0 && cls && !annotation_speaks(sts, CLASS_ANNOTATION_PREFIX, name))
			rc = resize_request_add_class(sts, ANNOTATION_DESIRED_TEMPLATES, name, cls, req, refusal);
		if (rc < 0)
			goto out;
	}
	json_t *merged = resize_templates_merged(templates_of(sts), desired);
	json_t *now = templates_as_stored(templates_of(sts));
	req->desired = text;
	req->templates_change = !json_equal(merged, now);
	json_decref(now);
	json_decref(merged);
out:
	json_decref(desired);
	return rc;
}

/* Sets or removes (absent in from) metadata key of tmpl to from's. */
static void take_metadata(json_t *tmpl, const json_t *from, const char *key)
{
	json_t *meta = json_object_get(tmpl, "metadata");
	const json_t *v = metadata_field(from, key);
	if (v)
		json_object_set_new(meta, key, json_deep_copy(v));
	else
		json_object_del(meta, key);
}

/*
 * resize_templates_merged; all_asked: desired's size, class and other
 * metadata set too (resize_templates_asked): what is never carried out is
 * still judged, as the webhook judges a manifest that asks for it.
 */
static json_t *merged(const json_t *stored, const json_t *desired, bool all_asked)
{
	json_t *out = json_array();
	size_t i;
	json_t *d;
	json_array_foreach(desired, i, d) {
		const json_t *old = kube_list_find(stored, NULL, kube_obj_str(d, "metadata.name"));
		if (!old) {
			/*
			 * Added: the pods running now get its volume only when they
			 * are next re-created; the StatefulSet controller adds volumes
			 * to the pods it creates and never changes a running pod.
			 */
			json_array_append_new(out, json_deep_copy(d));
			continue;
		}
		json_t *t = json_deep_copy(old);
		json_object_del(t, "status");
		if (!json_is_object(json_object_get(t, "metadata")))
			json_object_set_new(t, "metadata", json_object());
		take_metadata(t, d, "labels");
		take_metadata(t, d, "annotations");
		const char *k;
		json_t *v;
		json_object_foreach(all_asked ? json_object_get(d, "metadata") : NULL, k, v) {
			if (strcmp(k, "name") && strcmp(k, "labels") && strcmp(k, "annotations"))
				json_object_set_new(json_object_get(t, "metadata"), k, json_deep_copy(v));
		}
		if (!json_is_object(json_object_get(t, "spec")))
			json_object_set_new(t, "spec", json_object());
		json_t *spec = json_object_get(t, "spec");
		json_object_foreach(json_object_get(d, "spec"), k, v) {
			/* Size and class of a stored template change only through the targets (their claims move first). */
			if (all_asked || (strcmp(k, "resources") && strcmp(k, "storageClassName")))
				json_object_set_new(spec, k, json_deep_copy(v));
		}
		/*
		 * An attributes class the manifest no longer names is unset in the
		 * template; the claims keep theirs (the API refuses a non-nil class
		 * set back to nil on a claim).
		 */
		const char *vac = kube_obj_str(d, "spec.volumeAttributesClassName");
		if (!vac || !*vac)
			json_object_del(spec, "volumeAttributesClassName");
		json_array_append_new(out, t);
	}
	return out;
}

json_t *resize_templates_merged(const json_t *stored, const json_t *desired)
{
	return merged(stored, desired, false);
}

json_t *resize_templates_asked(const json_t *stored, const json_t *desired)
{
	return merged(stored, desired, true);
}

/*
 * Adds to patch[field] what claim's metadata field needs to match want's:
 * keys of want (the desired template) set where they differ, keys of
 * old (the stored template) that want has not removed where the claim has them.
 */
static void metadata_patch(json_t *patch, const char *field, const json_t *claim, const json_t *want,
			   const json_t *old)
{
	const json_t *have = json_object_get(json_object_get(claim, "metadata"), field);
	const json_t *w = metadata_field(want, field);
	json_t *p = json_object();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)w, k, v) {
		if (!json_equal(json_object_get(have, k), v))
			json_object_set(p, k, v);
	}
	json_object_foreach((json_t *)metadata_field(old, field), k, v) {
		if (!json_object_get(w, k) && json_object_get(have, k))
			json_object_set_new(p, k, json_null());
	}
	if (json_object_size(p))
		json_object_set(json_object_get(patch, "metadata"), field, p);
	json_decref(p);
}

bool resize_claim_metadata_step(const struct resize_inputs *in, const json_t *sts, const json_t *state,
				struct action *a)
{
	const json_t *templates = json_object_get(state, "templates");
	const char *ns = kube_obj_str(sts, "metadata.namespace");
	const char *name = kube_obj_str(sts, "metadata.name");
	long long start, replicas = plan_replicas(sts, &start);
	for (long long ord = start + replicas - 1; ord >= start; ord--) {
		size_t i;
		json_t *d;
		json_array_foreach(templates, i, d) {
			const char *tmpl = kube_obj_str(d, "metadata.name");
			const json_t *old = resize_template(sts, tmpl);
			if (!old)
				continue; /* added: its claims come from the new template */
			char *claim_name = resize_claim_name(tmpl, name, ord);
			const json_t *claim = kube_list_find(in->pvcs, ns, claim_name);
			json_t *patch = json_pack("{s:{}}", "metadata");
			if (claim) {
				metadata_patch(patch, "labels", claim, d, old);
				metadata_patch(patch, "annotations", claim, d, old);
			}
			if (json_object_size(json_object_get(patch, "metadata"))) {
				action_patch(a, "PatchClaimMetadata", &KUBE_PVCS, claim_name, patch);
				action_patch_precondition(a, NULL, kube_obj_str(claim, "metadata.uid"));
				action_status(a, "Updating the labels and annotations of %s", claim_name);
				free(claim_name);
				return true;
			}
			json_decref(patch);
			free(claim_name);
		}
	}
	return false;
}

char *resize_templates_removed(const struct resize_inputs *in, const json_t *saved, const json_t *state)
{
	const json_t *templates = json_object_get(state, "templates");
	if (!json_is_array(templates))
		return NULL;
	const char *ns = kube_obj_str(saved, "metadata.namespace");
	const char *name = kube_obj_str(saved, "metadata.name");
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *t;
	json_array_foreach(templates_of(saved), i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		if (!tmpl || kube_list_find(templates, NULL, tmpl))
			continue;
		strbuf_appendf(&sb, "%svolumeClaimTemplate %s removed, its claims kept:", sb.len ? "; " : "", tmpl);
		char *prefix = resize_claim_prefix(tmpl, name);
		size_t k, n = 0;
		json_t *pvc;
		json_array_foreach(in->pvcs, k, pvc) {
			const char *claim = kube_obj_str(pvc, "metadata.name");
			if (claim && !strncmp(claim, prefix, strlen(prefix)) &&
			    streq(kube_obj_str(pvc, "metadata.namespace"), ns)) {
				strbuf_appendf(&sb, "%s %s", n++ ? "," : "", claim);
			}
		}
		if (!n)
			strbuf_appendf(&sb, " none");
		free(prefix);
	}
	if (sb.len)
		return strbuf_detach(&sb);
	strbuf_release(&sb);
	return NULL;
}
