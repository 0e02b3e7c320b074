/*
 * Scale-down cleanup on the real node: the user's cleanup pod is a real
 * container that reads the volume the scale-down left behind and reports
 * what it found in its termination message (the SHA-256 of the volume's
 * manifest, checked against what the replica's own pod saw when it stopped);
 * then the claim, its PV and the backing file go. A cleanup that exits
 * non-zero is retried and, given up, keeps the claim with its data. A cleanup
 * pod deleted mid-run gets a real SIGTERM, exits 0, and still counts as failed.
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

/* A cleanup pod template (YAML) on the real node running script with the claim at /data. */
static char *cleanup_template(const char *script)
{
	return xasprintf("spec:\n"
			 "  nodeSelector: {" RN_NODE_LABEL ": real}\n"
			 "  tolerations: [{key: " RN_NODE_LABEL ", operator: Exists, effect: NoSchedule}]\n"
			 "  terminationGracePeriodSeconds: 10\n"
			 "  containers:\n"
			 "  - name: cleanup\n"
			 "    image: " RN_TOOLS_IMAGE "\n"
			 "    imagePullPolicy: Never\n"
			 "    command: [sh, -c, '%s']\n"
			 "    volumeMounts: [{name: data, mountPath: /data}]\n",
			 script);
}

static void scale(struct rn_test *t, int replicas)
{
	if (it_sh("kubectl scale -n %s statefulset/" SET " --replicas=%d >/dev/null", t->ns, replicas))
		fail_msg("kubectl scale failed");
}

/*
 * Two replicas with a cleanup template running script (max_attempts: NULL =
 * the default), their pods Ready; the operator started, then scaled to one.
 * *uid1 and *pv1: replica 1's pod and volume before (new strings).
 */
static void scale_down_with_cleanup(struct rn_test *t, const char *script, const char *max_attempts, char **uid1,
				    char **pv1)
{
	json_t *sts = rn_workload_set(t, SET, 2, "local-fixed", "64Mi", 4);
	char *tmpl = cleanup_template(script);
	it_set_annotation(sts, "stateful-operator.io/scaledown-pod-template", tmpl);
	if (max_attempts)
		it_set_annotation(sts, "stateful-operator.io/scaledown-max-attempts", max_attempts);
	free(tmpl);
	rn_create_workload(t, sts, 2);
	json_decref(sts);
	*uid1 = rn_pod_uid(t, SET "-1");
	*pv1 = rn_claim_volume(t, "data-" SET "-1");
	rn_start_operator(t);
	scale(t, 1);
}


struct claim_ctx {
	struct rn_test *t;
	const char *claim;
	char *pv;
};

/* The claim, its PV and the PV's backing file are all gone. */
static bool claim_gone(void *ctx)
{
	struct claim_ctx *c = ctx;
	json_t *pvc = it_get(c->t->admin, &KUBE_PVCS, c->t->ns, c->claim);
	json_t *pv = it_get(c->t->admin, &KUBE_PVS, NULL, c->pv);
	bool gone = !pvc && !pv && !rn_backing_file_exists(c->pv);
	json_decref(pvc);
	json_decref(pv);
	return gone;
}

/* The cleanup pod's termination message, from the pods recorded (its last record with one); new string. */
static char *termination_message(const json_t *records, const char *pod)
{
	char *msg = NULL;
	size_t i;
	const json_t *r;
	json_array_foreach(records, i, r) {
		const json_t *o = json_object_get(r, "object");
		const char *n = kube_obj_str(o, "metadata.name");
		const json_t *st = json_array_get(json_object_get(json_object_get(o, "status"), "containerStatuses"), 0);
		const char *m = kube_obj_str(st, "state.terminated.message");
		if (n && !strcmp(n, pod) && m && it_label(o, "stateful-operator.io/cleanup-for")) {
			free(msg);
			msg = xstrdup(m);
		}
	}
	return msg;
}

static void test_cleanup_reads_the_volume_then_it_goes(void **state)
{
	struct rn_test *t = *state;
	struct claim_ctx c = {t, "data-" SET "-1", NULL};
	char *uid1;
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, t->ns);
	scale_down_with_cleanup(t,
				"echo \"found $(find /data -type f | wc -l) files, manifest "
				"$(tree-manifest /data | sha256sum | cut -c1-64)\" >/dev/termination-log",
				NULL, &uid1, &c.pv);
	if (!it_wait_every(claim_gone, &c, RN_WAIT_MS, 500))
		fail_msg("data-" SET "-1, its PV or its backing file still there after the cleanup");
	json_t *records = it_recorder_stop(pods);
	char *msg = termination_message(records, SET "-1");
	char *stop = rn_wait_report(t, uid1, "stop", 1000);
	char want[65];
	rn_sha256_hex(stop, want);
	printf("[ info ] the cleanup pod reported: %s\n", msg ? msg : "(nothing)");
	if (!msg || !strstr(msg, want))
		fail_msg("the cleanup pod did not read the volume the replica left (want manifest %s): %s", want,
			 msg ? msg : "(no termination message)");
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", NULL), 1);
	json_decref(records);
	free(stop);
	free(msg);
	free(c.pv);
	free(uid1);
}

struct status_ctx {
	struct rn_test *t;
	const char *want;
};

static bool status_says(void *ctx)
{
	struct status_ctx *s = ctx;
	json_t *sts = it_get(s->t->admin, &KUBE_STATEFULSETS, s->t->ns, SET);
	const char *status = sts ? it_annotation(sts, "stateful-operator.io/scaledown-status") : NULL;
	bool says = status && strstr(status, s->want);
	json_decref(sts);
	return says;
}

/*
 * Scaled back up after a cleanup gave up: the replica's pod starts on the
 * claim that was kept and finds what it left.
 */
static void expect_data_kept(struct rn_test *t, const char *old_uid, const char *pv)
{
	scale(t, 2);
	rn_wait_workload(t, SET, 2);
	char *uid = rn_pod_uid(t, SET "-1");
	char *now_pv = rn_claim_volume(t, "data-" SET "-1");
	assert_string_equal(now_pv, pv);
	char *before = rn_wait_report(t, old_uid, "stop", 1000);
	char *after = rn_wait_report(t, uid, "start", 1000);
	rn_assert_same_tree(before, after, SET "-1 after its cleanup failed");
	free(after);
	free(before);
	free(now_pv);
	free(uid);
}

static void test_failing_cleanup_is_retried_and_keeps_the_claim(void **state)
{
	struct rn_test *t = *state;
	char *uid1, *pv;
	scale_down_with_cleanup(t, "echo archive server unreachable >/dev/termination-log; exit 3", "2", &uid1, &pv);
	struct status_ctx s = {t, "Failed"};
	if (!it_wait_every(status_says, &s, RN_WAIT_MS, 500))
		fail_msg("the cleanup was not given up");
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupFailed", NULL), 2);
	char *why = it_event_message(t->admin, t->ns, "CleanupFailed", NULL);
	if (!why || !strstr(why, "archive server unreachable"))
		fail_msg("CleanupFailed does not carry the pod's message: %s", why ? why : "(none)");
	free(why);
	expect_data_kept(t, uid1, pv);
	free(pv);
	free(uid1);
}

struct pod_ctx {
	struct rn_test *t;
	const char *name;
};

static bool cleanup_running(void *ctx)
{
	struct pod_ctx *p = ctx;
	json_t *pod = it_get(p->t->admin, &KUBE_PODS, p->t->ns, p->name);
	const char *phase = pod ? kube_obj_str(pod, "status.phase") : NULL;
	bool running = phase && !strcmp(phase, "Running") && it_label(pod, "stateful-operator.io/cleanup-for");
	json_decref(pod);
	return running;
}

static void test_cleanup_pod_deleted_mid_run_counts_as_failed(void **state)
{
	struct rn_test *t = *state;
	char *uid1, *pv;
	/* Exits 0 on SIGTERM, as many scripts would: that must not pass for a finished cleanup. */
	scale_down_with_cleanup(t, "trap \"exit 0\" TERM; sleep 300 & wait", "1", &uid1, &pv);
	struct pod_ctx p = {t, SET "-1"};
	if (!it_wait_every(cleanup_running, &p, RN_WAIT_MS, 200))
		fail_msg("the cleanup pod never ran");
	it_sleep_ms(1000);
	if (it_sh("kubectl delete -n %s pod/" SET "-1 --wait=false >/dev/null", t->ns))
		fail_msg("kubectl delete failed");
	struct status_ctx s = {t, "Failed"};
	if (!it_wait_every(status_says, &s, RN_WAIT_MS, 500))
		fail_msg("the deleted cleanup was not counted as a failure");
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", NULL), 0);
	expect_data_kept(t, uid1, pv);
	free(pv);
	free(uid1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cleanup_reads_the_volume_then_it_goes, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_failing_cleanup_is_retried_and_keeps_the_claim, rn_setup,
						rn_teardown),
		cmocka_unit_test_setup_teardown(test_cleanup_pod_deleted_mid_run_counts_as_failed, rn_setup,
						rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
