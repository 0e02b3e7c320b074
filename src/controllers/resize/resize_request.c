#include "controllers/resize/resize_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

void resize_refusal_release(struct resize_refusal *r)
{
	FREE_AND_NULL(r->message);
	r->reason = NULL;
}

const char *resize_strategy_name(enum resize_strategy s)
{
	return s == RESIZE_EXPAND ? "expand" : s == RESIZE_COPY ? "copy" : "auto";
}

static int refuse(struct resize_refusal *r, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct resize_refusal *r, const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->reason = reason;
	r->message = xvasprintf(fmt, ap);
	va_end(ap);
	return -1;
}

static bool annotation_true(const json_t *annotations, const char *key)
{
	const char *v = json_string_value(json_object_get(annotations, key));
	return v && !strcmp(v, "true");
}

static const json_t *templates_of(const json_t *sts)
{
	return json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
}

const char *resize_template_size(const json_t *sts, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(templates_of(sts), i, t) {
		const char *n = kube_obj_str(t, "metadata.name");
		if (n && !strcmp(n, name))
			return kube_obj_str(t, "spec.resources.requests.storage");
	}
	return NULL;
}

/* "a, b and c": the template names, for messages. New string. */
static char *template_names(const json_t *sts)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, n = json_array_size(templates_of(sts));
	json_t *t;
	json_array_foreach(templates_of(sts), i, t) {
		const char *name = kube_obj_str(t, "metadata.name");
		if (strbuf_addf(&sb, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", name ? name : "?") <
		    0)
			abort();
	}
	return strbuf_detach(&sb);
}

int resize_request_parse(const json_t *sts, struct resize_request *req, struct resize_refusal *refusal)
{
	memset(req, 0, sizeof(*req));
	refusal->reason = NULL;
	refusal->message = NULL;
	const json_t *ann = json_object_get(json_object_get(sts, "metadata"), "annotations");
	req->ignore = annotation_true(ann, ANNOTATION_IGNORE);
	req->abort = annotation_true(ann, ANNOTATION_ABORT);
	req->allow_shrink = annotation_true(ann, ANNOTATION_ALLOW_SHRINK);

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

	const char *key;
	json_t *value;
	size_t plen = strlen(RESIZE_ANNOTATION_PREFIX);
	json_object_foreach((json_t *)ann, key, value) {
		if (strncmp(key, RESIZE_ANNOTATION_PREFIX, plen))
			continue;
		const char *tmpl = key + plen;
		const char *text = json_string_value(value);
		if (!json_array_size(templates_of(sts)))
			return refuse(refusal, "ResizeNoVolumeClaimTemplates",
				      "annotation %s asks for a resize, but the StatefulSet has no "
				      "volumeClaimTemplates; remove the annotation",
				      key);
		const char *current = resize_template_size(sts, tmpl);
		if (!current) {
			char *names = template_names(sts);
			int rc = refuse(refusal, "ResizeUnknownTemplate",
					"annotation %s names volumeClaimTemplate \"%s\", which the StatefulSet "
					"does not have; its templates are %s",
					key, tmpl, names);
			free(names);
			return rc;
		}
		struct resize_target t;
		memset(&t, 0, sizeof(t));
		char *perr = NULL;
		if (quantity_parse(text ? text : "", &t.size, &perr) < 0) {
			int rc = refuse(refusal, "ResizeInvalidSize", "annotation %s: %s", key, perr);
			free(perr);
			return rc;
		}
		if (quantity_sign(&t.size) <= 0)
			return refuse(refusal, "ResizeInvalidSize",
				      "annotation %s: size %s must be larger than zero", key, text);
		if (quantity_parse(current, &t.template_size, &perr) < 0) {
			int rc = refuse(refusal, "ResizeInvalidSize",
					"volumeClaimTemplate %s: its storage request: %s", tmpl, perr);
			free(perr);
			return rc;
		}
		int cmp = quantity_cmp(&t.size, &t.template_size);
		if (cmp == 0)
			continue; /* already so: nothing asked of this template */
		if (cmp < 0 && (req->strategy != RESIZE_COPY || !req->allow_shrink)) {
			char *now = quantity_format(&t.template_size);
			int rc = refuse(refusal, "ResizeShrinkRefused",
					"annotation %s asks to shrink %s from %s to %s: shrinking moves the "
					"data, so it needs %s: copy and %s: \"true\"",
					key, tmpl, now, text, ANNOTATION_STRATEGY, ANNOTATION_ALLOW_SHRINK);
			free(now);
			return rc;
		}
		if (req->ntargets == RESIZE_MAX_TEMPLATES)
			return refuse(refusal, "ResizeTooManyTemplates",
				      "more than %d templates to resize at once", RESIZE_MAX_TEMPLATES);
		snprintf(t.template_name, sizeof(t.template_name), "%s", tmpl);
		t.from_annotation = true;
		req->targets[req->ntargets++] = t;
	}
	return 0;
}
