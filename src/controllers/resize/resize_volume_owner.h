/*
 * Whether a PersistentVolume is a volume of a given StatefulSet, judged
 * only on what namespace users cannot forge: the PV itself (cluster-scoped)
 * and the live claim it is bound to. The resize controller asks this, on a
 * fresh read, before every write to a PV; names in the resize state only
 * say which PV a step is about, never that it may be changed. Pure.
 */
#ifndef SOP_RESIZE_VOLUME_OWNER_H
#define SOP_RESIZE_VOLUME_OWNER_H

#include <jansson.h>
#include <stdbool.h>

/*
 * The claim pv's claimRef names, if it could be one of StatefulSet
 * ns/sts's (<template>-<sts>-<ordinal>, or the copy cycle's
 * <template>-<sts>-<ordinal>-copy, in namespace ns); NULL otherwise.
 * Borrowed from pv.
 */
const char *resize_volume_claim_of_set(const json_t *pv, const char *ns, const char *sts);

/*
 * True when pv belongs to StatefulSet ns/sts: the copy cycle took it for
 * this set (annotation taken-for = ns/sts), or it is bound to claim, a
 * claim of this set that exists now (read live by the caller; NULL when
 * there is none) with the UID the claimRef names and pv as its volume.
 * Otherwise false, with why (static text) saying what is missing.
 */
bool resize_volume_owned(const json_t *pv, const json_t *claim, const char *ns, const char *sts, const char **why);

#endif
