/*
 * Which node may speak for which claim. A kubelet's stats summary is
 * written by its node: a node taken over could name every claim of the
 * cluster in it, with figures that grow them to their maximum or let
 * them fill. What the cache says is written by the API server's
 * scheduler and the users: a claim's figures count only from the node
 * that runs a pod mounting it, under that pod's name (usage_source.h).
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/xalloc.h"

/* parent[key], an empty object put there when missing; borrowed from parent. */
static json_t *child(json_t *parent, const char *key)
{
	json_t *c = json_object_get(parent, key);
	if (!c) {
		c = json_object();
		json_object_set_new(parent, key, c);
	}
	return c;
}

void usage_mounts_add_pod(json_t *mounts, const json_t *pod)
{
	const char *ns = kube_obj_str(pod, "metadata.namespace");
	const char *name = kube_obj_str(pod, "metadata.name");
	const char *node = kube_obj_str(pod, "spec.nodeName");
	if (!ns || !*ns || !name || !*name || !node || !*node)
		return;
	size_t i;
	const json_t *vol;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, vol) {
		const char *claim = kube_obj_str(vol, "persistentVolumeClaim.claimName");
		if (!claim || !*claim)
			continue;
		char *key = xasprintf("%s/%s", ns, claim);
		json_object_set_new(child(child(mounts, key), node), name, json_true());
		free(key);
	}
}

enum usage_mount usage__mount_of(const json_t *mounts, const char *node, const char *pod_ns, const char *pod,
				 const char *ns, const char *claim)
{
	char *key = xasprintf("%s/%s", ns, claim);
	const json_t *by_node = json_object_get(mounts, key);
	free(key);
	if (!by_node)
		return USAGE_MOUNT_NOT_ASKED;
	const json_t *pods = node ? json_object_get(by_node, node) : NULL;
	if (!pods)
		return USAGE_MOUNT_WRONG_NODE;
	/* A pod mounts claims of its own namespace only. */
	if (!pod_ns || strcmp(pod_ns, ns) || !pod || !json_object_get(pods, pod))
		return USAGE_MOUNT_OTHER_POD;
	return USAGE_MOUNT_YES;
}
