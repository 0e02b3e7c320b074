/*
 * StatefulCluster on the real node: three members running real containers
 * on real volumes; one member's container then exits for good (every start
 * exits 1, restartPolicy Always: crash loop, never Ready), and the member is
 * replaced by a new identity with a new volume, while its old volume follows
 * whenReplaced: kept (claim, PV and backing file) with Retain, gone with Delete.
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

#define NAME "db"

struct gone_ctx {
	struct rn_test *t;
	const char *pv;
};

static bool volume_gone(void *ctx)
{
	struct gone_ctx *g = ctx;
	json_t *pv = it_get(g->t->admin, &KUBE_PVS, NULL, g->pv);
	json_decref(pv);
	return !pv && !rn_backing_file_exists(g->pv);
}

static void replaced_member(void **state, const char *when_replaced)
{
	struct rn_test *t = *state;
	struct kube_error err;
	rn_start_operator(t);
	json_t *stc = rn_workload_cluster(t, NAME, 3, "local-fixed", "64Mi", when_replaced);
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) < 0)
		fail_msg("create StatefulCluster: %s", err.message);
	json_decref(stc);
	rn_wait_workload(t, NAME, 3);
	/* Up: from now on a member that stops being Ready is replaced 5 s later. */
	it_merge_patch(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, NAME, "{\"spec\":{\"replacement\":{\"startupGraceSeconds\":5}}}");
	char *failed_pv = rn_claim_volume(t, "data-" NAME "-1");
	assert_non_null(failed_pv);

	double t0 = it_now_ms();
	if (it_sh("kubectl exec -n %s " NAME "-1 -- sh -c 'touch /data/.exit-for-good; kill 1'", t->ns))
		fail_msg("kubectl exec failed");
	/* The replacement: a new identity, never db-1 again. */
	char *uid3 = NULL;
	for (double deadline = it_now_ms() + RN_WAIT_MS; !uid3; it_sleep_ms(250)) {
		if (it_now_ms() > deadline)
			fail_msg("no member " NAME "-3 replaced " NAME "-1");
		uid3 = rn_pod_uid(t, NAME "-3");
	}
	char *start3 = rn_wait_report(t, uid3, "start", RN_WAIT_MS);
	printf("[ figures ] member replaced: %.1f s from its container failing for good to the new member's start\n",
	       (it_now_ms() - t0) / 1000);
	assert_int_equal(it_event_count(t->admin, t->ns, "MemberReplaced", NULL) >= 1, 1);
	it_sleep_ms(3000);
	char *uid1 = rn_pod_uid(t, NAME "-1");
	assert_null(uid1); /* the identity is not used again */
	char *new_pv = rn_claim_volume(t, "data-" NAME "-3");
	assert_non_null(new_pv);
	assert_string_not_equal(new_pv, failed_pv);

	if (!strcmp(when_replaced, "Retain")) {
		char *kept = rn_claim_volume(t, "data-" NAME "-1");
		assert_non_null(kept);
		assert_string_equal(kept, failed_pv);
		assert_true(rn_backing_file_exists(failed_pv));
		free(kept);
	} else {
		struct gone_ctx g = {t, failed_pv};
		if (!it_wait_every(volume_gone, &g, RN_WAIT_MS, 500))
			fail_msg("whenReplaced Delete: the failed member's PV or backing file is still there");
		json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-" NAME "-1");
		assert_null(pvc);
	}
	free(new_pv);
	free(start3);
	free(uid3);
	free(failed_pv);
}

static void test_replaced_member_keeps_its_volume_with_retain(void **state)
{
	replaced_member(state, "Retain");
}

static void test_replaced_member_loses_its_volume_with_delete(void **state)
{
	replaced_member(state, "Delete");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_replaced_member_keeps_its_volume_with_retain, rn_setup,
						rn_teardown),
		cmocka_unit_test_setup_teardown(test_replaced_member_loses_its_volume_with_delete, rn_setup,
						rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
