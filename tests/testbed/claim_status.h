/*
 * What testbed-pvc-resizer's expansion and ModifyVolume sides both write
 * into a claim's status: conditions that keep the other side's, and the
 * guarded merge patch of the status subresource. Main thread only (the
 * patch); the rest is pure.
 */
#ifndef SOP_TESTBED_CLAIM_STATUS_H
#define SOP_TESTBED_CLAIM_STATUS_H

#include <stddef.h>

#include <jansson.h>

#include "client/kube_client.h"

/* The claim's (borrowed) status.conditions but those of the n types: a new array. */
json_t *claim_conditions_without(const json_t *pvc, const char *const *types, size_t n);

/* conds (stolen), or json null when it is empty: a merge patch then removes the field. */
json_t *claim_conditions_or_null(json_t *conds);

/* The time now as the API writes it (RFC 3339, UTC, seconds) into buf (32 bytes are enough). */
void claim_status_now(char *buf, size_t len);

/*
 * Merge-patches the claim's status subresource with status (stolen),
 * guarded by resource_version (the one the step was decided on: a change
 * in between is a 409 and a retry, never a stale write). *pvc is replaced
 * by the stored object. Returns 0, or -1 (logged).
 */
int claim_status_patch(struct kube_client *c, json_t **pvc, const char *resource_version, json_t *status,
		       const char *what) __attribute__((warn_unused_result));

#endif
