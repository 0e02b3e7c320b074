/*
 * What the resize planners share (resize_plan.c dispatches, in place in
 * resize_expand_plan.c, by copy in resize_copy_plan.c and resize_swap.c):
 * reading the cluster's objects, and the steps on the StatefulSet every
 * phase takes. Pure; it calls no planner. Private to src/controllers/resize.
 */
#ifndef SOP_RESIZE_STEPS_H
#define SOP_RESIZE_STEPS_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "client/quantity.h"
#include "controllers/resize/resize_plan.h"
#include "runtime/action.h"

/* Null-safe: a field missing (a state written by hand) compares unequal, never crashes. */
static inline bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static inline const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* How often to look again while the cluster works (watch events usually come first). */
#define POLL_MS 2000L

/* Compares a quantity string with q; a missing or bad string counts as smaller. */
int plan_cmp_size(const char *text, const struct quantity *q);
/* The StorageClass named name, or the default one (name NULL); NULL when none. Borrowed. */
const json_t *plan_storage_class(const struct resize_inputs *in, const char *name);
/* The StatefulSet saved in a backup ConfigMap (new reference), or NULL. */
json_t *plan_saved_statefulset(const json_t *backup);
/* The ordinals of sts (borrowed): *start, and the replica count. */
long long plan_replicas(const json_t *sts, long long *start);
/*
 * The pods of StatefulSet ns/sts are the set's with uid: the pods of
 * ordinals (a JSON array, borrowed), owned and Ready; or, ordinals NULL,
 * each of the count from start that exists, owned. Else false, *missing
 * naming the first that is not (a new string).
 */
bool plan_pods_adopted(const struct resize_inputs *in, const char *ns, const char *sts, const json_t *ordinals,
		       long long start, long long count, const char *uid, char **missing);

/* The backup holds the StatefulSet with UID uid as saved by this resize (its state names uid). */
bool plan_saved_for(const struct resize_inputs *in, const char *uid);

/* A refusal: a Warning with message (stolen); nothing changes. */
void plan_refuse(struct action *a, const char *reason, char *message);
/*
 * "SetState": writes st (stolen) and a->status on the StatefulSet, or on
 * its backup ConfigMap while it is gone: a merge patch of their
 * annotations, which the controller writes and seals (no body here).
 */
void plan_set_state(const struct resize_inputs *in, struct action *a, json_t *st);
/* "Finish": the state and status go from the StatefulSet. */
void plan_finish(const struct resize_inputs *in, struct action *a);
/* "Save": the StatefulSet with state st (stolen) into its backup ConfigMap (the controller's own step). */
void plan_save(struct action *a, json_t *st);
/* "OrphanDelete": the StatefulSet goes, its pods stay (UID precondition). */
void plan_orphan_delete(const struct resize_inputs *in, struct action *a);
/*
 * "Recreate": the StatefulSet from its saved copy, with the new volume
 * template when new_template, carrying state st (stolen) and, when
 * keep_abort, the abort asked on the ConfigMap. False (nothing chosen)
 * when the backup holds no StatefulSet.
 */
bool plan_recreate(const struct resize_inputs *in, struct action *a, json_t *st, bool new_template,
		   bool keep_abort);
/* "DeleteBackup": the backup ConfigMap goes. */
void plan_delete_backup(const struct resize_inputs *in, struct action *a);
/* A delete of obj (borrowed; UID precondition): gone or replaced already is done (seen next time). */
void plan_delete(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj);
/*
 * A merge patch (body stolen) of PV pv, decided on its cached state: the
 * cached resourceVersion is a precondition, so a stale decision conflicts
 * (409, retried on fresh state) instead of undoing what the PV controller
 * just did, e.g. a pre-binding written over a binding.
 */
void plan_patch_pv(struct action *a, const char *what, const json_t *pv, json_t *body);
/* The reclaim policy of pv, and the one the copy cycle recorded before it Retained it (or NULL). */
const char *plan_reclaim_policy(const json_t *pv);
const char *plan_original_policy(const json_t *pv);


#endif
