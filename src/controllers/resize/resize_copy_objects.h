/*
 * The objects the copy cycle creates (resize_copy_plan.c decides when):
 * the new claim a replica's data is copied to, the original claim
 * re-created on a PV, and the copy Job. Pure; it calls no planner. Private
 * to src/controllers/resize.
 */
#ifndef SOP_RESIZE_COPY_OBJECTS_H
#define SOP_RESIZE_COPY_OBJECTS_H

#include <jansson.h>

#include "controllers/resize/resize_plan.h"
#include "controllers/contract.h"

#define JOB_BACKOFF_LIMIT 2   /* a copy Job's retries before it counts as failed */

/*
 * A volume of a batch, as the state records it: {"claim", "uid", "template",
 * "ordinal", "oldPV", "size", "accessModes", "labels", "volumeMode", and
 * once copied "newPV", "newClaimUID"}.
 */

/* The new claim <claim>-copy for vol: the target size and class, labelled as the operator's. New reference. */
json_t *copy_new_claim(const json_t *st, const char *ns, const char *sts_name, const json_t *vol);

/* The claim vol.claim re-created on PV pv (spec.volumeName), requesting size, with vol's labels. New reference. */
json_t *copy_rebound_claim(const char *ns, const json_t *vol, const json_t *pv, const char *size);

/*
 * The Job copying replica ord's volumes vols (pass "precopy", "full" or
 * "delta"), with the image, timeout, resources and pod annotations of state
 * st, pinned where the source volume (or, for a precopy, the running pod)
 * is. New reference.
 */
json_t *copy_job(const struct resize_inputs *in, const json_t *st, const char *ns, const char *sts_name,
		 long long ord, const char *pass, const json_t *vols);

#endif
