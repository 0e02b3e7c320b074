/*
 * JSON merge patches (RFC 7386) as facts about an object: whether one
 * already holds. A merge patch is idempotent, so "applying it would change
 * nothing" is the same as "it was applied, or its effect is there anyway".
 * Pure.
 */
#ifndef SOP_CLIENT_MERGE_PATCH_H
#define SOP_CLIENT_MERGE_PATCH_H

#include <jansson.h>
#include <stdbool.h>

/*
 * True when applying patch to obj (NULL: absent) would leave it as it is.
 * metadata.resourceVersion at the top of patch is a precondition, not
 * content, and is not compared.
 */
bool merge_patch_holds(const json_t *obj, const json_t *patch);

#endif
