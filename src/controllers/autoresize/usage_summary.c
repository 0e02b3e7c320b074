/*
 * The kubelet's stats summary (GET /stats/summary, the types of
 * k8s.io/kubelet/pkg/apis/stats/v1alpha1): of each pod's "volume" list,
 * the volumes that name a claim (pvcRef) and their file system's figures
 * (capacityBytes, usedBytes, availableBytes, inodes, inodesUsed,
 * inodesFree; each optional in the API, uint64 when there). The node
 * writes it: what it says of a claim counts only as usage_mounts.c allows.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/xalloc.h"
#include "util/yaml_json.h"

/*
 * A figure the kubelet gave: a whole number, not negative, below 2^63.
 * The summary is read with every number as a double (see below), exact
 * up to 2^53: 8 PiB, past any volume.
 */
static bool figure(const json_t *vol, const char *key, int64_t *v)
{
	const json_t *f = json_object_get(vol, key);
	if (!json_is_number(f))
		return false;
	double d = json_number_value(f);
	if (!(d >= 0 && d < 9223372036854775808.0) || d != floor(d))
		return false;
	*v = (int64_t)d;
	return true;
}

/*
 * One volume's usage: false when a byte figure is missing (a volume the
 * kubelet has not measured yet). Inodes are optional (0: not known);
 * inodesUsed, when absent, is inodes - inodesFree (what statfs gives).
 */
static bool volume_usage(const json_t *vol, struct volume_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (!figure(vol, "capacityBytes", &u->capacity_bytes) || !figure(vol, "usedBytes", &u->used_bytes) ||
	    !figure(vol, "availableBytes", &u->available_bytes))
		return false;
	int64_t inodes, used, free_inodes;
	if (!figure(vol, "inodes", &inodes))
		return true;
	if (figure(vol, "inodesUsed", &used)) {
		u->inodes = inodes;
		u->inodes_used = used;
	} else if (figure(vol, "inodesFree", &free_inodes) && free_inodes <= inodes) {
		u->inodes = inodes;
		u->inodes_used = inodes - free_inodes;
	}
	return true;
}

/* A node writes its summary: bounded in bytes, depth and parsed memory. */
static const struct doc_limits summary_limits = {
	.max_bytes = USAGE_RESPONSE_MAX,
	.max_depth = DOC_MAX_DEPTH,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = USAGE_RESPONSE_MAX,
	.max_parsed_bytes = USAGE_SUMMARY_MAX_PARSED,
	.budget = "the budget for a kubelet's stats summary",
};

int usage_parse_summary(const char *body, size_t len, const char *node, const json_t *mounts, json_t *table,
			char **why)
{
	json_t *doc = NULL;
	char *msg = NULL;
	/*
	 * Counters are uint64 (a big node's usageCoreNanoSeconds passes 2^63
	 * after a few years): as integers jansson would refuse the whole
	 * summary for one of them.
	 */
	int rc = json_load_limited(body, len, JSON_DECODE_INT_AS_REAL, &summary_limits, &doc, &msg);
	if (rc < 0 || !json_is_object(doc)) {
		*why = rc == DOC_TOO_LARGE ? xasprintf("the stats summary is refused: %s", msg)
		       : rc < 0	    ? xasprintf("the stats summary is not JSON: %s", msg)
				    : xstrdup("the stats summary is not a JSON object");
		free(msg);
		json_decref(doc);
		return -1;
	}
	json_t *pods = json_object_get(doc, "pods");
	/* A node without pods may say "pods": null (Go's empty slice). */
	if (!json_is_array(pods) && !json_is_null(pods)) {
		*why = xstrdup("the stats summary has no pods array");
		json_decref(doc);
		return -1;
	}
	size_t i, j;
	int ignored = 0;
	json_t *pod, *vol;
	json_array_foreach(pods, i, pod) {
		const json_t *pod_ref = json_object_get(pod, "podRef");
		const char *pod_name = json_string_value(json_object_get(pod_ref, "name"));
		const char *pod_ns = json_string_value(json_object_get(pod_ref, "namespace"));
		json_array_foreach(json_object_get(pod, "volume"), j, vol) {
			const json_t *ref = json_object_get(vol, "pvcRef");
			const char *claim = json_string_value(json_object_get(ref, "name"));
			const char *ns = json_string_value(json_object_get(ref, "namespace"));
			struct volume_usage u;
			if (!claim || !*claim || !ns || !*ns)
				continue;
			/* Only the node and pod the cache shows mounting the claim speak for it. */
			enum usage_mount m = usage__mount_of(mounts, node, pod_ns, pod_name, ns, claim);
			if (m == USAGE_MOUNT_WRONG_NODE)
				ignored++;
			if (m == USAGE_MOUNT_YES && volume_usage(vol, &u))
				usage__table_add(table, ns, claim, &u);
		}
	}
	json_decref(doc);
	return ignored;
}
