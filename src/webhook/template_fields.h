/*
 * What a volumeClaimTemplate says, and how two compare: the fields that
 * may change (size, storageClassName, volumeAttributesClassName, labels,
 * annotations) and those that must stay as stored. Private to src/webhook.
 * Pure; templates borrowed, results borrowed from them unless "new".
 */
#ifndef SOP_WEBHOOK_TEMPLATE_FIELDS_H
#define SOP_WEBHOOK_TEMPLATE_FIELDS_H

#include <jansson.h>
#include <stdbool.h>

const char *template_name(const json_t *t); /* metadata.name */
const char *template_size(const json_t *t); /* spec.resources.requests.storage */
/* The template named name in the array list, or NULL. */
const json_t *template_find(const json_t *list, const char *name);

/* Labels or annotations: absent, null and {} all mean none. */
bool template_same_map(const json_t *a, const json_t *b);

/*
 * The fields of old and new that differ but may not change, as paths
 * ("spec.accessModes, metadata.finalizers"; null counts as absent). New
 * string, "" when none.
 */
char *template_fixed_differences(const json_t *old, const json_t *new);

/*
 * old and new ask for the same claims: name, labels, annotations and spec
 * (status and kind ignored; sizes compared as quantities).
 */
bool template_same(const json_t *old, const json_t *new);

/*
 * t reduced to what the desired-templates annotation records: metadata
 * name, labels and annotations (each omitted when empty), and spec as
 * given. New reference.
 */
json_t *template_desired_form(const json_t *t);

/*
 * The array templates (borrowed) as the desired-templates annotation
 * records it: each in template_desired_form, keys sorted, compact. The
 * same manifest applied again gives the same bytes, so a GitOps loop
 * re-applying it changes nothing. New string.
 */
char *template_desired_text(const json_t *templates);

/*
 * The name of a container (or init container) of StatefulSet sts's pod
 * template that mounts the volume of template name, when no pod volume of
 * that name stands in for it; NULL when none does. Once the set is
 * re-created without that template, no pod of it could be created.
 */
const char *template_mounted_by(const json_t *sts, const char *name);

#endif
