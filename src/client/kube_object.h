/*
 * Reading Kubernetes objects as the API server sends them (jansson
 * values): metadata, owner references, conditions, readiness. Every
 * function takes a borrowed object, may be given NULL (it then reports
 * "absent"), and returns borrowed values valid while obj lives, unless it
 * says "new". Pure; safe from any thread on objects nobody modifies.
 */
#ifndef SOP_CLIENT_KUBE_OBJECT_H
#define SOP_CLIENT_KUBE_OBJECT_H

#include <jansson.h>
#include <stdbool.h>

/* The string at a dotted path, e.g. "metadata.name"; NULL when absent or not a string. */
const char *kube_obj_str(const json_t *obj, const char *path);
/* The integer at obj.a.b (b may be NULL: obj.a), or dflt when absent or not an integer. */
long long kube_obj_int(const json_t *obj, const char *a, const char *b, long long dflt);

const json_t *kube_obj_labels(const json_t *obj);
const json_t *kube_obj_annotations(const json_t *obj);
const char *kube_obj_label(const json_t *obj, const char *key);
const char *kube_obj_annotation(const json_t *obj, const char *key);
/*
 * The annotation key of obj read as JSON under doc_limits_annotation (its
 * parse budget included: anyone who may edit the object writes it): a new
 * reference, or NULL when absent, not JSON or over the limits.
 */
json_t *kube_obj_annotation_json(const json_t *obj, const char *key);
/* The annotation is the string "true". */
bool kube_obj_annotation_true(const json_t *obj, const char *key);

/* metadata.deletionTimestamp is set: the object is being deleted. */
bool kube_obj_terminating(const json_t *obj);

/* metadata.finalizers holds name. */
bool kube_obj_has_finalizer(const json_t *obj, const char *name);

/* Some owner reference of obj has this UID. */
bool kube_obj_owned_by(const json_t *obj, const char *uid);
/* obj's controller reference (controller: true) has this UID. */
bool kube_obj_controlled_by(const json_t *obj, const char *uid);
/* Some owner reference of obj is a controller reference. */
bool kube_obj_has_controller(const json_t *obj);
/* Calls fn with the name of each owner reference of kind `kind`. */
void kube_obj_each_owner(const json_t *obj, const char *kind, void (*fn)(void *ctx, const char *name),
			 void *ctx);

/*
 * True when obj's status.conditions has type with status "True"; *message
 * (may be NULL) is then that condition's message (borrowed, may be NULL).
 */
bool kube_obj_condition(const json_t *obj, const char *type, const char **message);
/* A pod that is Ready and not being deleted. */
bool kube_pod_ready(const json_t *pod);

/* "namespace/name", or "name" for cluster-scoped objects. New string. */
char *kube_obj_key(const json_t *obj);
/* The object named name (in namespace ns unless ns is NULL) in array list, or NULL. */
const json_t *kube_list_find(const json_t *list, const char *ns, const char *name);

/* The first item of array arr whose string at path (dotted) is value, or NULL. */
const json_t *kube_array_find(const json_t *arr, const char *path, const char *value);

/*
 * The number n of a name <prefix><n> (prefix includes its dash; n in
 * canonical decimal, at most max_digits digits, at most 18), or -1 when
 * name is not prefix followed by one.
 */
long long kube_name_number(const char *name, const char *prefix, int max_digits);
/* kube_name_number for a StatefulSet's ordinals: int32 in the API, so at most 9 digits. */
long long kube_name_ordinal(const char *name, const char *prefix);

#endif
