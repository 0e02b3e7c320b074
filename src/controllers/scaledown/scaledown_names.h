/*
 * The names scale-down reads and makes, in one place: a StatefulSet's pods
 * are <sts>-<n> (a cleanup pod takes the name of the pod it replaces), its
 * claims <template>-<sts>-<n>. Each returns a new string. Thread-safe.
 */
#ifndef SOP_SCALEDOWN_NAMES_H
#define SOP_SCALEDOWN_NAMES_H

#include "util/xalloc.h"

/* "<sts>-": what kube_name_ordinal reads a pod's ordinal after. */
static inline char *scaledown_pod_prefix(const char *sts)
{
	return xasprintf("%s-", sts);
}

/* "<template>-<sts>-": likewise for a claim. */
static inline char *scaledown_claim_prefix(const char *tmpl, const char *sts)
{
	return xasprintf("%s-%s-", tmpl, sts);
}

/* <sts>-<n>: the set's pod of ordinal n, or the cleanup pod in its place. */
static inline char *scaledown_pod_name(const char *sts, long n)
{
	return xasprintf("%s-%ld", sts, n);
}

/* <template>-<sts>-<n>: the set's claim of ordinal n from template tmpl. */
static inline char *scaledown_claim_name(const char *tmpl, const char *sts, long n)
{
	return xasprintf("%s-%s-%ld", tmpl, sts, n);
}

#endif
