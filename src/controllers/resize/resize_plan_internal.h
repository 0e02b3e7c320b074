/*
 * What the two planners (resize_plan.c: in place; resize_copy_plan.c: by
 * copy) share: reading the cluster's objects, the state annotation, and
 * filling in an action. Private to src/controllers/resize.
 */
#ifndef SOP_RESIZE_PLAN_INTERNAL_H
#define SOP_RESIZE_PLAN_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "client/quantity.h"
#include "controllers/resize/resize_plan.h"

/* How often to look again while the cluster works (watch events usually come first). */
#define POLL_MS 2000

/*
 * The state lives as JSON: {"phase", "strategy", "targets": {tmpl: size},
 * "statefulSetUID", "started", "updated", "message"}, plus per strategy:
 * "restart": {"pod", "uid"} (expand); see resize_copy_plan.c for copy.
 */
#define PHASE_EXPANDING "Expanding"
#define PHASE_SAVING "Saving"
#define PHASE_RECREATING "Recreating"
#define PHASE_ADOPTING "Adopting"
#define PHASE_FAILED "Failed"
#define PHASE_COPYING "Copying"
#define PHASE_CLEANING "Cleaning"

void plan_event(struct resize_action *a, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void plan_status(struct resize_action *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void plan_wait(struct resize_action *a, long ms);
void plan_set_state(struct resize_action *a, json_t *st);

const json_t *plan_annotations(const json_t *obj);
/* The object named name (in namespace ns unless ns is NULL) in list, or NULL. */
const json_t *plan_find(const json_t *list, const char *ns, const char *name);
bool plan_pod_ready(const json_t *pod);
/* Compares a quantity string with q; a missing or bad string counts as smaller. */
int plan_cmp_size(const char *text, const struct quantity *q);
long long plan_int_field(const json_t *obj, const char *a, const char *b, long long dflt);
const json_t *plan_storage_class(const struct resize_inputs *in, const char *name);
const json_t *plan_default_class(const struct resize_inputs *in);

/* The resize-state annotation of obj, parsed (new reference), or NULL. */
json_t *plan_state_of(const json_t *obj);
const char *plan_state_str(const json_t *st, const char *key);
/* A copy of st with key set to value (stolen) and "updated" now. New reference. */
json_t *plan_state_with(const json_t *st, const char *now, const char *key, json_t *value);
/* The StatefulSet saved in a backup ConfigMap (new reference), or NULL. */
json_t *plan_saved_statefulset(const json_t *backup);

/* The copy cycle: starting it, and each step while the state says "strategy": "copy". */
void copy_plan_start(const struct resize_inputs *in, const char *now, const struct resize_request *req,
		     json_t *targets, json_t *classes, struct resize_action *a);
void copy_plan(const struct resize_inputs *in, const char *now, bool abort_asked, const json_t *st,
	       struct resize_action *a);

#endif
