/*
 * PV rebinding: putting a claim name on a given PersistentVolume, the
 * move at the heart of the copy cycle, used forward by its Swap stage (the
 * original claim name onto the new volume) and backward by a restore (onto
 * the old one). Pure. Private to src/controllers/resize.
 */
#ifndef SOP_RESIZE_SWAP_H
#define SOP_RESIZE_SWAP_H

#include <jansson.h>

#include "controllers/resize/resize_plan.h"

/*
 * Puts claim vol.claim (vol: a volume of the batch, see
 * resize_copy_objects.h) of StatefulSet ns/sts on PV pv_name (requesting
 * size), moving it off whatever PV it is on now, with both PVs Retained
 * before any claim is deleted. Returns 1 when the claim is Bound to it and
 * the PV has its own reclaim policy back, 0 when an action was chosen
 * into a, -1 when it cannot be done (*why: a new string saying why).
 */
int resize_bind_claim(const struct resize_inputs *in, const char *ns, const char *sts, long long now_ms,
		      const json_t *vol, const char *pv_name, const char *size, struct action *a, char **why);

#endif
