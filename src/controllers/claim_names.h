/*
 * StatefulSet claims are named <template>-<sts>-<ordinal>; both names may
 * hold dashes, so a claim name alone does not say which StatefulSet it
 * belongs to. Controllers use this to wake every StatefulSet a claim may
 * belong to; each then checks its own templates.
 */
#ifndef SOP_CONTROLLERS_CLAIM_NAMES_H
#define SOP_CONTROLLERS_CLAIM_NAMES_H

/*
 * Calls fn with each name a StatefulSet owning claim could have (every
 * suffix of <template>-<sts> after a dash), or not at all when claim does
 * not end in -<digits>.
 */
void claim_statefulset_candidates(const char *claim, void (*fn)(void *ctx, const char *sts), void *ctx);

#endif
