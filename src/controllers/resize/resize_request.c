#include "controllers/resize/resize_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "util/duration.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "util/yaml_json.h"
#include "client/kube_object.h"

static const json_t *templates_of(const json_t *sts)
{
	return json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
}

const json_t *resize_template(const json_t *sts, const char *name)
{
	return kube_list_find(templates_of(sts), NULL, name);
}

/* The storage request of the volumeClaimTemplate named name, or NULL. Borrowed. */
static const char *template_size(const json_t *sts, const char *name)
{
	return kube_obj_str(resize_template(sts, name), "spec.resources.requests.storage");
}

/* "a, b and c": the template names, for messages. New string. */
static char *template_names(const json_t *sts)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, n = json_array_size(templates_of(sts));
	json_t *t;
	json_array_foreach(templates_of(sts), i, t) {
		const char *name = kube_obj_str(t, "metadata.name");
		strbuf_appendf(&sb, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", name ? name : "?");
	}
	return strbuf_detach(&sb);
}

/* Refuses annotation key, which names template tmpl that sts does not have. */
static int refuse_unknown_template(struct refusal *refusal, const json_t *sts, const char *key, const char *tmpl)
{
	char *names = template_names(sts);
	int rc = refuse(refusal, "ResizeUnknownTemplate",
			"annotation %s names volumeClaimTemplate \"%s\", which the StatefulSet does not have; its "
			"templates are %s",
			key, tmpl, names[0] ? names : "none");
	free(names);
	return rc;
}

/* Parses current, the storage request of template tmpl, into *q; refused when it is no quantity. */
static int parse_template_size(const char *tmpl, const char *current, struct quantity *q, struct refusal *refusal)
{
	char *perr = NULL;
	if (quantity_parse(current, q, &perr) == 0)
		return 0;
	int rc = refuse(refusal, "ResizeInvalidSize", "volumeClaimTemplate %s: its storage request: %s", tmpl, perr);
	free(perr);
	return rc;
}

static int parse_duration(const json_t *ann, const char *key, long long dflt, long long *out,
			  struct refusal *refusal)
{
	const char *text = json_string_value(json_object_get(ann, key));
	*out = dflt;
	if (!text)
		return 0;
	int64_t ms;
	char *why = NULL;
	if (duration_parse(text, &ms, &why) < 0) {
		int rc = refuse(refusal, "ResizeInvalidAnnotation", "annotation %s: %s", key, why);
		free(why);
		return rc;
	}
	*out = ms;
	return 0;
}

/*
 * A JSON object in an annotation, checked for shape; each value must be a
 * string when strings. Read under the annotation limits (util/yaml_json.h):
 * the text is copied into every copy Job's pod.
 */
static int check_json_object(const json_t *ann, const char *key, bool strings, const char **out,
			     struct refusal *refusal)
{
	const char *text = json_string_value(json_object_get(ann, key));
	*out = NULL;
	if (!text)
		return 0;
	json_t *v = NULL;
	char *msg = NULL;
	if (json_load_limited(text, strlen(text), 0, &doc_limits_annotation, &v, &msg) == DOC_TOO_LARGE) {
		int rc = refuse(refusal, "ResizeInvalidAnnotation", "annotation %s is too large to read: %s",
				key, msg);
		free(msg);
		return rc;
	}
	free(msg);
	bool ok = json_is_object(v);
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) ok &= !strings || json_is_string(item);
	json_decref(v);
	if (!ok)
		return refuse(refusal, "ResizeInvalidAnnotation",
			      "annotation %s must be a JSON object%s, e.g. %s", key,
			      strings ? " of strings" : "",
			      strings ? "{\"sidecar.istio.io/inject\": \"false\"}"
				      : "{\"requests\": {\"cpu\": \"100m\", \"memory\": \"64Mi\"}}");
	*out = text;
	return 0;
}

/* copy-mode, precopy, copy-image, copy-timeout, copy-resources, copy-pod-annotations, keep-old-volumes. */
static int parse_copy_settings(const json_t *ann, struct resize_request *req, struct refusal *refusal)
{
	const char *mode = json_string_value(json_object_get(ann, ANNOTATION_COPY_MODE));
	if (mode && strcmp(mode, "rolling") && strcmp(mode, "offline"))
		return refuse(refusal, "ResizeInvalidAnnotation", "annotation %s is \"%s\"; use rolling or offline",
			      ANNOTATION_COPY_MODE, mode);
	req->offline = mode && !strcmp(mode, "offline");
	const char *pre = json_string_value(json_object_get(ann, ANNOTATION_PRECOPY));
	if (pre && strcmp(pre, "true") && strcmp(pre, "false"))
		return refuse(refusal, "ResizeInvalidAnnotation", "annotation %s is \"%s\"; use \"true\" or \"false\"",
			      ANNOTATION_PRECOPY, pre);
	req->precopy = pre && !strcmp(pre, "true");
	req->copy_image = json_string_value(json_object_get(ann, ANNOTATION_COPY_IMAGE));
	if (req->copy_image && (!*req->copy_image || strpbrk(req->copy_image, " \t\n")))
		return refuse(refusal, "ResizeInvalidAnnotation",
			      "annotation %s must name a container image, e.g. docker.io/library/busybox:1.36",
			      ANNOTATION_COPY_IMAGE);
	if (parse_duration(ann, ANNOTATION_COPY_TIMEOUT, COPY_TIMEOUT_DEFAULT_MS, &req->copy_timeout_ms, refusal) < 0 ||
	    parse_duration(ann, ANNOTATION_KEEP_OLD_VOLUMES, 0, &req->keep_old_ms, refusal) < 0)
		return -1;
	if (req->copy_timeout_ms < 1000)
		return refuse(refusal, "ResizeInvalidAnnotation",
			      "annotation %s must be at least 1s (a Job's activeDeadlineSeconds)",
			      ANNOTATION_COPY_TIMEOUT);
	if (check_json_object(ann, ANNOTATION_COPY_RESOURCES, false, &req->copy_resources, refusal) < 0 ||
	    check_json_object(ann, ANNOTATION_COPY_POD_ANNOTATIONS, true, &req->copy_pod_annotations, refusal) < 0)
		return -1;
	return 0;
}

/*
 * The target of template tmpl (of sts) in req: the one there, or a new one
 * asking for the template's own size and class. NULL, refused, when req is
 * full or the template's size is no quantity.
 */
static struct resize_target *target_of(const json_t *sts, const char *tmpl, struct resize_request *req,
				       struct refusal *refusal)
{
	for (int i = 0; i < req->ntargets; i++)
		if (!strcmp(req->targets[i].template_name, tmpl))
			return &req->targets[i];
	if (req->ntargets == RESIZE_MAX_TEMPLATES) {
		refuse(refusal, "ResizeTooManyTemplates", "more than %d templates to resize at once",
		       RESIZE_MAX_TEMPLATES);
		return NULL;
	}
	struct resize_target *t = &req->targets[req->ntargets];
	memset(t, 0, sizeof(*t));
	snprintf(t->template_name, sizeof(t->template_name), "%s", tmpl);
	if (parse_template_size(tmpl, template_size(sts, tmpl), &t->template_size, refusal) < 0)
		return NULL;
	t->size = t->template_size;
	req->ntargets++;
	return t;
}

int resize_request_add_size(const json_t *sts, const char *key, const char *tmpl, const char *text,
			    struct resize_request *req, struct refusal *refusal)
{
	const char *current = template_size(sts, tmpl);
	if (!current)
		return refuse_unknown_template(refusal, sts, key, tmpl);
	struct resize_target t;
	memset(&t, 0, sizeof(t));
	char *perr = NULL;
	if (quantity_parse(text ? text : "", &t.size, &perr) < 0) {
		int rc = refuse(refusal, "ResizeInvalidSize", "annotation %s: %s", key, perr);
		free(perr);
		return rc;
	}
	if (quantity_sign(&t.size) <= 0)
		return refuse(refusal, "ResizeInvalidSize", "annotation %s: size %s must be larger than zero", key,
			      text);
	if (parse_template_size(tmpl, current, &t.template_size, refusal) < 0)
		return -1;
	int cmp = quantity_cmp(&t.size, &t.template_size);
	if (cmp == 0)
		return 0; /* already so: nothing asked of this template */
	if (cmp < 0 && (req->strategy != RESIZE_COPY || !req->allow_shrink)) {
		char *now = quantity_format(&t.template_size);
		int rc = refuse(refusal, "ResizeShrinkRefused",
				"annotation %s asks to shrink %s from %s to %s: shrinking moves the "
				"data, so it needs %s: copy and %s: \"true\"",
				key, tmpl, now, text, ANNOTATION_STRATEGY, ANNOTATION_ALLOW_SHRINK);
		free(now);
		return rc;
	}
	struct resize_target *have = target_of(sts, tmpl, req, refusal);
	if (!have)
		return -1;
	have->size = t.size;
	return 0;
}

int resize_request_add_class(const json_t *sts, const char *key, const char *tmpl, const char *cls,
			     struct resize_request *req, struct refusal *refusal)
{
	const char *current = template_size(sts, tmpl);
	if (!current)
		return refuse_unknown_template(refusal, sts, key, tmpl);
	if (!cls || !*cls || strlen(cls) >= RESIZE_NAME_MAX)
		return refuse(refusal, "ResizeInvalidAnnotation", "annotation %s must name a StorageClass", key);
	const char *now = kube_obj_str(resize_template(sts, tmpl), "spec.storageClassName");
	if (now && !strcmp(now, cls))
		return 0; /* already so */
	if (req->strategy == RESIZE_EXPAND)
		return refuse(refusal, "ResizeClassChangeNeedsCopy",
			      "annotation %s asks for StorageClass %s: a volume changes class only by "
			      "copying its data; set %s to copy or auto",
			      key, cls, ANNOTATION_STRATEGY);
	struct resize_target *t = target_of(sts, tmpl, req, refusal);
	if (!t)
		return -1;
	snprintf(t->storage_class, sizeof(t->storage_class), "%s", cls);
	return 0;
}

/* storage-class.stateful-operator.io/<template>: a class change, which only a copy can make. */
static int parse_class_changes(const json_t *sts, const json_t *ann, struct resize_request *req,
			       struct refusal *refusal)
{
	const char *key;
	json_t *value;
	size_t plen = strlen(CLASS_ANNOTATION_PREFIX);
	json_object_foreach((json_t *)ann, key, value) {
		if (strncmp(key, CLASS_ANNOTATION_PREFIX, plen))
			continue;
		if (resize_request_add_class(sts, key, key + plen, json_string_value(value), req, refusal) < 0)
			return -1;
	}
	return 0;
}

/*
 * Each per-template annotation (resize.stateful-operator.io/<t>,
 * storage-class.stateful-operator.io/<t>) is looked up among the
 * templates, whose number the tenant chooses: their count is bounded
 * before the first lookup, at what one resize can carry out.
 */
static int check_template_annotation_count(const json_t *ann, struct refusal *refusal)
{
	size_t sizes = 0, classes = 0;
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)ann, key, value) {
		sizes += !strncmp(key, RESIZE_ANNOTATION_PREFIX, strlen(RESIZE_ANNOTATION_PREFIX));
		classes += !strncmp(key, CLASS_ANNOTATION_PREFIX, strlen(CLASS_ANNOTATION_PREFIX));
	}
	if (sizes <= RESIZE_MAX_TEMPLATES && classes <= RESIZE_MAX_TEMPLATES)
		return 0;
	return refuse(refusal, "ResizeTooManyTemplates",
		      "%zu annotations " RESIZE_ANNOTATION_PREFIX "<template> and %zu " CLASS_ANNOTATION_PREFIX
		      "<template>: a resize changes at most %d templates; remove those whose template already has "
		      "that size or class",
		      sizes, classes, RESIZE_MAX_TEMPLATES);
}

int resize_request_parse(const json_t *sts, const json_t *storage_classes, struct resize_request *req,
			 struct refusal *refusal)
{
	memset(req, 0, sizeof(*req));
	refusal->reason = NULL;
	refusal->message = NULL;
	const json_t *ann = kube_obj_annotations(sts);
	req->ignore = kube_obj_annotation_true(sts, ANNOTATION_IGNORE);
	req->abort = kube_obj_annotation_true(sts, ANNOTATION_ABORT);
	req->allow_shrink = kube_obj_annotation_true(sts, ANNOTATION_ALLOW_SHRINK);

	const char *strategy = json_string_value(json_object_get(ann, ANNOTATION_STRATEGY));
	if (!strategy || !strcmp(strategy, "auto"))
		req->strategy = RESIZE_AUTO;
	else if (!strcmp(strategy, "expand"))
		req->strategy = RESIZE_EXPAND;
	else if (!strcmp(strategy, "copy"))
		req->strategy = RESIZE_COPY;
	else
		return refuse(refusal, "ResizeInvalidStrategy",
			      "annotation %s is \"%s\"; use auto, expand or copy", ANNOTATION_STRATEGY,
			      strategy);

	if (parse_copy_settings(ann, req, refusal) < 0 || check_template_annotation_count(ann, refusal) < 0)
		return -1;

	const char *key;
	json_t *value;
	size_t plen = strlen(RESIZE_ANNOTATION_PREFIX);
	json_object_foreach((json_t *)ann, key, value) {
		if (strncmp(key, RESIZE_ANNOTATION_PREFIX, plen))
			continue;
		if (!json_array_size(templates_of(sts)))
			return refuse(refusal, "ResizeNoVolumeClaimTemplates",
				      "annotation %s asks for a resize, but the StatefulSet has no "
				      "volumeClaimTemplates; remove the annotation",
				      key);
		if (resize_request_add_size(sts, key, key + plen, json_string_value(value), req, refusal) < 0)
			return -1;
	}
	if (parse_class_changes(sts, ann, req, refusal) < 0)
		return -1;
	/* Last: the per-template annotations win over the desired templates for their field. */
	return resize_desired_request(sts, storage_classes, req, refusal);
}
