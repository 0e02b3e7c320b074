/*
 * Scale-down cleanup when things go wrong, on the test bed: a cleanup pod
 * that fails (retries with growing backoff, then the claims are kept and
 * the status says why), one past its timeout, the StatefulSet deleted
 * (every ordinal cleaned before it goes; an orphaning delete cleans
 * nothing), and kill -9 of the operator between the steps of a cleanup
 * (no second run after a success, every failure counted once, no claim
 * lost, no pod left). The happy paths are in it_scaledown.c; the steps
 * both share in support/scaledown_steps.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "scaledown_steps.h"
#include "client/kube_object.h"

#define SET "web"
#define MESSAGE "shard still owned"

/* StatefulSet "web", OrderedReady, whose cleanup pods kwok ends with outcome after delay, saying MESSAGE. */
static json_t *cleaned_statefulset(int replicas, const char *claims, const char *outcome, const char *delay)
{
	return sd_cleaned_statefulset(SET, replicas, "OrderedReady", claims, outcome, delay, MESSAGE);
}

/* What the conditions below wait for. */
struct want {
	struct sd_test *t;
	int events;   /* CleanupFailed Events expected */
	int attempts; /* cleanup pods expected (recorded by t->pods) */
};

static bool has_status(const struct sd_test *t)
{
	char *status = sd_status(t, SET);
	bool has = status != NULL;
	free(status);
	return has;
}

/* Given up: no cleanup pod, the failures reported (Events and status). */
static bool gave_up(void *ctx)
{
	struct want *w = ctx;
	if (sd_cleanup_pods(w->t, SET) || it_event_count(w->t->admin, w->t->ns, "CleanupFailed", SET) < w->events)
		return false;
	return has_status(w->t);
}

/* No record shows the claim being deleted, ever (a claim deleted and re-created would pass a UID check too late). */
static void expect_never_deleted(const json_t *pvc_records, const char *claim)
{
	json_t *lives = it_lives(pvc_records, NULL, NULL);
	size_t i;
	json_t *l;
	json_array_foreach(lives, i, l) if (sd_str_is(json_string_value(json_object_get(l, "name")), claim) &&
					    json_integer_value(json_object_get(l, "deleting_rv")))
		fail_msg("claim %s was deleted", claim);
	json_decref(lives);
}

static void expect_warning_mentions(const struct sd_test *t, const char *reason, const char *needle)
{
	char *selector = xasprintf("reason=%s,involvedObject.name=" SET, reason);
	json_t *ev = it_events(t->admin, t->ns, selector);
	if (!json_array_size(ev))
		fail_msg("no %s Event", reason);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) {
		const char *m = kube_obj_str(e, "message");
		if (!sd_str_is(kube_obj_str(e, "type"), "Warning") || !m || !strcasestr(m, needle))
			fail_msg("%s Event (%s) does not say \"%s\": %s", reason, kube_obj_str(e, "type"), needle,
				 m ? m : "(none)");
	}
	json_decref(ev);
	free(selector);
}

static void expect_status_mentions(const struct sd_test *t, const char *needle)
{
	char *status = sd_status(t, SET);
	if (!status || !strcasestr(status, needle))
		fail_msg("%s does not say \"%s\": %s", ANNOTATION_SCALEDOWN_STATUS, needle, status ? status : "(none)");
	free(status);
}

/* An RFC 3339 time (second precision, as creationTimestamp) in seconds since the epoch. */
static long long seconds_of(const char *rfc3339)
{
	struct tm tm = {0};
	if (!rfc3339 || !strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ", &tm))
		fail_msg("not an RFC 3339 time: %s", rfc3339 ? rfc3339 : "(none)");
	return (long long)timegm(&tm);
}

static const char *first_annotation(const json_t *life, const char *key)
{
	return it_annotation(json_object_get(life, "first"), key);
}

/* ---- failures and timeouts ---- */

/*
 * Creates sts (2 pods and claims), starts the operator with pods and
 * claims recorded, scales to 1 and waits up to timeout_ms for the operator
 * to give up after failures CleanupFailed Events (failing the test with
 * why_not), then settle_ms more for an attempt that should not come.
 * Returns the lives of the cleanup pods (new array), asserting there were
 * failures of them.
 */
static json_t *scale_to_one_and_give_up(struct sd_test *t, const char *prefix, json_t *sts, int failures,
					long timeout_ms, long settle_ms, const char *why_not)
{
	sd_begin_scaled(t, prefix, sts, 2, 2, 1);
	struct want w = {.t = t, .events = failures};
	if (!it_wait_every(gave_up, &w, timeout_ms, SD_POLL_MS))
		sd_fail_with_log(t, "%s", why_not);
	it_sleep_ms(settle_ms);
	sd_stop_recording(t);
	return sd_cleanup_lives(t, SET, (size_t)failures);
}

static void test_failed_cleanup_retries_with_backoff_then_keeps_the_claim(void **state)
{
	struct sd_test *t = *state;
	json_t *sts = cleaned_statefulset(2, "data", "fail", NULL);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "3");
	/* 5 s + 10 s of backoff between the three attempts; a fourth would come after 20 s of backoff. */
	json_t *attempts = scale_to_one_and_give_up(t, "it-sd-fail", sts, 3, SD_WAIT_MS + 15000,
						    4 * SCALEDOWN_BACKOFF_BASE_MS + 2000,
						    "the cleanup did not fail 3 times and give up");

	long long created[3];
	for (size_t k = 0; k < 3; k++) {
		const json_t *life = json_array_get(attempts, k);
		char want[8];
		snprintf(want, sizeof(want), "%zu", k + 1);
		assert_true(sd_str_is(first_annotation(life, ANNOTATION_CLEANUP_ATTEMPT), want));
		assert_string_equal(json_string_value(json_object_get(life, "name")), "web-1");
		/* Each attempt failed, and only then was its pod deleted. */
		long long failed = it_first_rv_where(t->pod_records, json_string_value(json_object_get(life, "uid")),
						     "status.phase", "Failed");
		assert_true(failed > 0);
		assert_true(json_integer_value(json_object_get(life, "deleting_rv")) > failed);
		created[k] = seconds_of(kube_obj_str(json_object_get(life, "first"), "metadata.creationTimestamp"));
	}
	long long gap1 = created[1] - created[0], gap2 = created[2] - created[1];
	printf("# attempts %lld s and %lld s apart\n", gap1, gap2);
	assert_true(gap1 >= SCALEDOWN_BACKOFF_BASE_MS / 1000);
	assert_true(gap2 >= 2 * SCALEDOWN_BACKOFF_BASE_MS / 1000);
	assert_true(gap2 > gap1);

	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	sd_expect_claims_kept(t, kept);
	expect_never_deleted(t->pvc_records, "data-web-1");
	expect_warning_mentions(t, "CleanupFailed", MESSAGE);
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", SET), 0);
	expect_status_mentions(t, MESSAGE);

	sd_operator_stop(t);
	json_decref(attempts);
}

/* Past scaledown-timeout a running cleanup pod counts as failed (it would have succeeded after 10 min). */
static void test_cleanup_past_its_timeout_fails(void **state)
{
	struct sd_test *t = *state;
	json_t *sts = cleaned_statefulset(2, "data", "succeed", "10m");
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TIMEOUT, "3s");
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "1");
	/* Then wait for when a wrong retry would come. */
	json_t *attempts = scale_to_one_and_give_up(t, "it-sd-timeout", sts, 1, SD_WAIT_MS,
						    SCALEDOWN_BACKOFF_BASE_MS + 2000,
						    "the cleanup pod was not stopped at its timeout");

	const json_t *life = json_array_get(attempts, 0);
	/* It ran until the timeout (3 s from a creationTimestamp that has whole seconds only). */
	double ran_ms = json_real_value(json_object_get(life, "deleting_ms")) -
			json_real_value(json_object_get(life, "added_ms"));
	printf("# the cleanup pod ran %.1f s of its 3 s timeout\n", ran_ms / 1000);
	assert_true(ran_ms >= 2000);
	assert_true(json_integer_value(json_object_get(life, "gone_rv")) > 0);
	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	sd_expect_claims_kept(t, kept);
	expect_never_deleted(t->pvc_records, "data-web-1");
	char *ev = it_event_message(t->admin, t->ns, "CleanupFailed", SET);
	char *status = sd_status(t, SET);
	printf("# CleanupFailed: %s\n# status: %s\n", ev ? ev : "(none)", status ? status : "(none)");
	if (!ev || !(strcasestr(ev, "timeout") || strcasestr(ev, "timed out")))
		fail_msg("CleanupFailed does not say it timed out: %s", ev ? ev : "(none)");
	if (!status || !(strcasestr(status, "timeout") || strcasestr(status, "timed out")))
		fail_msg("%s does not say it timed out: %s", ANNOTATION_SCALEDOWN_STATUS, status ? status : "(none)");
	free(status);
	free(ev);

	sd_operator_stop(t);
	json_decref(attempts);
}

/* ---- deleting the StatefulSet ---- */

/* Condition (struct sd_test): the StatefulSet is gone. */
static bool statefulset_gone(void *ctx)
{
	struct sd_test *t = ctx;
	json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	json_decref(sts);
	return sts == NULL;
}

/* Deletes the StatefulSet with propagation and waits until it is gone. */
static void delete_statefulset(struct sd_test *t, const char *propagation)
{
	struct kube_delete_options o = {.propagation_policy = propagation};
	struct kube_error err;
	if (kube_delete(t->admin, &KUBE_STATEFULSETS, t->ns, SET, &o, &err) < 0)
		fail_msg("delete StatefulSet " SET " (%s): %s", propagation, err.message);
	if (!it_wait_every(statefulset_gone, t, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "the StatefulSet was not deleted");
}

/* Condition (struct sd_test): no pod is left in the namespace. */
static bool no_pods_left(void *ctx)
{
	struct sd_test *t = ctx;
	json_t *pods = it_list(t->admin, &KUBE_PODS, t->ns, NULL);
	bool none = json_array_size(pods) == 0;
	json_decref(pods);
	return none;
}

/*
 * The finalizer holds the StatefulSet until every ordinal is cleaned, one at
 * a time, highest first, whatever the propagation: Background (kubectl's
 * default) leaves the set's pods to the operator; Foreground has the garbage
 * collector delete every dependent first, which must not take a cleanup pod.
 */
static void deleting_the_statefulset_cleans_every_ordinal(struct sd_test *t, const char *ns_prefix,
							  const char *propagation)
{
	sd_begin(t, ns_prefix, cleaned_statefulset(3, "data", "succeed", "1s"), 3, 3);
	sd_record(t, true);
	struct it_recorder *sets = it_recorder_start(&KUBE_STATEFULSETS, t->ns);
	sd_operator_start(t, SET);

	delete_statefulset(t, propagation);
	if (!it_wait_every(no_pods_left, t, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "pods left after the StatefulSet went");
	sd_stop_recording(t);
	json_t *set_records = it_recorder_stop(sets);

	/* Every ordinal, one at a time, highest first, each claim deleted after its pod Succeeded. */
	json_t *cleanups = sd_cleanup_lives(t, SET, 3);
	assert_int_equal(it_most_alive(t->pod_records, LABEL_CLEANUP_FOR, SET), 1);
	/* The StatefulSet went last: no cleanup pod was left to the garbage collector. */
	json_t *set_lives = it_lives(set_records, NULL, NULL);
	long long set_gone = json_integer_value(json_object_get(it_life_named(set_lives, SET), "gone_rv"));
	assert_true(set_gone > 0);
	json_t *claims = it_lives(t->pvc_records, NULL, NULL);
	for (int k = 0; k < 3; k++) {
		const json_t *life = json_array_get(cleanups, (size_t)k);
		char pod[16];
		snprintf(pod, sizeof(pod), SET "-%d", 2 - k);
		char *claim = sd_claim_name("data", SET, 2 - k);
		assert_string_equal(json_string_value(json_object_get(life, "name")), pod);
		long long succeeded = it_first_rv_where(t->pod_records, json_string_value(json_object_get(life, "uid")),
							"status.phase", "Succeeded");
		const json_t *cl = it_life_named(claims, claim);
		assert_non_null(cl);
		assert_true(succeeded > 0);
		assert_true(json_integer_value(json_object_get(cl, "deleting_rv")) > succeeded);
		long long pod_deleted = json_integer_value(json_object_get(life, "deleting_rv"));
		if (!pod_deleted || pod_deleted > set_gone)
			fail_msg("cleanup pod %s was left when the StatefulSet went", pod);
		free(claim);
	}
	static const char *const all[] = {"data-web-0", "data-web-1", "data-web-2", NULL};
	for (const char *const *c = all; *c; c++)
		assert_true(sd_claim_gone_or_deleting(t, *c));
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", SET), 3);
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupFailed", SET), 0);

	sd_operator_stop(t);
	json_decref(claims);
	json_decref(set_lives);
	json_decref(cleanups);
	json_decref(set_records);
}

static void test_deleting_the_statefulset_cleans_every_ordinal(void **state)
{
	deleting_the_statefulset_cleans_every_ordinal(*state, "it-sd-delete", "Background");
}

static void test_foreground_deletion_cleans_every_ordinal(void **state)
{
	deleting_the_statefulset_cleans_every_ordinal(*state, "it-sd-delfg", "Foreground");
}

/* --cascade=orphan keeps pods and claims: nothing to clean, the finalizer simply goes. */
static void test_orphan_delete_cleans_nothing(void **state)
{
	struct sd_test *t = *state;
	sd_begin(t, "it-sd-orphan", cleaned_statefulset(2, "data", "succeed", NULL), 2, 2);
	sd_record(t, false);
	sd_operator_start(t, SET);

	delete_statefulset(t, "Orphan");
	it_sleep_ms(3000); /* for a cleanup pod that should not exist to show up */
	sd_stop_recording(t);

	json_t *cleanups = it_lives(t->pod_records, LABEL_CLEANUP_FOR, NULL);
	assert_int_equal(json_array_size(cleanups), 0);
	for (int k = 0; k < 2; k++) {
		char name[16];
		snprintf(name, sizeof(name), SET "-%d", k);
		json_t *pod = it_get(t->admin, &KUBE_PODS, t->ns, name);
		if (!pod || kube_obj_str(pod, "metadata.deletionTimestamp"))
			fail_msg("pod %s was not kept", name);
		json_decref(pod);
	}
	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	sd_expect_claims_kept(t, kept);

	sd_operator_stop(t);
	json_decref(cleanups);
}

/* ---- kill -9 between the steps of a cleanup ---- */

/*
 * Creates sts (2 pods, claims claims), scales it 2 -> 1 with no operator
 * running (the claim set of ordinal 1 waits, orphaned), then records pods
 * and claims while an operator crashes after each of the 3 steps in turn,
 * and starts one that does not crash.
 */
static void scale_down_and_crash(struct sd_test *t, const char *prefix, json_t *sts, int claims,
				 const char *const steps[3])
{
	sd_begin(t, prefix, sts, 2, claims);
	sd_scale(t, SET, 1);
	struct sd_named web1 = {t, SET "-1"};
	if (!it_wait_every(sd_pod_gone, &web1, SD_WAIT_MS, SD_POLL_MS))
		fail_msg("the StatefulSet did not remove its pod " SET "-1");
	sd_record(t, true);

	for (size_t k = 0; k < 3; k++)
		sd_operator_run_until_crash(t, steps[k]);
	sd_operator_start(t, NULL);
}

/*
 * Two claims, so that the crash after the first DeleteClaim leaves one to
 * delete. Each ordinal's cleanup runs exactly once: one cleanup pod UID
 * ever, across four processes.
 */
static void test_crash_during_successful_cleanup_runs_it_once(void **state)
{
	static const char *const steps[3] = {"CreateCleanupPod", "DeleteClaim", "DeleteCleanupPod"};
	struct sd_test *t = *state;
	scale_down_and_crash(t, "it-sd-crashok", cleaned_statefulset(2, "data,logs", "succeed", "2s"), 4, steps);
	static const char *const cleaned_claims[] = {"data-web-1", "logs-web-1", NULL};
	sd_wait_cleanup_over(t, SET, cleaned_claims, 0);
	it_sleep_ms(2000); /* for a wrong second run to show */
	sd_stop_recording(t);

	json_t *cleanups = sd_cleanup_lives(t, SET, 1);
	long long succeeded = it_first_rv_where(
		t->pod_records, json_string_value(json_object_get(json_array_get(cleanups, 0), "uid")),
		"status.phase", "Succeeded");
	assert_true(succeeded > 0);
	json_t *claims = it_lives(t->pvc_records, NULL, NULL);
	for (const char *const *c = cleaned_claims; *c; c++) {
		const json_t *cl = it_life_named(claims, *c);
		assert_non_null(cl);
		assert_true(json_integer_value(json_object_get(cl, "deleting_rv")) > succeeded);
	}
	static const char *const kept[] = {"data-web-0", "logs-web-0", NULL};
	sd_expect_claims_kept(t, kept);

	sd_operator_stop(t);
	json_decref(claims);
	json_decref(cleanups);
}

/* All the attempts were made (recorded), none is left running, and the status reports the outcome. */
static bool attempts_over(void *ctx)
{
	struct want *w = ctx;
	json_t *records = it_recorder_records(w->t->pods);
	json_t *lives = it_lives(records, LABEL_CLEANUP_FOR, SET);
	int made = (int)json_array_size(lives);
	json_decref(lives);
	json_decref(records);
	if (made < w->attempts || sd_cleanup_pods(w->t, SET))
		return false;
	return has_status(w->t);
}

/*
 * max-attempts 2, crashes around the first failure: counted once, so
 * exactly one more attempt follows, then the claim is kept.
 */
static void test_crash_during_failing_cleanup_counts_each_failure_once(void **state)
{
	static const char *const steps[3] = {"CreateCleanupPod", "RecordFailure", "DeleteCleanupPod"};
	struct sd_test *t = *state;
	json_t *sts = cleaned_statefulset(2, "data", "fail", NULL);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "2");
	scale_down_and_crash(t, "it-sd-crashfail", sts, 2, steps);
	struct want w = {.t = t, .attempts = 2};
	/* The second attempt comes 5 s after the first failure, then the operator gives up. */
	if (!it_wait_every(attempts_over, &w, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "no second attempt ending in giving up");
	it_sleep_ms(2 * SCALEDOWN_BACKOFF_BASE_MS + 2000); /* when a wrong third attempt would come */
	sd_stop_recording(t);

	json_t *attempts = sd_cleanup_lives(t, SET, 2);
	assert_true(sd_str_is(first_annotation(json_array_get(attempts, 0), ANNOTATION_CLEANUP_ATTEMPT), "1"));
	assert_true(sd_str_is(first_annotation(json_array_get(attempts, 1), ANNOTATION_CLEANUP_ATTEMPT), "2"));
	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	sd_expect_claims_kept(t, kept);
	expect_never_deleted(t->pvc_records, "data-web-1");
	assert_int_equal(sd_cleanup_pods(t, SET), 0);
	expect_status_mentions(t, MESSAGE);

	sd_operator_stop(t);
	json_decref(attempts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		sd_unit_test(test_failed_cleanup_retries_with_backoff_then_keeps_the_claim),
		sd_unit_test(test_cleanup_past_its_timeout_fails),
		sd_unit_test(test_deleting_the_statefulset_cleans_every_ordinal),
		sd_unit_test(test_foreground_deletion_cleans_every_ordinal),
		sd_unit_test(test_orphan_delete_cleans_nothing),
		sd_unit_test(test_crash_during_successful_cleanup_runs_it_once),
		sd_unit_test(test_crash_during_failing_cleanup_counts_each_failure_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
