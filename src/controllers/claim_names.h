/*
 * The names of a StatefulSet's (or StatefulCluster's) pods <set>-<n> and
 * claims <template>-<set>-<n>, in one place. Both names may hold dashes,
 * so a claim name alone does not say which StatefulSet it belongs to.
 * Controllers use claim_statefulset_candidates to wake every StatefulSet a
 * claim may belong to; each then checks its own templates. Thread-safe.
 */
#ifndef SOP_CONTROLLERS_CLAIM_NAMES_H
#define SOP_CONTROLLERS_CLAIM_NAMES_H

/* "<set>-<n>": the set's pod n (or a cleanup pod in its place). New string. */
char *set_pod_name(const char *set, long long n);
/* "<tmpl>-<set>-<n>": the set's claim n from claim template tmpl. New string. */
char *set_claim_name(const char *tmpl, const char *set, long long n);
/* What precedes n in those names: "<set>-" (tmpl NULL) or "<tmpl>-<set>-". New string. */
char *set_name_prefix(const char *tmpl, const char *set);

/*
 * Calls fn with each name a StatefulSet owning claim could have (every
 * suffix of <template>-<sts> after a dash), or not at all when claim does
 * not end in -<digits>.
 */
void claim_statefulset_candidates(const char *claim, void (*fn)(void *ctx, const char *sts), void *ctx);

/*
 * The set a pod "<set>-<n>" is named after, or NULL when pod does not end
 * in -<digits>. New string.
 */
char *pod_set_name(const char *pod);

#endif
