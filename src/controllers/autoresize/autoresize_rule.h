/*
 * Which autoresize policy rules a volumeClaimTemplate, and where it comes
 * from. Three places may hold one, in this order of precedence:
 *
 *   workload   autoresize.stateful-operator.io/<template> on the
 *              StatefulSet or StatefulCluster
 *   namespace  autoresize.stateful-operator.io/policy on its Namespace
 *   class      autoresize.stateful-operator.io/policy on the StorageClass
 *              of the template (the default class when it names none)
 *
 * The first place that holds the annotation rules, whatever it says: a
 * policy that cannot be read rules too (nothing grows, its Warning says
 * why), so that a namespace's broken override never lets the class's
 * policy through; mode=off rules as "no autoresize" (an opt-out). Pure;
 * thread-safe.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_RULE_H
#define SOP_CONTROLLERS_AUTORESIZE_RULE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "controllers/autoresize/autoresize_policy.h"

/* On a Namespace or a StorageClass: the policy of every template of a StatefulSet or StatefulCluster below it. */
#define ANNOTATION_AUTORESIZE_POLICY "autoresize.stateful-operator.io/policy"

enum autoresize_origin {
	AUTORESIZE_FROM_NONE, /* no policy anywhere: nothing to do */
	AUTORESIZE_FROM_WORKLOAD,
	AUTORESIZE_FROM_NAMESPACE,
	AUTORESIZE_FROM_CLASS,
};

struct autoresize_rule {
	enum autoresize_origin origin;
	const char *text;             /* the ruling annotation's value (borrowed from the caller's texts) */
	struct autoresize_policy pol; /* read when why is NULL */
	char *why;                    /* owned: why text was refused (autoresize_policy_parse), or NULL */
};

/*
 * The rule of a template from the three annotations' values (each NULL
 * when that place has none; namespace_text and class_text NULL also when
 * they cannot be read, in namespace scope). Borrows the texts, which must
 * outlive r. Release with autoresize_rule_release.
 */
void autoresize_rule_resolve(const char *workload_text, const char *namespace_text, const char *class_text,
			     struct autoresize_rule *r);
void autoresize_rule_release(struct autoresize_rule *r);

/* r grows something (or recommends it): a readable policy that is not mode=off. */
bool autoresize_rule_active(const struct autoresize_rule *r);

/*
 * Where r's policy is written, for messages, into buf (always ended):
 * "autoresize.stateful-operator.io/<tpl>" (the workload's, and for
 * AUTORESIZE_FROM_NONE), "autoresize.stateful-operator.io/policy on
 * Namespace <ns>", "... on StorageClass <class_name>".
 */
void autoresize_rule_where(const struct autoresize_rule *r, const char *tpl, const char *ns, const char *class_name,
			   char *buf, size_t size);

/* "workload", "namespace", "storageclass", or "none". */
const char *autoresize_origin_name(enum autoresize_origin o);

/*
 * The value of ANNOTATION_AUTORESIZE_POLICY on obj (a Namespace or
 * StorageClass; NULL gives NULL), borrowed from obj.
 */
const char *autoresize_rule_text(const json_t *obj);

#endif
