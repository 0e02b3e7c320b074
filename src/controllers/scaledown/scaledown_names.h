/*
 * The names scale-down reads and makes, in one place: a StatefulSet's pods
 * are <sts>-<n> (a cleanup pod takes the name of the pod it replaces), its
 * claims <template>-<sts>-<n>. Pure; thread-safe.
 */
#ifndef SOP_SCALEDOWN_NAMES_H
#define SOP_SCALEDOWN_NAMES_H

/* "<sts>-": what kube_name_ordinal reads a pod's ordinal after. New string. */
char *scaledown_pod_prefix(const char *sts);
/* "<template>-<sts>-": likewise for a claim. New string. */
char *scaledown_claim_prefix(const char *tmpl, const char *sts);
/* <sts>-<n>: the set's pod of ordinal n, or the cleanup pod in its place. New string. */
char *scaledown_pod_name(const char *sts, long n);
/* <template>-<sts>-<n>: the set's claim of ordinal n from template tmpl. New string. */
char *scaledown_claim_name(const char *tmpl, const char *sts, long n);

#endif
