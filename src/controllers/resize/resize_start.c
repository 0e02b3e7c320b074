#include "controllers/resize/resize_start.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/quantity.h"
#include "controllers/resize/resize_copy_plan.h"
#include "controllers/resize/resize_expand_plan.h"
#include "controllers/resize/resize_names.h"
#include "controllers/resize/resize_steps.h"
#include "util/xalloc.h"

/*
 * Adds the vshn-style trigger: a template already bigger than some of its
 * PVCs (the user re-created the StatefulSet with a bigger template).
 */
static void add_template_targets(const struct resize_inputs *in, struct resize_request *req)
{
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const char *sts_name = kube_obj_str(in->sts, "metadata.name");
	long long start, replicas = plan_replicas(in->sts, &start);
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(json_object_get(in->sts, "spec"), "volumeClaimTemplates"), i, t) {
		const char *tmpl = kube_obj_str(t, "metadata.name");
		const char *size = kube_obj_str(t, "spec.resources.requests.storage");
		if (!tmpl || !size || req->ntargets == RESIZE_MAX_TEMPLATES)
			continue;
		bool asked = false;
		for (int k = 0; k < req->ntargets; k++)
			asked |= !strcmp(req->targets[k].template_name, tmpl);
		struct quantity want;
		if (asked || quantity_parse(size, &want, NULL) < 0)
			continue;
		for (long long ord = start; ord < start + replicas; ord++) {
			char *pvc = resize_claim_name(tmpl, sts_name, ord);
			const json_t *p = kube_list_find(in->pvcs, ns, pvc);
			free(pvc);
			if (p && plan_cmp_size(kube_obj_str(p, "spec.resources.requests.storage"), &want) < 0) {
				struct resize_target *rt = &req->targets[req->ntargets++];
				memset(rt, 0, sizeof(*rt));
				snprintf(rt->template_name, sizeof(rt->template_name), "%s", tmpl);
				rt->size = want;
				rt->template_size = want;
				break;
			}
		}
	}
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

void resize_start(const struct resize_inputs *in, long long now_ms, struct resize_request *req, struct action *a)
{
	add_template_targets(in, req);
	if (!req->ntargets)
		return; /* nothing asked */
	json_t *targets = json_object();
	json_t *classes = json_object();
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
	if (copy || req->strategy == RESIZE_COPY)
		copy_plan_start(in, now_ms, req, targets, classes, a);
	else
		expand_start(in, now_ms, targets, a);
out:
	json_decref(classes);
	json_decref(targets);
}

