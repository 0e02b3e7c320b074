/* Which autoresize policy rules a template (autoresize_rule.h). */
#include "controllers/autoresize/autoresize_rule.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"

void autoresize_rule_resolve(const char *workload_text, const char *namespace_text, const char *class_text,
			     struct autoresize_rule *r)
{
	*r = (struct autoresize_rule){.origin = AUTORESIZE_FROM_NONE};
	if (workload_text) {
		r->origin = AUTORESIZE_FROM_WORKLOAD;
		r->text = workload_text;
	} else if (namespace_text) {
		r->origin = AUTORESIZE_FROM_NAMESPACE;
		r->text = namespace_text;
	} else if (class_text) {
		r->origin = AUTORESIZE_FROM_CLASS;
		r->text = class_text;
	} else {
		return;
	}
	/* Refused: r->why says why, r->pol is zeroed, and the rule still stands (nothing grows). */
	if (autoresize_policy_parse(r->text, &r->pol, &r->why) < 0)
		return;
}

void autoresize_rule_release(struct autoresize_rule *r)
{
	free(r->why);
	r->why = NULL;
}

bool autoresize_rule_active(const struct autoresize_rule *r)
{
	return r->origin != AUTORESIZE_FROM_NONE && !r->why && !r->pol.off;
}

void autoresize_rule_where(const struct autoresize_rule *r, const char *tpl, const char *ns, const char *class_name,
			   char *buf, size_t size)
{
	switch (r->origin) {
	case AUTORESIZE_FROM_NAMESPACE:
		snprintf(buf, size, ANNOTATION_AUTORESIZE_POLICY " on Namespace %s", ns ? ns : "");
		break;
	case AUTORESIZE_FROM_CLASS:
		snprintf(buf, size, ANNOTATION_AUTORESIZE_POLICY " on StorageClass %s", class_name ? class_name : "");
		break;
	case AUTORESIZE_FROM_WORKLOAD:
	case AUTORESIZE_FROM_NONE:
	default:
		snprintf(buf, size, ANNOTATION_AUTORESIZE_PREFIX "%s", tpl ? tpl : "");
		break;
	}
}

const char *autoresize_origin_name(enum autoresize_origin o)
{
	switch (o) {
	case AUTORESIZE_FROM_WORKLOAD:
		return "workload";
	case AUTORESIZE_FROM_NAMESPACE:
		return "namespace";
	case AUTORESIZE_FROM_CLASS:
		return "storageclass";
	case AUTORESIZE_FROM_NONE:
	default:
		return "none";
	}
}

const char *autoresize_rule_text(const json_t *obj)
{
	return obj ? kube_obj_annotation(obj, ANNOTATION_AUTORESIZE_POLICY) : NULL;
}
