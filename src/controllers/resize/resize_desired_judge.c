/*
 * The desired-templates annotation judged as the admission webhook judges
 * an update (webhook/template_diff.h). Anyone who may annotate the set can
 * write it by hand, and the webhook never sees an annotation-only update
 * (its matchConditions pass only updates whose templates differ), nor
 * anything on a cluster where it is off. Without this a template named
 * Data_1 had the set orphan-deleted, then its re-create refused by the API
 * server. The map is in resize_internal.h.
 */
#include "controllers/resize/resize_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "util/xalloc.h"
#include "webhook/template_diff.h"

/* t's object at key (borrowed), made when it is not one. */
static json_t *object_in(json_t *t, const char *key)
{
	if (!json_is_object(json_object_get(t, key)))
		json_object_set_new(t, key, json_object());
	return json_object_get(t, key);
}

/* The value of sts's annotation prefix + tmpl (borrowed), or NULL. */
static const char *target_annotation(const json_t *sts, const char *prefix, const char *tmpl)
{
	char *key = xasprintf("%s%s", prefix, tmpl);
	const char *v = kube_obj_annotation(sts, key);
	free(key);
	return v;
}

/*
 * The per-template annotations win over the desired templates for their
 * field (resize_internal.h): each stored template of asked (borrowed) gets
 * the size and class they ask, so what is judged is what will be done.
 */
static void take_target_annotations(const json_t *sts, json_t *asked)
{
	size_t i;
	json_t *t;
	json_array_foreach(asked, i, t) {
		const char *name = kube_obj_str(t, "metadata.name");
		if (!resize_template(sts, name))
			continue; /* added: only its template speaks for it */
		const char *size = target_annotation(sts, RESIZE_ANNOTATION_PREFIX, name);
		const char *cls = target_annotation(sts, CLASS_ANNOTATION_PREFIX, name);
		json_t *spec = object_in(t, "spec");
		if (size)
			json_object_set_new(object_in(object_in(spec, "resources"), "requests"), "storage",
					    json_string(size));
		if (cls)
			json_object_set_new(spec, "storageClassName", json_string(cls));
	}
}

int resize_desired_judge(const json_t *sts, const json_t *desired, const json_t *storage_classes,
			 struct refusal *refusal)
{
	const json_t *stored = json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
	if (json_is_null(stored))
		stored = NULL;
	json_t *asked = resize_templates_asked(stored, desired);
	take_target_annotations(sts, asked);
	struct admission_view view = {.storage_classes = storage_classes, .attributes_classes_unlisted = true};
	struct template_decision d;
	template_diff_decide(stored, asked, sts, &view, &d);
	int rc = 0;
	if (d.verdict == TEMPLATES_DENIED)
		rc = refuse(refusal, RESIZE_INVALID_TEMPLATES,
			    "annotation %s asks for volumeClaimTemplates the operator will not carry out, as its "
			    "admission webhook would have said of the manifest: %s. Nothing was changed; fix the "
			    "manifest and apply it again, or remove the annotation",
			    ANNOTATION_DESIRED_TEMPLATES, d.message);
	else if (d.verdict == TEMPLATES_NOT_UNDERSTOOD)
		rc = refuse(refusal, RESIZE_INVALID_TEMPLATES,
			    "the StatefulSet's stored volumeClaimTemplates are not a list of uniquely named templates, "
			    "so annotation %s cannot be judged against them; nothing was changed",
			    ANNOTATION_DESIRED_TEMPLATES);
	template_decision_release(&d);
	json_decref(asked);
	return rc;
}
