/*
 * Looking up StorageClasses and VolumeAttributesClasses in the lists the
 * caches hold (JSON arrays of objects): the webhook, autoresize and the
 * plugin. Pure;
 * results borrowed from the list unless "new".
 */
#ifndef SOP_WEBHOOK_CLASS_LOOKUP_H
#define SOP_WEBHOOK_CLASS_LOOKUP_H

#include <jansson.h>

/* The class annotated storageclass.kubernetes.io/is-default-class: "true", or NULL. */
const json_t *class_default(const json_t *classes);

/* "a, b", or "none" (new string): the objects' names, for a message that says what exists. */
char *class_names(const json_t *list);

#endif
