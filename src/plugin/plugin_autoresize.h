/*
 * The autoresize part of `kubectl stateful status`: one row per template
 * a policy rules (autoresize_rule.h: the workload's own, its Namespace's,
 * or its StorageClass's) on a StatefulSet or StatefulCluster:
 * the policy, the fullest claim's usage as the operator published it on
 * the claim (usage_published.h: no right beyond reading claims), with its
 * age, and the next growth: when, and to what size.
 * Extra row fields: "policy", "policySource": {"kind": "workload",
 * "namespace" or "storageclass", "name", "annotation"}, "claims": [{"claim", "usedRatio",
 * "usedBytes", "capacityBytes", "observed", "stale"}] (usedRatio null when
 * nothing is published), "nextGrowth" (RFC 3339, "now", or null),
 * "nextSize". Pure.
 */
#ifndef SOP_PLUGIN_AUTORESIZE_H
#define SOP_PLUGIN_AUTORESIZE_H

#include <jansson.h>

/*
 * Appends the rows of w (kind "sts" or "stc"). claims: the PVCs of w's
 * namespace (an array; others are skipped); classes: the StorageClasses,
 * or NULL when they cannot be read (sizes then step by 1Gi, no class
 * policy); namespace: w's Namespace, NULL when it cannot be read (no
 * namespace policy); events may be NULL; now_ms: wall clock. A template
 * no policy rules has no row; one with mode=off has phase "Off".
 */
void status_autoresize_rows(json_t *rows, const char *kind, const json_t *w, const json_t *claims,
			    const json_t *classes, const json_t *namespace, const json_t *events, long long now_ms);

#endif
