/*
 * The test bed's ModifyVolume planner (tests/testbed/pvc_modify_plan.c):
 * what the operator will see on a claim whose volumeAttributesClassName it
 * changed, step by step, with the status fields the external-resizer
 * writes (modifyVolumeStatus, currentVolumeAttributesClassName, the
 * ModifyingVolume and ModifyVolumeError conditions).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <string.h>

#include "pvc_modify_plan.h"

#define NOW "2026-11-25T05:00:00Z"

/*
 * A Bound claim: spec class spec, current class current (each NULL =
 * absent), modifyVolumeStatus {status, target} when status is not NULL
 * (target may be NULL), and the conditions of types conds (NULL-ended,
 * may be NULL).
 */
static json_t *claim(const char *spec, const char *current, const char *status, const char *target,
		     const char *const *conds)
{
	json_t *pvc = json_pack("{s:{s:s, s:s}, s:{s:s}, s:{s:s}}", "metadata", "namespace", "db", "name",
				"data-db-0", "spec", "volumeName", "pv-1", "status", "phase", "Bound");
	json_t *sp = json_object_get(pvc, "spec"), *st = json_object_get(pvc, "status");
	if (spec)
		json_object_set_new(sp, "volumeAttributesClassName", json_string(spec));
	if (current)
		json_object_set_new(st, "currentVolumeAttributesClassName", json_string(current));
	if (status) {
		json_t *mvs = json_pack("{s:s}", "status", status);
		if (target)
			json_object_set_new(mvs, "targetVolumeAttributesClassName", json_string(target));
		json_object_set_new(st, "modifyVolumeStatus", mvs);
	}
	if (conds) {
		json_t *arr = json_array();
		for (; *conds; conds++)
			json_array_append_new(arr, json_pack("{s:s, s:s}", "type", *conds, "status", "True"));
		json_object_set_new(st, "conditions", arr);
	}
	return pvc;
}

/* A VolumeAttributesClass; fail (may be NULL) is the value of the fail parameter. */
static json_t *vac(const char *name, const char *fail)
{
	json_t *v = json_pack("{s:{s:s}, s:s, s:{s:s}}", "metadata", "name", name, "driverName", "testbed",
			      "parameters", "iops", "3000");
	if (fail)
		json_object_set_new(json_object_get(v, "parameters"), MODIFY_FAIL_PARAMETER, json_string(fail));
	return v;
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);
	return json_string_value(b ? json_object_get(v, b) : v);
}

/* The condition of type in the status patch, or NULL. */
static const json_t *condition(const json_t *status, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(status, "conditions"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")), type))
			return c;
	return NULL;
}

static void test_claim_at_its_class_needs_nothing(void **unused)
{
	(void)unused;
	json_t *fast = vac("fast", NULL);
	json_t *at = claim("fast", "fast", NULL, NULL, NULL);
	assert_false(modify_needed(at));
	assert_int_equal(modify_plan(at, fast, true), MODIFY_NONE);
	assert_null(modify_status(at, MODIFY_NONE, "fast", NOW));
	/* No class asked and none applied: "" and absent are the same. */
	json_t *none = claim("", NULL, NULL, NULL, NULL);
	assert_false(modify_needed(none));
	assert_null(modify_target_name(none));
	assert_int_equal(modify_plan(none, NULL, true), MODIFY_NONE);
	json_decref(at);
	json_decref(none);
	json_decref(fast);
}

static void test_changed_class_starts_in_progress_keeping_other_conditions(void **unused)
{
	(void)unused;
	const char *const conds[] = {"Resizing", NULL};
	json_t *pvc = claim("fast", "slow", NULL, NULL, conds);
	json_t *fast = vac("fast", NULL);
	assert_true(modify_needed(pvc));
	assert_string_equal(modify_target_name(pvc), "fast");
	assert_int_equal(modify_plan(pvc, fast, false), MODIFY_START);
	json_t *st = modify_status(pvc, MODIFY_START, "fast", NOW);
	assert_string_equal(str_at(st, "modifyVolumeStatus", "status"), "InProgress");
	assert_string_equal(str_at(st, "modifyVolumeStatus", "targetVolumeAttributesClassName"), "fast");
	assert_null(json_object_get(st, "currentVolumeAttributesClassName")); /* not before it is done */
	const json_t *c = condition(st, MODIFY_CONDITION_MODIFYING);
	assert_non_null(c);
	assert_string_equal(str_at(c, "status", NULL), "True");
	assert_non_null(strstr(str_at(c, "message", NULL), "\"fast\""));
	assert_non_null(condition(st, "Resizing")); /* the expansion's condition is not ours */
	json_decref(st);
	json_decref(pvc);
	json_decref(fast);
}

static void test_in_progress_waits_for_the_delay_then_finishes(void **unused)
{
	(void)unused;
	const char *const conds[] = {MODIFY_CONDITION_MODIFYING, NULL};
	json_t *pvc = claim("fast", "slow", "InProgress", "fast", conds);
	json_t *fast = vac("fast", NULL);
	assert_int_equal(modify_plan(pvc, fast, false), MODIFY_WAIT_DELAY);
	assert_null(modify_status(pvc, MODIFY_WAIT_DELAY, "fast", NOW));
	assert_int_equal(modify_plan(pvc, fast, true), MODIFY_FINISH);
	json_t *st = modify_status(pvc, MODIFY_FINISH, "fast", NOW);
	assert_string_equal(str_at(st, "currentVolumeAttributesClassName", NULL), "fast");
	/* null in a merge patch: modifyVolumeStatus and the emptied conditions are removed. */
	assert_true(json_is_null(json_object_get(st, "modifyVolumeStatus")));
	assert_true(json_is_null(json_object_get(st, "conditions")));
	json_decref(st);
	json_decref(pvc);
	json_decref(fast);
}

static void test_finish_clears_an_earlier_attempts_error(void **unused)
{
	(void)unused;
	const char *const conds[] = {MODIFY_CONDITION_MODIFYING, MODIFY_CONDITION_ERROR, "FileSystemResizePending",
				     NULL};
	json_t *pvc = claim("fast", NULL, "InProgress", "fast", conds);
	json_t *st = modify_status(pvc, MODIFY_FINISH, "fast", NOW);
	assert_null(condition(st, MODIFY_CONDITION_MODIFYING));
	assert_null(condition(st, MODIFY_CONDITION_ERROR));
	assert_non_null(condition(st, "FileSystemResizePending"));
	json_decref(st);
	json_decref(pvc);
}

static void test_class_asking_to_fail_ends_infeasible_and_stays(void **unused)
{
	(void)unused;
	json_t *bad = vac("bad", "true");
	json_t *started = claim("bad", "slow", "InProgress", "bad", NULL);
	assert_int_equal(modify_plan(started, bad, true), MODIFY_INFEASIBLE);
	json_t *st = modify_status(started, MODIFY_INFEASIBLE, "bad", NOW);
	assert_string_equal(str_at(st, "modifyVolumeStatus", "status"), "Infeasible");
	assert_string_equal(str_at(st, "modifyVolumeStatus", "targetVolumeAttributesClassName"), "bad");
	assert_null(json_object_get(st, "currentVolumeAttributesClassName")); /* the old class stays */
	const json_t *err = condition(st, MODIFY_CONDITION_ERROR);
	assert_non_null(err);
	assert_string_equal(str_at(err, "reason", NULL), "InvalidArgument");
	assert_non_null(condition(st, MODIFY_CONDITION_MODIFYING));
	json_decref(st);

	/* Once failed, nothing more for that class (no loop of writes). */
	const char *const conds[] = {MODIFY_CONDITION_MODIFYING, MODIFY_CONDITION_ERROR, NULL};
	json_t *failed = claim("bad", "slow", "Infeasible", "bad", conds);
	assert_true(modify_needed(failed));
	assert_int_equal(modify_plan(failed, bad, true), MODIFY_NONE);
	json_decref(failed);
	json_decref(started);
	json_decref(bad);
}

static void test_fail_parameter_must_be_true(void **unused)
{
	(void)unused;
	json_t *v = vac("fast", "false");
	json_t *pvc = claim("fast", "slow", "InProgress", "fast", NULL);
	assert_int_equal(modify_plan(pvc, v, true), MODIFY_FINISH);
	json_decref(pvc);
	json_decref(v);
}

static void test_new_class_after_a_failure_is_a_new_attempt(void **unused)
{
	(void)unused;
	const char *const conds[] = {MODIFY_CONDITION_MODIFYING, MODIFY_CONDITION_ERROR, NULL};
	json_t *fast = vac("fast", NULL);
	json_t *pvc = claim("fast", "slow", "Infeasible", "bad", conds);
	assert_string_equal(modify_target_name(pvc), "fast");
	assert_int_equal(modify_plan(pvc, fast, false), MODIFY_START);
	json_t *st = modify_status(pvc, MODIFY_START, "fast", NOW);
	assert_string_equal(str_at(st, "modifyVolumeStatus", "status"), "InProgress");
	assert_string_equal(str_at(st, "modifyVolumeStatus", "targetVolumeAttributesClassName"), "fast");
	/* As the external-resizer does: the old error stays until this attempt ends. */
	assert_non_null(condition(st, MODIFY_CONDITION_ERROR));
	json_decref(st);
	json_decref(pvc);

	/* Back to the current class after a failure: a full (no-op) modification clears the status. */
	json_t *slow = vac("slow", NULL);
	json_t *back = claim("slow", "slow", "Infeasible", "bad", conds);
	assert_true(modify_needed(back));
	assert_int_equal(modify_plan(back, slow, true), MODIFY_START);
	json_decref(back);
	json_decref(slow);
	json_decref(fast);
}

static void test_class_changed_mid_modification_restarts_for_it(void **unused)
{
	(void)unused;
	json_t *gold = vac("gold", NULL);
	json_t *pvc = claim("gold", "slow", "InProgress", "fast", NULL);
	assert_string_equal(modify_target_name(pvc), "gold");
	assert_int_equal(modify_plan(pvc, gold, true), MODIFY_START);
	json_decref(pvc);
	json_decref(gold);
}

static void test_missing_class_is_pending_once(void **unused)
{
	(void)unused;
	json_t *pvc = claim("nope", "slow", NULL, NULL, NULL);
	assert_int_equal(modify_plan(pvc, NULL, true), MODIFY_PENDING);
	json_t *st = modify_status(pvc, MODIFY_PENDING, "nope", NOW);
	assert_string_equal(str_at(st, "modifyVolumeStatus", "status"), "Pending");
	assert_null(json_object_get(st, "conditions")); /* Pending leaves the conditions alone */
	assert_null(json_object_get(st, "currentVolumeAttributesClassName"));
	json_decref(st);
	json_decref(pvc);

	json_t *pending = claim("nope", "slow", "Pending", NULL, NULL);
	assert_int_equal(modify_plan(pending, NULL, true), MODIFY_NONE);
	/* The class created: the modification starts. */
	json_t *now_there = vac("nope", NULL);
	assert_int_equal(modify_plan(pending, now_there, false), MODIFY_START);
	json_decref(now_there);
	json_decref(pending);
}

static void test_cleared_class_cancels_without_forgetting_the_result(void **unused)
{
	(void)unused;
	const char *const conds[] = {MODIFY_CONDITION_MODIFYING, MODIFY_CONDITION_ERROR, "Resizing", NULL};
	json_t *pvc = claim(NULL, NULL, "Infeasible", "bad", conds);
	assert_true(modify_needed(pvc));
	assert_null(modify_target_name(pvc));
	assert_int_equal(modify_plan(pvc, NULL, true), MODIFY_CANCEL);
	json_t *st = modify_status(pvc, MODIFY_CANCEL, "", NOW);
	assert_null(condition(st, MODIFY_CONDITION_MODIFYING));
	assert_non_null(condition(st, MODIFY_CONDITION_ERROR));
	assert_non_null(condition(st, "Resizing"));
	assert_null(json_object_get(st, "modifyVolumeStatus")); /* the last result stays as it is */
	json_decref(st);
	json_decref(pvc);

	/* Cancelled already: nothing more. */
	const char *const after[] = {MODIFY_CONDITION_ERROR, NULL};
	json_t *done = claim(NULL, NULL, "Infeasible", "bad", after);
	assert_int_equal(modify_plan(done, NULL, true), MODIFY_NONE);
	json_decref(done);
}

static void test_cleared_class_in_progress_is_finished(void **unused)
{
	(void)unused;
	json_t *fast = vac("fast", NULL);
	json_t *pvc = claim(NULL, NULL, "InProgress", "fast", NULL);
	assert_string_equal(modify_target_name(pvc), "fast");
	assert_int_equal(modify_plan(pvc, fast, true), MODIFY_FINISH);
	json_decref(pvc);
	json_decref(fast);
}

/* A CSI PV for claim uid ref_uid, provisioned (annotation) or not, with class cls (NULL = none). */
static json_t *pv(const char *ref_uid, bool provisioned, const char *cls)
{
	json_t *v = json_pack("{s:{s:s, s:{}}, s:{s:{s:s, s:s, s:s}, s:{s:s, s:s}}}", "metadata", "name", "pvc-1",
			      "annotations", "spec", "claimRef", "namespace", "db", "name", "data-db-3", "uid", ref_uid,
			      "csi", "driver", "hostpath.csi.k8s.io", "volumeHandle", "v1");
	if (provisioned)
		json_object_set_new(json_object_get(json_object_get(v, "metadata"), "annotations"),
				    "pv.kubernetes.io/provisioned-by", json_string("kubernetes.io/host-path"));
	if (cls)
		json_object_set_new(json_object_get(v, "spec"), "volumeAttributesClassName", json_string(cls));
	return v;
}

/* A claim not bound yet (volume NULL) or bound to volume, asking for class cls (NULL = none). */
static json_t *new_claim(const char *cls, const char *volume)
{
	json_t *c = json_pack("{s:{s:s, s:s, s:s}, s:{}, s:{s:s}}", "metadata", "namespace", "db", "name",
			      "data-db-3", "uid", "u3", "spec", "status", "phase", "Pending");
	if (cls)
		json_object_set_new(json_object_get(c, "spec"), "volumeAttributesClassName", json_string(cls));
	if (volume)
		json_object_set_new(json_object_get(c, "spec"), "volumeName", json_string(volume));
	return c;
}

static void test_provisioned_pv_gets_its_claims_class(void **unused)
{
	(void)unused;
	json_t *claim_fast = new_claim("fast", NULL);
	json_t *v = pv("u3", true, NULL);
	assert_string_equal(modify_provisioned_class(v, claim_fast), "fast");
	json_decref(v);
	json_decref(claim_fast);
}

static void test_provisioned_class_only_when_all_hold(void **unused)
{
	(void)unused;
	json_t *fast = new_claim("fast", NULL), *none = new_claim(NULL, NULL), *bound = new_claim("fast", "pvc-1");
	json_t *ok = pv("u3", true, NULL), *other = pv("u9", true, NULL), *static_pv = pv("u3", false, NULL);
	json_t *chosen = pv("u3", true, "gold"), *empty = pv("u3", true, ""), *host_path = pv("u3", true, NULL);
	json_object_del(json_object_get(host_path, "spec"), "csi");
	assert_null(modify_provisioned_class(ok, none));      /* the claim asks for no class */
	assert_null(modify_provisioned_class(ok, bound));     /* bound already: the modify path's */
	assert_null(modify_provisioned_class(other, fast));   /* provisioned for another claim */
	assert_null(modify_provisioned_class(static_pv, fast)); /* an administrator's PV */
	assert_null(modify_provisioned_class(chosen, fast));  /* a class someone chose stays */
	assert_string_equal(modify_provisioned_class(empty, fast), "fast"); /* "" is no class */
	assert_null(modify_provisioned_class(host_path, fast)); /* the API takes the class on CSI volumes only */
	json_t *all[] = {fast, none, bound, ok, other, static_pv, chosen, empty, host_path};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		json_decref(all[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_at_its_class_needs_nothing),
		cmocka_unit_test(test_changed_class_starts_in_progress_keeping_other_conditions),
		cmocka_unit_test(test_in_progress_waits_for_the_delay_then_finishes),
		cmocka_unit_test(test_finish_clears_an_earlier_attempts_error),
		cmocka_unit_test(test_class_asking_to_fail_ends_infeasible_and_stays),
		cmocka_unit_test(test_fail_parameter_must_be_true),
		cmocka_unit_test(test_new_class_after_a_failure_is_a_new_attempt),
		cmocka_unit_test(test_class_changed_mid_modification_restarts_for_it),
		cmocka_unit_test(test_missing_class_is_pending_once),
		cmocka_unit_test(test_cleared_class_cancels_without_forgetting_the_result),
		cmocka_unit_test(test_cleared_class_in_progress_is_finished),
		cmocka_unit_test(test_provisioned_pv_gets_its_claims_class),
		cmocka_unit_test(test_provisioned_class_only_when_all_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
