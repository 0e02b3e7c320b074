/*
 * What the Pod cache keeps (pod_fields.h), and who reads it. Every read of
 * a cached pod in src/ was looked at (the pod stores of the resize,
 * autoresize, cluster and scale-down controllers, their event handlers,
 * and the helpers of client/kube_object.h they call). A field not listed
 * here is dropped: a planner that starts reading one adds it here first.
 *
 * apiVersion, kind
 * metadata: all of it (managedFields are dropped for every resource by
 *   the informer), except annotations:
 *   - name, namespace: every reader (cache keys, set_index_pod, lookups)
 *   - uid, resourceVersion: delete preconditions (all four controllers),
 *     the resize restart record, the cluster's deleted pods, scale-down's
 *     lastPod; the store's duplicate check
 *   - labels, all of them: scale-down matches the set's selector against
 *     them (scaledown_plan_orphaning); job-name and resize-copy-of (resize:
 *     copy Job pods), cleanup-for (scale-down), controller-revision-hash and
 *     cluster (cluster), resize-copy-of also indexes pods (set_index_pod)
 *   - annotations: only the cleanup pods' (scale-down reads
 *     cleanup-attempt and cleanup-claims; cleanup-ordinal is kept with
 *     them); no other annotation of a pod is read, and a service mesh's
 *     or a tool's can be large
 *   - ownerReferences: adoption (resize plan_pods_adopted), the owner
 *     handlers, cluster and scale-down (controlled_by, has_controller)
 *   - deletionTimestamp, deletionGracePeriodSeconds: kube_pod_ready and
 *     kube_obj_terminating everywhere; scale-down's succeeded()
 *   - creationTimestamp: scale-down's timeout, cluster's start when no
 *     startTime
 * spec:
 *   - nodeName: resize (a precopy Job runs on the pod's node), autoresize
 *     (which kubelets to ask, who may speak for a claim), cluster (nodes
 *     read, node lost, status.members[].node)
 *   - volumes[]: name, and persistentVolumeClaim whole: autoresize
 *     (usage_mounts_add_pod), resize (pod_mounts_claim). Other volumes keep
 *     their name only (the projected token volume's body is the largest
 *     part of a pod nobody reads).
 * status:
 *   - phase: cluster, scale-down (scaledown_pod_phase), resize (a copy
 *     Job's pod Succeeded)
 *   - reason, message: cluster (a Failed or Evicted member), scale-down
 *     (failure_raw)
 *   - conditions: the Ready one, whole: its status (kube_pod_ready) and
 *     lastTransitionTime (cluster: minReadySeconds, unhealthy, node lost);
 *     no other type is read (PodScheduled, Initialized, ContainersReady...)
 *   - startTime: cluster (unhealthyAfterSeconds)
 *   - hostIP: autoresize (the kubelet's address when its Node is not
 *     cached)
 *   - containerStatuses[]: name and state (terminated: message, reason,
 *     exitCode, finishedAt): resize (copy Jobs' termination messages:
 *     progress and failures), scale-down (failure_raw, succeeded); ready
 *     and restartCount are kept too (a few bytes: the container's health)
 *
 * Dropped, never read: spec.containers, initContainers, tolerations,
 * affinity, securityContext, serviceAccountName and the rest of spec;
 * status.podIP(s), hostIPs, qosClass, initContainerStatuses,
 * ephemeralContainerStatuses, and of each container status its image,
 * imageID, containerID, lastState, started, resources, volumeMounts, user.
 *
 * Pods read live are whole: scale-down's checks before a delete (GET,
 * LIST), the action's check after an unknown outcome, the operator's own
 * pod (main.c), the cluster's pods just created (the create's answer).
 */
#include "controllers/pod_fields.h"

#include <stdbool.h>
#include <string.h>

#include "controllers/contract.h"

/* Whether key is in the NULL-terminated list. */
static bool listed(const char *const *list, const char *key)
{
	for (; *list; list++)
		if (!strcmp(*list, key))
			return true;
	return false;
}

/* Drops every key of obj (if an object) not in keep (NULL-terminated). */
static void keep_only(json_t *obj, const char *const *keep)
{
	const char *key;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(obj, tmp, key, v) {
		if (!listed(keep, key))
			json_object_del(obj, key);
	}
}

/* Of a pod's conditions (an array), only Ready: no other type is read. */
static void keep_ready(json_t *conditions)
{
	for (size_t i = 0; i < json_array_size(conditions);) {
		const char *type = json_string_value(json_object_get(json_array_get(conditions, i), "type"));
		if (type && !strcmp(type, "Ready"))
			i++;
		else
			json_array_remove(conditions, i);
	}
}

void pod_fields_keep(json_t *pod)
{
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
	static const char *const annotations[] = {ANNOTATION_CLEANUP_ATTEMPT, ANNOTATION_CLEANUP_CLAIMS,
						  ANNOTATION_CLEANUP_ORDINAL, NULL};
	static const char *const spec[] = {"nodeName", "volumes", NULL};
	static const char *const volume[] = {"name", "persistentVolumeClaim", NULL};
	static const char *const status[] = {"phase", "reason", "message", "conditions", "startTime", "hostIP",
					     "containerStatuses", NULL};
	static const char *const container[] = {"name", "state", "ready", "restartCount", NULL};
	if (!json_is_object(pod))
		return;
	keep_only(pod, top);
	keep_only(json_object_get(json_object_get(pod, "metadata"), "annotations"), annotations);
	json_t *s = json_object_get(pod, "spec");
	keep_only(s, spec);
	size_t i;
	json_t *item;
	json_array_foreach(json_object_get(s, "volumes"), i, item)
		keep_only(item, volume);
	s = json_object_get(pod, "status");
	keep_only(s, status);
	keep_ready(json_object_get(s, "conditions"));
	json_array_foreach(json_object_get(s, "containerStatuses"), i, item)
		keep_only(item, container);
}
