/*
 * The fields of a Pod the controllers read, and only those, for the shared
 * Pod cache: a fleet's pods are most of what the operator caches, and most
 * of each pod (its service-account token volume, tolerations, containers'
 * env, probes and resources, images and container IDs) decides nothing.
 * pod_fields.c lists each field kept and who reads it.
 *
 * A trimmed pod must never be written back: no code updates (PUTs) a
 * cached pod; pods are only created from templates and deleted with the
 * cached uid (and resourceVersion) as preconditions.
 *
 * Threads: any (it touches only the object it is given).
 */
#ifndef SOP_CONTROLLERS_POD_FIELDS_H
#define SOP_CONTROLLERS_POD_FIELDS_H

#include <jansson.h>

/* informer_options.transform for Pods: trims pod (in place) to the fields the controllers read. */
void pod_fields_keep(json_t *pod);

#endif
