#include <string.h>

#include "client/kube_object.h"
#include "plugin/plugin_operator.h"
#include "plugin/plugin_status.h"
#include "util/xalloc.h"

/*
 * Whether the pod runs the operator with --leader-elect: its readiness then
 * says it can serve (a standby is Ready too), not that it acts; the Lease
 * says who acts.
 */
static bool elects_a_leader(const json_t *pod)
{
	static const char *const lists[] = {"command", "args"};
	const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
	size_t i, j;
	const json_t *c, *word;
	json_array_foreach(containers, i, c) {
		for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
			json_array_foreach(json_object_get(c, lists[k]), j, word) {
				if (json_is_string(word) && !strcmp(json_string_value(word), "--leader-elect"))
					return true;
			}
		}
	}
	return false;
}

enum operator_seen operator_judge(const struct operator_evidence *ev, const char *ns, long long now_s, char **why)
{
	const char *holder = kube_obj_str(ev->lease, "spec.holderIdentity");
	long long renewed = status_time_seconds(kube_obj_str(ev->lease, "spec.renewTime"));
	long long duration = kube_obj_int(ev->lease, "spec", "leaseDurationSeconds", 15);
	if (holder && *holder && renewed >= 0 && now_s <= renewed + duration + OPERATOR_LEASE_SKEW_S) {
		*why = xasprintf("%s leads (Lease %s/%s)", holder, ns, OPERATOR_LEASE_NAME);
		return OPERATOR_RUNNING;
	}
	size_t i;
	const json_t *pod;
	json_array_foreach(ev->pods, i, pod) {
		if (kube_pod_ready(pod) && !elects_a_leader(pod)) {
			*why = xasprintf("pod %s/%s is Ready", ns, kube_obj_str(pod, "metadata.name"));
			return OPERATOR_RUNNING;
		}
	}
	if (!ev->lease_readable && !ev->pods_readable) {
		*why = xasprintf("cannot tell whether the operator runs: reading its Lease and pods in namespace %s was "
				 "refused",
				 ns);
		return OPERATOR_UNKNOWN;
	}
	if (ev->lease && holder && *holder && renewed >= 0)
		*why = xasprintf("no operator running: Lease %s/%s was last renewed by %s %llds ago", ns,
				 OPERATOR_LEASE_NAME, holder, now_s - renewed);
	else if (ev->lease)
		*why = xasprintf("no operator running: Lease %s/%s has no holder, and no Ready pod labelled %s", ns,
				 OPERATOR_LEASE_NAME, OPERATOR_POD_SELECTOR);
	else
		*why = xasprintf("no operator running: no Lease %s/%s and no Ready pod labelled %s in namespace %s "
				 "(--operator-namespace names where it runs)",
				 ns, OPERATOR_LEASE_NAME, OPERATOR_POD_SELECTOR, ns);
	return OPERATOR_NOT_RUNNING;
}
