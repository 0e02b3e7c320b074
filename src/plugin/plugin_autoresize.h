/*
 * The autoresize part of `kubectl stateful status`: one row per template
 * with a policy (autoresize_policy.h) on a StatefulSet or StatefulCluster:
 * the policy, the fullest claim's usage as its kubelet reports it (when
 * the user may read it), and the next growth: when, and to what size.
 * Extra row fields: "policy", "claims": [{"claim", "usedRatio",
 * "usedBytes", "capacityBytes"}], "nextGrowth" (RFC 3339, "now", or null),
 * "nextSize". Pure.
 */
#ifndef SOP_PLUGIN_AUTORESIZE_H
#define SOP_PLUGIN_AUTORESIZE_H

#include <jansson.h>

struct autoresize_usage_view {
	const json_t *table; /* "ns/claim" -> usage object (usage_source.h), or NULL */
	const char *error;   /* why some usage could not be read, or NULL */
};

/*
 * Appends the rows of w (kind "sts" or "stc"). claims: the PVCs of w's
 * namespace (an array; others are skipped); classes: the StorageClasses,
 * or NULL when they cannot be read (sizes then step by 1Gi); events may be
 * NULL; now_ms: wall clock.
 */
void status_autoresize_rows(json_t *rows, const char *kind, const json_t *w, const json_t *claims,
			    const json_t *classes, const struct autoresize_usage_view *u, const json_t *events,
			    long long now_ms);

#endif
