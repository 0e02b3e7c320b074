/*
 * Comparing a StatefulSet's stored volumeClaimTemplates with the ones an
 * update applies, template by template (matched by name, order ignored),
 * and judging whether the operator can carry the difference out. The one
 * judgement of a desired set of templates: the webhook asks it of an
 * update (admission.c), the resize controller of the desired-templates
 * annotation, which anyone who may annotate the set can write by hand
 * (resize_desired_judge.c). Pure; safe from any thread on inputs nobody
 * modifies.
 */
#ifndef SOP_WEBHOOK_TEMPLATE_DIFF_H
#define SOP_WEBHOOK_TEMPLATE_DIFF_H

#include <jansson.h>

#include "webhook/admission.h"

enum template_verdict {
	TEMPLATES_NOT_UNDERSTOOD, /* not arrays of named objects: let the API server judge */
	TEMPLATES_EQUAL,          /* same content; maybe another order or status */
	TEMPLATES_CHANGED,        /* a change the operator carries out */
	TEMPLATES_DENIED,         /* a change it cannot: message says why */
};

struct template_decision {
	enum template_verdict verdict;
	char *message;    /* DENIED: new string, every problem found, "; "-separated */
	json_t *warnings; /* CHANGED: new array of strings, one per template changed */
};

/*
 * Decides on old and new (borrowed; each a JSON array of templates, NULL =
 * none) given the applied StatefulSet (borrowed: its annotations say the
 * resize strategy, allow-shrink and per-template targets; its pod template
 * which volumes are mounted) and what the caches hold. Fills *out; release
 * it with template_decision_release. More than ADMISSION_MAX_TEMPLATES on
 * either side is denied before any pairwise check. With view->budget spent
 * (checked at each template) the verdict is TEMPLATES_NOT_UNDERSTOOD:
 * nothing was decided.
 */
void template_diff_decide(const json_t *old, const json_t *new, const json_t *applied,
			  const struct admission_view *view, struct template_decision *out);

void template_decision_release(struct template_decision *d);

#endif
