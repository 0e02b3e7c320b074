/*
 * Resize in place on the real node: the StorageClass allows expansion and
 * the test bed grows the real file system (xfs, online), so the running
 * pods keep running: same pod UIDs, and df inside them shows the new size.
 * In the offline mode the expansion finishes only when the pod restarts:
 * the operator restarts only the pods whose claims wait for it, one at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "realnode.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "db"
#define REPLICAS 2

/* df -B1 /data inside the running pod: the file system's size in bytes. */
static int64_t df_in_pod(struct rn_test *t, const char *pod)
{
	char *out = it_sh_output("kubectl exec -n %s %s -- df -B1 /data | tail -n 1", t->ns, pod);
	int64_t size = rn_df_bytes(out);
	free(out);
	return size;
}

/*
 * The file system grew by what the claim grew (320Mi -> 512Mi) give or take
 * xfs's own overhead, and is no bigger than the claim.
 */
static void expect_grown(const char *pod, int64_t before, int64_t after)
{
	if (after - before < 180LL << 20 || after > 512LL << 20)
		fail_msg("%s: df shows %lld bytes, %lld before: not grown by the claim's 192Mi", pod, (long long)after,
			 (long long)before);
}

static void annotate_template(json_t *sts, const char *key, const char *value)
{
	json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	it_set_annotation(tmpl, key, value);
}

/*
 * REPLICAS replicas on 320Mi xfs volumes (offline: the test bed's resizer
 * finishes their expansion only once their pod restarts), Ready; each pod's
 * UID and file system size as seen from inside it (uids new strings).
 */
static void start_workload(struct rn_test *t, bool offline, char *uids[REPLICAS], int64_t sizes[REPLICAS])
{
	json_t *sts = rn_workload_set(t, SET, REPLICAS, "local-expandable", "320Mi", 8);
	if (offline)
		annotate_template(sts, "testbed.stateful-operator.io/resize-mode", "offline");
	rn_create_workload(t, sts, REPLICAS);
	json_decref(sts);
	for (int k = 0; k < REPLICAS; k++) {
		char pod[32];
		snprintf(pod, sizeof(pod), SET "-%d", k);
		uids[k] = rn_pod_uid(t, pod);
		sizes[k] = df_in_pod(t, pod);
		assert_true(sizes[k] <= 320LL << 20);
	}
}

/*
 * Starts the operator and a sampler of the replicas, asks for 512Mi and
 * waits until the resize is over; returns how long that took (ms).
 */
static double resize_to_512mi(struct rn_test *t, struct rn_sampler *sampler)
{
	rn_start_operator(t);
	rn_sampler_start(sampler, t->ns, SET, REPLICAS);
	double t0 = it_now_ms();
	rn_annotate(t, "statefulset/" SET, "resize.stateful-operator.io/data=512Mi");
	rn_wait_resize(t, SET, RN_WAIT_MS, sampler);
	double took = it_now_ms() - t0;
	return took;
}

static void test_online_expansion_keeps_pods_running(void **state)
{
	struct rn_test *t = *state;
	char *uids[REPLICAS];
	int64_t sizes[REPLICAS];
	start_workload(t, false, uids, sizes);
	struct rn_sampler sampler;
	double took = resize_to_512mi(t, &sampler);
	assert_int_equal(sampler.max_down, 0); /* nobody restarted, nobody went unready */
	for (int k = 0; k < REPLICAS; k++) {
		char pod[32], claim[32];
		snprintf(pod, sizeof(pod), SET "-%d", k);
		snprintf(claim, sizeof(claim), "data-" SET "-%d", k);
		char *uid = rn_pod_uid(t, pod);
		assert_string_equal(uid, uids[k]);
		expect_grown(pod, sizes[k], df_in_pod(t, pod)); /* inside the running pod */
		json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
		assert_string_equal(kube_obj_str(pvc, "status.capacity.storage"), "512Mi");
		json_decref(pvc);
		free(uid);
		free(uids[k]);
	}
	json_t *set = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	const json_t *tmpl = json_array_get(json_object_get(json_object_get(set, "spec"), "volumeClaimTemplates"), 0);
	assert_string_equal(kube_obj_str(tmpl, "spec.resources.requests.storage"), "512Mi");
	json_decref(set);
	printf("[ figures ] online expansion of %d replicas 320Mi -> 512Mi (xfs): %.1f s, no pod restarted\n",
	       REPLICAS, took / 1000);
}

static void test_offline_expansion_restarts_one_pod_at_a_time(void **state)
{
	struct rn_test *t = *state;
	char *uids[REPLICAS];
	int64_t sizes[REPLICAS];
	start_workload(t, true, uids, sizes);
	struct rn_sampler sampler;
	resize_to_512mi(t, &sampler);
	rn_wait_workload(t, SET, REPLICAS);
	assert_int_equal(sampler.max_down, 1); /* each restarted, never two at once */
	for (int k = 0; k < REPLICAS; k++) {
		char pod[32];
		snprintf(pod, sizeof(pod), SET "-%d", k);
		char *uid = rn_pod_uid(t, pod);
		assert_string_not_equal(uid, uids[k]);
		/* Its data went along: the volume is the same one, grown. */
		char *before = rn_wait_report(t, uids[k], "stop", 1000);
		char *after = rn_wait_report(t, uid, "start", 1000);
		rn_assert_same_tree(before, after, pod);
		expect_grown(pod, sizes[k], df_in_pod(t, pod));
		free(after);
		free(before);
		free(uid);
		free(uids[k]);
	}
	printf("[ figures ] offline expansion of %d replicas: replica-seconds not Ready %.1f\n", REPLICAS,
	       sampler.not_ready_s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_online_expansion_keeps_pods_running, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_offline_expansion_restarts_one_pod_at_a_time, rn_setup,
						rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
