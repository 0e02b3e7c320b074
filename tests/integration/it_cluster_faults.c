/*
 * StatefulCluster when things go wrong, on the test bed (SPEC section
 * "cluster", issue 7): a member whose pod fails is replaced by a pod whose
 * name was never used, its old claims kept or deleted as whenReplaced says;
 * a node lost for longer than nodeLostAfterSeconds has its members replaced
 * elsewhere; a pod slow to become Ready the first time is left alone, one
 * never Ready is replaced once its start-up grace and unhealthyAfterSeconds
 * have passed; the operator restarted with the status wiped, the state
 * annotation removed, or both, never hands out an identity again. The happy
 * paths are in it_cluster.c; the steps both share in support/cluster_steps.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_steps.h"
#include "controllers/cluster/cluster_plan.h"
#include "client/kube_object.h"

/* Asserts the pod names records show for cluster x are exactly want (comma-separated), each used by one pod only. */
static void expect_each_name_used_once(const json_t *records, const char *want)
{
	json_t *seen = cl_names_seen(records, "x");
	char *copy = xstrdup(want), *save = NULL;
	size_t n = 0;
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save), n++) {
		json_int_t uses = json_integer_value(json_object_get(seen, name));
		if (uses != 1)
			fail_msg("pod name %s was used by %lld pods, want 1", name, (long long)uses);
	}
	if (json_object_size(seen) != n) {
		char *all = json_dumps(seen, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("pod names seen %s, want just %s", all, want);
	}
	free(copy);
	json_decref(seen);
}

/* The life named name in lives (borrowed); fails the test when there is none. */
static const json_t *life(const json_t *lives, const char *name)
{
	const json_t *l = it_life_named(lives, name);
	if (!l)
		fail_msg("no record of %s", name);
	return l;
}

static long long life_int(const json_t *l, const char *key)
{
	return (long long)json_integer_value(json_object_get(l, key));
}

/* ---- a failed member is replaced by a new identity ---- */

static void replace_failed_member(struct cl_test *t, const char *prefix, const char *when_replaced)
{
	bool del = !strcmp(when_replaced, "Delete");
	cl_namespace_new(t, prefix);
	cl_record(t);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 3, "data");
	cl_set(stc, "spec.persistentVolumeClaimRetentionPolicy.whenReplaced", json_string(when_replaced));
	cl_create(t, stc);
	json_decref(stc);
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-1,x-2"));
	it_wait_ready_and_bound(t->admin, t->ns, 3, 3, CL_WAIT_MS);
	char *uid = cl_claim_uid(t, "data-x-1");

	cl_fail_pod(t, "x-1");
	stc = cl_wait_settled(t, "x", 3, "x-0,x-2,x-3");
	if (del)
		cl_wait_claim_gone(t, "data-x-1");
	it_wait_ready_and_bound(t->admin, t->ns, 3, del ? 3 : 4, CL_WAIT_MS);
	if (!del) {
		it_sleep_ms(2000); /* a wrong deletion would show by now */
		cl_expect_claim_kept(t, "data-x-1", uid);
	}
	cl_stop_recording(t);

	/* x-3 is a name never used before; x-1 never came back. */
	expect_each_name_used_once(t->pod_records, "x-0,x-1,x-2,x-3");
	json_t *pods = it_lives(t->pod_records, LABEL_CLUSTER, "x");
	const json_t *failed = life(pods, "x-1"), *replacement = life(pods, "x-3");
	long long failed_rv = it_first_rv_where(t->pod_records, json_string_value(json_object_get(failed, "uid")),
						"status.phase", "Failed");
	assert_true(failed_rv > 0);
	assert_true(life_int(replacement, "added_rv") > failed_rv);
	/* New claims for the new identity, made after the failure. */
	json_t *claims = it_lives(t->pvc_records, NULL, NULL);
	assert_true(life_int(life(claims, "data-x-3"), "added_rv") > failed_rv);
	if (del) {
		/* Deleted only once the failed pod had gone. */
		const json_t *old = life(claims, "data-x-1");
		assert_true(life_int(old, "deleting_rv") > life_int(failed, "gone_rv"));
		assert_true(life_int(failed, "gone_rv") > 0);
	} else {
		assert_int_equal(life_int(life(claims, "data-x-1"), "deleting_rv"), 0);
	}
	assert_int_equal(cl_int_at(stc, "status.nextIdentity"), 4);
	cl_expect_member_pods(t, stc);
	cl_expect_events(t, "MemberReplaced", "x", "Warning");
	char *msg = it_event_message(t->admin, t->ns, "MemberReplaced", "x");
	if (!msg || !strstr(msg, "x-1") || !strstr(msg, "x-3"))
		fail_msg("MemberReplaced does not name x-1 and x-3: %s", msg ? msg : "(none)");
	printf("# %s\n", msg);
	free(msg);
	json_decref(claims);
	json_decref(pods);
	json_decref(stc);
	free(uid);
	cl_operator_stop(t);
}

static void test_failed_member_is_replaced_keeping_its_claims(void **state)
{
	replace_failed_member(*state, "it-stc-fail-retain", "Retain");
}

static void test_failed_member_is_replaced_deleting_its_claims(void **state)
{
	replace_failed_member(*state, "it-stc-fail-delete", "Delete");
}

/* ---- a lost node's members are replaced elsewhere ---- */

static void expect_all_on(struct cl_test *t, const char *node)
{
	json_t *pods = cl_member_pods(t, "x");
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) {
		if (!cl_str_is(kube_obj_str(p, "spec.nodeName"), node))
			cl_fail_with_log(t, "pod %s runs on %s, want %s", kube_obj_str(p, "metadata.name"),
					 kube_obj_str(p, "spec.nodeName"), node);
	}
	json_decref(pods);
}

static void test_members_of_a_lost_node_are_replaced(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-node");
	/* Two nodes of the test's own (tainted: nobody else's pods go there); at first only a. */
	const char *a = cl_node_create(t, "a", t->ns);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 2, "data");
	json_t *spec = json_object_get(json_object_get(json_object_get(stc, "spec"), "template"), "spec");
	json_object_set_new(spec, "nodeSelector", json_pack("{s:s}", CL_POOL, t->ns));
	json_object_set_new(spec, "tolerations", json_pack("[{s:s, s:s, s:s, s:s}]", "key", CL_POOL, "operator", "Equal",
							   "value", t->ns, "effect", "NoSchedule"));
	cl_set(stc, "spec.replacement.nodeLostAfterSeconds", json_integer(5));
	cl_create(t, stc);
	json_decref(stc);
	json_decref(cl_wait_settled(t, "x", 2, "x-0,x-1"));
	expect_all_on(t, a);
	const char *b = cl_node_create(t, "b", t->ns);
	char *uid0 = cl_claim_uid(t, "data-x-0"), *uid1 = cl_claim_uid(t, "data-x-1");
	cl_record(t);

	double lost_ms = it_now_ms();
	cl_node_lose(t, a);
	stc = cl_wait_settled(t, "x", 2, "x-2,x-3");
	cl_stop_recording(t);

	expect_all_on(t, b);
	expect_each_name_used_once(t->pod_records, "x-0,x-1,x-2,x-3");
	/* Not before nodeLostAfterSeconds (5 s; the condition's time has whole seconds). */
	json_t *pods = it_lives(t->pod_records, LABEL_CLUSTER, "x");
	for (int n = 2; n < 4; n++) {
		char name[8];
		snprintf(name, sizeof(name), "x-%d", n);
		double after = json_real_value(json_object_get(life(pods, name), "added_ms")) - lost_ms;
		printf("# %s created %.1f s after node %s was lost\n", name, after / 1000, a);
		if (after < 3900)
			cl_fail_with_log(t, "%s was created %.0f ms after the node was lost, before nodeLostAfterSeconds", name,
					 after);
	}
	cl_expect_events(t, "MemberReplaced", "x", "Warning");
	char *msg = it_event_message(t->admin, t->ns, "MemberReplaced", "x");
	if (!msg || !strstr(msg, a))
		fail_msg("MemberReplaced does not name the lost node %s: %s", a, msg ? msg : "(none)");
	free(msg);
	/* whenReplaced defaults to Retain. */
	cl_expect_claim_kept(t, "data-x-0", uid0);
	cl_expect_claim_kept(t, "data-x-1", uid1);
	assert_int_equal(cl_int_at(stc, "status.nextIdentity"), 4);
	json_decref(pods);
	json_decref(stc);
	free(uid1);
	free(uid0);
	cl_operator_stop(t);
}

/* ---- start-up: slow pods are left alone, pods never Ready are replaced ---- */

static void test_slow_starting_pod_is_not_killed(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-slow");
	cl_record(t);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 2, NULL);
	/* Ready after 12 s: past unhealthyAfterSeconds (10) from the start, within grace (8) + 10. */
	cl_template_annotate(stc, CL_READY_AFTER, "12s");
	cl_set(stc, "spec.replacement.startupGraceSeconds", json_integer(8));
	cl_set(stc, "spec.replacement.unhealthyAfterSeconds", json_integer(10));
	cl_create(t, stc);
	json_decref(stc);
	stc = cl_wait_settled(t, "x", 2, "x-0,x-1");
	it_sleep_ms(3000); /* a replacement decided late would show by now */
	cl_stop_recording(t);

	expect_each_name_used_once(t->pod_records, "x-0,x-1");
	json_t *pods = it_lives(t->pod_records, LABEL_CLUSTER, "x");
	size_t i;
	json_t *l;
	json_array_foreach(pods, i, l) {
		assert_int_equal(life_int(l, "deleting_rv"), 0);
		long long rv;
		double ready_ms;
		assert_true(cl_first_ready(t->pod_records, json_string_value(json_object_get(l, "uid")), &rv, &ready_ms));
		double slow = ready_ms - json_real_value(json_object_get(l, "added_ms"));
		printf("# %s Ready %.1f s after it was created\n", json_string_value(json_object_get(l, "name")), slow / 1000);
		/* The test bed did hold it back past unhealthyAfterSeconds. */
		assert_true(slow > 10500);
	}
	assert_int_equal(it_event_count(t->admin, t->ns, "MemberReplaced", "x"), 0);
	assert_int_equal(cl_int_at(stc, "status.nextIdentity"), 2);
	json_decref(pods);
	json_decref(stc);
	cl_operator_stop(t);
}

static bool x1_exists(void *ctx)
{
	struct cl_test *t = ctx;
	json_t *pod = it_get(t->admin, &KUBE_PODS, t->ns, "x-1");
	json_decref(pod);
	return pod != NULL;
}

static void test_never_ready_pod_is_replaced_after_its_grace(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-never");
	cl_record(t);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 1, NULL);
	cl_template_annotate(stc, CL_READY_AFTER, "1h");
	cl_set(stc, "spec.replacement.startupGraceSeconds", json_integer(3));
	cl_set(stc, "spec.replacement.unhealthyAfterSeconds", json_integer(4));
	cl_create(t, stc);
	json_decref(stc);
	cl_wait_or_fail(t, x1_exists, t, "x-0 was not replaced by x-1");
	cl_stop_recording(t);

	json_t *pods = it_lives(t->pod_records, LABEL_CLUSTER, "x");
	const json_t *x0 = life(pods, "x-0"), *x1 = life(pods, "x-1");
	double after = json_real_value(json_object_get(x1, "added_ms")) - json_real_value(json_object_get(x0, "added_ms"));
	printf("# x-1 replaced x-0 %.1f s after it was created\n", after / 1000);
	/* Grace 3 s + 4 s not Ready; the pod's start time has whole seconds (and is a little after its creation). */
	if (after < 5500)
		cl_fail_with_log(t, "x-0 was replaced %.0f ms after it was created, before 3 s grace + 4 s", after);
	assert_true(life_int(x0, "deleting_rv") > 0);
	char *msg = it_event_message(t->admin, t->ns, "MemberReplaced", "x");
	if (!msg || !strstr(msg, "x-0") || !strstr(msg, "unhealthyAfterSeconds"))
		fail_msg("MemberReplaced does not say x-0 was not Ready in time: %s", msg ? msg : "(none)");
	free(msg);
	json_decref(pods);
	cl_operator_stop(t);
}

/* ---- the operator restarted with its state wiped ---- */

struct next_is {
	struct cl_test *t;
	long long next;
};

/* The state is written back: the annotation is there and status.nextIdentity is next. */
static bool next_identity_is(void *ctx)
{
	struct next_is *n = ctx;
	json_t *stc = cl_get(n->t, "x");
	bool ok = it_annotation(stc, ANNOTATION_CLUSTER_STATE) && cl_int_at(stc, "status.nextIdentity") == n->next &&
		  cl_int_at(stc, "status.observedGeneration") == cl_int_at(stc, "metadata.generation");
	json_decref(stc);
	return ok;
}

/* The state annotation lists nothing released (the operator is done with every former member). */
static bool nothing_released(void *ctx)
{
	struct cl_test *t = ctx;
	json_t *stc = cl_get(t, "x");
	const char *text = it_annotation(stc, ANNOTATION_CLUSTER_STATE);
	json_t *st = text ? json_loads(text, 0, NULL) : NULL;
	bool ok = st && json_object_size(json_object_get(st, "released")) == 0;
	json_decref(st);
	json_decref(stc);
	return ok;
}

/*
 * x-1 fails (x-3 replaces it), then a scale-down to 2 removes x-3 (the
 * newest; its claim follows when_scaled). The operator is stopped, the
 * status and/or the state annotation wiped, and a new operator started:
 * after a scale-up and a failure the new members are x-4 and x-5, and no
 * pod name or claim was ever used twice.
 */
static void restart_with_state_wiped(struct cl_test *t, const char *prefix, bool wipe_status, bool drop_annotation,
				     const char *when_scaled)
{
	cl_namespace_new(t, prefix);
	cl_record(t);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 3, "data");
	cl_set(stc, "spec.persistentVolumeClaimRetentionPolicy.whenScaled", json_string(when_scaled));
	cl_create(t, stc);
	json_decref(stc);
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-1,x-2"));
	cl_fail_pod(t, "x-1");
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-2,x-3"));
	cl_patch(t, "x", "{\"spec\":{\"replicas\":2}}");
	json_decref(cl_wait_settled(t, "x", 2, "x-0,x-2"));
	if (!strcmp(when_scaled, "Delete"))
		cl_wait_claim_gone(t, "data-x-3"); /* nothing in the namespace shows x-3 was ever used */
	cl_wait_or_fail(t, nothing_released, t, "the operator did not finish with x-1 and x-3");
	struct next_is four = {t, 4};
	cl_wait_or_fail(t, next_identity_is, &four, "status.nextIdentity is not 4");
	int rebuilt_before = it_event_count(t->admin, t->ns, "StateRebuilt", "x");
	cl_operator_stop(t);

	if (wipe_status) {
		json_t *patch = it_json("[{\"op\":\"replace\",\"path\":\"/status\",\"value\":{}}]");
		struct kube_error err;
		if (kube_patch(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, "x", "status", KUBE_PATCH_JSON, patch, NULL, &err) < 0)
			fail_msg("wipe the status of x: %s", err.message);
		json_decref(patch);
	}
	if (drop_annotation)
		cl_patch(t, "x", "{\"metadata\":{\"annotations\":{\"%s\":null}}}", ANNOTATION_CLUSTER_STATE);
	stc = cl_get(t, "x");
	assert_true(cl_int_at(stc, "status.nextIdentity") == (wipe_status ? -1 : 4));
	assert_true(json_array_size(json_object_get(json_object_get(stc, "status"), "members")) == (wipe_status ? 0 : 2));
	assert_true(!it_annotation(stc, ANNOTATION_CLUSTER_STATE) == drop_annotation);
	json_decref(stc);

	cl_operator_start(t);
	cl_wait_or_fail(t, next_identity_is, &four, "after the restart, status.nextIdentity is not 4");
	json_decref(cl_wait_settled(t, "x", 2, "x-0,x-2"));
	cl_patch(t, "x", "{\"spec\":{\"replicas\":3}}");
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-2,x-4"));
	cl_fail_pod(t, "x-0");
	stc = cl_wait_settled(t, "x", 3, "x-2,x-4,x-5");
	cl_stop_recording(t);

	expect_each_name_used_once(t->pod_records, "x-0,x-1,x-2,x-3,x-4,x-5");
	/* No claim made twice either: each claim name had one object. */
	json_t *claims = it_lives(t->pvc_records, NULL, NULL), *seen = json_object();
	size_t i;
	json_t *l;
	json_array_foreach(claims, i, l) {
		const char *name = json_string_value(json_object_get(l, "name"));
		if (json_object_get(seen, name))
			fail_msg("claim %s was made twice", name);
		json_object_set_new(seen, name, json_true());
	}
	assert_int_equal(cl_int_at(stc, "status.nextIdentity"), 6);
	/* A rebuilt state is said so; a state read back as it was is not. */
	int rebuilt = it_event_count(t->admin, t->ns, "StateRebuilt", "x") - rebuilt_before;
	if (drop_annotation ? rebuilt == 0 : rebuilt != 0)
		fail_msg("%d StateRebuilt Events after the restart, the state annotation was %s", rebuilt,
			 drop_annotation ? "removed" : "kept");
	json_decref(seen);
	json_decref(claims);
	json_decref(stc);
	cl_operator_stop(t);
}

/* x-3 left no trace but the counter in the state annotation. */
static void test_restart_with_the_status_wiped_reuses_no_identity(void **state)
{
	restart_with_state_wiped(*state, "it-stc-wipe-status", true, false, "Delete");
}

/* x-3 left no trace but status.nextIdentity. */
static void test_restart_with_the_state_annotation_removed_reuses_no_identity(void **state)
{
	restart_with_state_wiped(*state, "it-stc-wipe-state", false, true, "Delete");
}

/* Both gone: the kept claim data-x-3 is what shows x-3 was used. */
static void test_restart_with_status_and_state_removed_rebuilds_from_the_claims(void **state)
{
	restart_with_state_wiped(*state, "it-stc-wipe-both", true, true, "Retain");
}

/* ---- kill -9 at each step, then a restart ---- */

static void crash_after(struct cl_test *t, const char *step)
{
	char *log = NULL;
	if (!daemon_run_operator_until_crash(step, CL_WAIT_MS, &log)) {
		cl_show_namespace(t->ns);
		fail_msg("the operator did not kill itself after %s; its log:\n%s", step, log);
	}
	printf("# kill -9 after %s\n", step);
}

/*
 * The operator killed right after each kind of step of a start and of a
 * replacement: every restart resumes, no identity is handed out twice and
 * no member is left without its pod.
 */
static void test_crash_after_each_step_reuses_no_identity(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-crash");
	cl_record(t);
	json_t *stc = cl_manifest("x", 3, "data");
	cl_create(t, stc);
	json_decref(stc);
	static const char *const start[] = {"RebuildState", "CreateRevision", "RecordRevision", "AddMembers",
					    "CreateClaim",  "CreatePod",      "CreatePod",      "UpdateStatus"};
	for (size_t i = 0; i < sizeof(start) / sizeof(start[0]); i++)
		crash_after(t, start[i]);
	cl_operator_start(t);
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-1,x-2"));
	it_wait_ready_and_bound(t->admin, t->ns, 3, 3, CL_WAIT_MS);
	cl_operator_stop(t);

	cl_fail_pod(t, "x-1");
	crash_after(t, "ReplaceMember");
	crash_after(t, "DeleteFormerMember");
	cl_operator_start(t);
	stc = cl_wait_settled(t, "x", 3, "x-0,x-2,x-3");
	it_wait_ready_and_bound(t->admin, t->ns, 3, 4, CL_WAIT_MS);
	cl_stop_recording(t);
	expect_each_name_used_once(t->pod_records, "x-0,x-1,x-2,x-3");
	assert_int_equal(cl_int_at(stc, "status.nextIdentity"), 4);
	cl_expect_member_pods(t, stc);
	json_decref(stc);
	cl_operator_stop(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cl_unit_test(test_failed_member_is_replaced_keeping_its_claims),
		cl_unit_test(test_failed_member_is_replaced_deleting_its_claims),
		cl_unit_test(test_members_of_a_lost_node_are_replaced),
		cl_unit_test(test_slow_starting_pod_is_not_killed),
		cl_unit_test(test_never_ready_pod_is_replaced_after_its_grace),
		cl_unit_test(test_restart_with_the_status_wiped_reuses_no_identity),
		cl_unit_test(test_restart_with_the_state_annotation_removed_reuses_no_identity),
		cl_unit_test(test_restart_with_status_and_state_removed_rebuilds_from_the_claims),
		cl_unit_test(test_crash_after_each_step_reuses_no_identity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
