/*
 * Scale-down cleanup on the test bed (SPEC section "scaledown"; kwok ends
 * cleanup pods as their testbed annotations say): OrderedReady one ordinal
 * at a time, highest first, each claim deleted only after its cleanup pod
 * Succeeded; Parallel bounded by scaledown-parallelism; scaling back up
 * while a cleanup runs; refusals; the seed example with the legacy key.
 * Failures, timeouts, StatefulSet deletion and crashes: it_scaledown_faults.c.
 * The steps both share: support/scaledown_steps.h.
 *
 * Order and concurrency are judged on watch records (support/itest.h
 * it_recorder): every change the API server made, ordered by
 * resourceVersion, so nothing falls between two samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "scaledown_steps.h"
#include "client/kube_object.h"

#define SET "web"

/* ---- what a cleanup pod and its claims must look like ---- */

/* The claim the pod mounts as volume (NULL when none). Borrowed. */
static const char *volume_claim(const json_t *pod, const char *volume)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
		if (sd_str_is(json_string_value(json_object_get(v, "name")), volume))
			return kube_obj_str(v, "persistentVolumeClaim.claimName");
	return NULL;
}

static bool owned_by_statefulset(const json_t *pod, const char *set, bool controller)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref)
		if (sd_str_is(json_string_value(json_object_get(ref, "kind")), "StatefulSet") &&
		    sd_str_is(json_string_value(json_object_get(ref, "name")), set) &&
		    (!controller || json_is_true(json_object_get(ref, "controller"))))
			return true;
	return false;
}

/*
 * What a user's cleanup pod for set's ordinal must look like: its name, the
 * template's label, an owner reference to the StatefulSet, the bookkeeping
 * annotations, and each of the ordinal's claims (templates in claims,
 * comma-separated) mounted under the template name, by UID as they were
 * before.
 */
static void expect_cleanup_pod(const json_t *life, const char *set, int ordinal, const char *claims,
			       const json_t *uids_before)
{
	const json_t *pod = json_object_get(life, "first");
	char want[64], app[64];
	snprintf(want, sizeof(want), "%s-%d", set, ordinal);
	snprintf(app, sizeof(app), "%s-cleanup", set);
	assert_string_equal(kube_obj_str(pod, "metadata.name"), want);
	assert_true(sd_str_is(it_label(pod, "app"), app));
	assert_true(owned_by_statefulset(pod, set, false));
	snprintf(want, sizeof(want), "%d", ordinal);
	assert_true(sd_str_is(it_annotation(pod, ANNOTATION_CLEANUP_ORDINAL), want));
	/* 1, or 2 when kwok took the first one (see the Parallel test). */
	const char *attempt = it_annotation(pod, ANNOTATION_CLEANUP_ATTEMPT);
	assert_true(attempt && atoi(attempt) >= 1 && atoi(attempt) <= 2);
	const char *recorded = it_annotation(pod, ANNOTATION_CLEANUP_CLAIMS);
	json_t *mounted = recorded ? json_loads(recorded, 0, NULL) : NULL;
	if (!json_is_object(mounted))
		fail_msg("%s: annotation %s is not a JSON object: %s", kube_obj_str(pod, "metadata.name"),
			 ANNOTATION_CLEANUP_CLAIMS, recorded ? recorded : "(none)");
	char *copy = xstrdup(claims), *save = NULL;
	for (char *tmpl = strtok_r(copy, ",", &save); tmpl; tmpl = strtok_r(NULL, ",", &save)) {
		char *claim = sd_claim_name(tmpl, set, ordinal);
		if (!sd_str_is(volume_claim(pod, tmpl), claim))
			fail_msg("%s: volume %s mounts %s, want %s", kube_obj_str(pod, "metadata.name"), tmpl,
				 volume_claim(pod, tmpl) ? volume_claim(pod, tmpl) : "nothing", claim);
		const char *uid = json_string_value(json_object_get(uids_before, claim));
		if (!sd_str_is(json_string_value(json_object_get(mounted, claim)), uid))
			fail_msg("%s: %s does not name %s with UID %s: %s", kube_obj_str(pod, "metadata.name"),
				 ANNOTATION_CLEANUP_CLAIMS, claim, uid, recorded);
		free(claim);
	}
	free(copy);
	json_decref(mounted);
}

/*
 * Each claim of the cleanup pod's ordinal began to be deleted only after
 * the API server recorded the pod Succeeded (in t's records).
 */
static void expect_claims_deleted_after_success(const struct sd_test *t, const json_t *life, const char *set,
						int ordinal, const char *claims)
{
	const char *uid = json_string_value(json_object_get(life, "uid"));
	long long succeeded = it_first_rv_where(t->pod_records, uid, "status.phase", "Succeeded");
	if (!succeeded)
		fail_msg("cleanup pod %s-%d was never Succeeded", set, ordinal);
	json_t *claim_lives = it_lives(t->pvc_records, NULL, NULL);
	char *copy = xstrdup(claims), *save = NULL;
	for (char *tmpl = strtok_r(copy, ",", &save); tmpl; tmpl = strtok_r(NULL, ",", &save)) {
		char *claim = sd_claim_name(tmpl, set, ordinal);
		const json_t *cl = it_life_named(claim_lives, claim);
		long long deleted = cl ? json_integer_value(json_object_get(cl, "deleting_rv")) : 0;
		if (!deleted)
			fail_msg("claim %s was never deleted", claim);
		if (deleted < succeeded)
			fail_msg("claim %s was deleted (rv %lld) before its cleanup pod Succeeded (rv %lld)", claim,
				 deleted, succeeded);
		free(claim);
	}
	free(copy);
	json_decref(claim_lives);
}

static const char *life_name(const json_t *lives, size_t i)
{
	return json_string_value(json_object_get(json_array_get(lives, i), "name"));
}

/* ---- scale-down with OrderedReady and Parallel ---- */

/*
 * Creates sts (pods Ready, claims Bound), starts the operator with pods
 * and claims recorded, scales to 1 and waits until the claims in cleaned
 * are cleaned with succeeded CleanupSucceeded Events. Returns the lives of
 * the cleanup pods (new array), asserting there were succeeded of them.
 */
static json_t *scale_to_one_and_clean(struct sd_test *t, const char *prefix, json_t *sts, int pods, int claims,
				      const char *const *cleaned, int succeeded)
{
	sd_begin_scaled(t, prefix, sts, pods, claims, 1);
	sd_wait_cleanup_over(t, SET, cleaned, succeeded);
	sd_stop_recording(t);
	return sd_cleanup_lives(t, SET, (size_t)succeeded);
}

static void test_ordered_cleans_one_ordinal_at_a_time_highest_first(void **state)
{
	struct sd_test *t = *state;
	json_t *sts = sd_cleaned_statefulset(SET, 3, "OrderedReady", "data,logs", "succeed", "2s", NULL);
	static const char *const cleaned[] = {"data-web-1", "logs-web-1", "data-web-2", "logs-web-2", NULL};
	json_t *cleanups = scale_to_one_and_clean(t, "it-sd-ordered", sts, 3, 6, cleaned, 2);

	assert_string_equal(life_name(cleanups, 0), "web-2");
	assert_string_equal(life_name(cleanups, 1), "web-1");
	assert_int_equal(it_most_alive(t->pod_records, LABEL_CLEANUP_FOR, SET), 1);
	for (int k = 0; k < 2; k++) {
		const json_t *life = json_array_get(cleanups, (size_t)k);
		expect_cleanup_pod(life, SET, 2 - k, "data,logs", t->uids);
		expect_claims_deleted_after_success(t, life, SET, 2 - k, "data,logs");
	}
	static const char *const kept[] = {"data-web-0", "logs-web-0", NULL};
	sd_expect_claims_kept(t, kept);
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", SET), 2);
	json_t *now = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	assert_true(it_has_finalizer(now, FINALIZER_SCALEDOWN));
	json_decref(now);
	printf("# OrderedReady 3 -> 1: %zu pod and %zu claim changes recorded\n", json_array_size(t->pod_records),
	       json_array_size(t->pvc_records));

	sd_operator_stop(t);
	json_decref(cleanups);
}

/* spec.ordinals.start = 5: the set is web-5, web-6, web-7; scaled to 1, ordinals 7 then 6 are cleaned, 5 kept. */
static void test_ordinals_start_is_respected(void **state)
{
	struct sd_test *t = *state;
	json_t *sts = sd_cleaned_statefulset(SET, 3, "OrderedReady", "data", "succeed", "1s", NULL);
	json_object_set_new(json_object_get(sts, "spec"), "ordinals", json_pack("{s:i}", "start", 5));
	static const char *const cleaned[] = {"data-web-6", "data-web-7", NULL};
	json_t *cleanups = scale_to_one_and_clean(t, "it-sd-start", sts, 3, 3, cleaned, 2);

	assert_string_equal(life_name(cleanups, 0), "web-7");
	assert_string_equal(life_name(cleanups, 1), "web-6");
	for (int k = 0; k < 2; k++) {
		const json_t *life = json_array_get(cleanups, (size_t)k);
		expect_cleanup_pod(life, SET, 7 - k, "data", t->uids);
		expect_claims_deleted_after_success(t, life, SET, 7 - k, "data");
	}
	static const char *const kept[] = {"data-web-5", NULL};
	sd_expect_claims_kept(t, kept);
	assert_null(it_get(t->admin, &KUBE_PODS, t->ns, "web-0"));

	sd_operator_stop(t);
	json_decref(cleanups);
}

static void test_parallel_is_bounded_by_parallelism(void **state)
{
	struct sd_test *t = *state;
	json_t *sts = sd_cleaned_statefulset(SET, 4, "Parallel", "data", "succeed", "3s", NULL);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_PARALLELISM, "2");
	static const char *const cleaned[] = {"data-web-1", "data-web-2", "data-web-3", NULL};
	sd_begin_scaled(t, "it-sd-parallel", sts, 4, 4, 1);
	sd_wait_cleanup_over(t, SET, cleaned, 3);
	sd_stop_recording(t);
	/*
	 * kwok ends a graceful deletion with a DELETE by name and no UID
	 * precondition: when the operator creates the cleanup pod within
	 * milliseconds of the StatefulSet's pod going, kwok can take it (the
	 * audit log shows it; a kubelet deletes with the pod's UID). Such a
	 * pod never ran and is retried; the three that succeeded are checked.
	 */
	json_t *all = it_lives(t->pod_records, LABEL_CLEANUP_FOR, SET), *cleanups = json_array();
	size_t i;
	json_t *life;
	json_array_foreach(all, i, life) {
		if (it_first_rv_where(t->pod_records, json_string_value(json_object_get(life, "uid")), "status.phase",
				      "Succeeded"))
			json_array_append(cleanups, life);
	}
	json_decref(all);
	assert_int_equal(json_array_size(cleanups), 3);

	/* Two at once (the 3 s each pod runs lets the second start before the first ends), never three. */
	int most = it_most_alive(t->pod_records, LABEL_CLEANUP_FOR, SET);
	printf("# Parallel 4 -> 1, parallelism 2: at most %d cleanup pods at once\n", most);
	assert_int_equal(most, 2);
	json_array_foreach(cleanups, i, life) {
		const char *name = json_string_value(json_object_get(life, "name"));
		int ordinal = atoi(name + strlen(SET "-")); /* web-<ordinal>: expect_cleanup_pod checks the rest */
		expect_cleanup_pod(life, SET, ordinal, "data", t->uids);
		expect_claims_deleted_after_success(t, life, SET, ordinal, "data");
	}
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", SET), 3);
	static const char *const kept[] = {"data-web-0", NULL};
	sd_expect_claims_kept(t, kept);

	sd_operator_stop(t);
	json_decref(cleanups);
}

/* ---- scaling back up while a cleanup pod runs ---- */

static bool is_cleanup_pod(const json_t *pod)
{
	return it_label(pod, LABEL_CLEANUP_FOR) != NULL;
}

/* Condition (struct sd_named): the cleanup pod is Running. */
static bool cleanup_pod_running(void *ctx)
{
	struct sd_named *pc = ctx;
	json_t *pod = it_get(pc->t->admin, &KUBE_PODS, pc->t->ns, pc->name);
	bool running = pod && is_cleanup_pod(pod) && sd_str_is(kube_obj_str(pod, "status.phase"), "Running");
	json_decref(pod);
	return running;
}

/* Condition (struct sd_named): the StatefulSet's own pod of that name (not a cleanup pod) is Ready. */
static bool set_pod_ready(void *ctx)
{
	struct sd_named *pc = ctx;
	json_t *pod = it_get(pc->t->admin, &KUBE_PODS, pc->t->ns, pc->name);
	bool ready = pod && !is_cleanup_pod(pod) && kube_obj_condition(pod, "Ready", NULL) &&
		     !kube_obj_str(pod, "metadata.deletionTimestamp");
	json_decref(pod);
	return ready;
}

/* Condition (struct sd_named): the claim is Bound and not being deleted. */
static bool claim_bound(void *ctx)
{
	struct sd_named *pc = ctx;
	json_t *pvc = it_get(pc->t->admin, &KUBE_PVCS, pc->t->ns, pc->name);
	bool bound = pvc && sd_str_is(kube_obj_str(pvc, "status.phase"), "Bound") &&
		     !kube_obj_str(pvc, "metadata.deletionTimestamp");
	json_decref(pvc);
	return bound;
}

/* The last life in lives named name (borrowed), or NULL. */
static const json_t *last_life_named(const json_t *lives, const char *name)
{
	const json_t *last = NULL;
	size_t i;
	json_t *l;
	json_array_foreach(lives, i, l) if (sd_str_is(json_string_value(json_object_get(l, "name")), name)) last = l;
	return last;
}

/*
 * Scale 2 -> 1, and back to 2 while the cleanup pod of ordinal 1 runs (it
 * ends with outcome after 8 s). Whatever the outcome, the cleanup runs
 * once and only after it has gone does the StatefulSet get its pod back,
 * under the same name and claim name. Leaves the operator stopped and the
 * pod and claim records in t.
 */
static void scale_up_during_cleanup(struct sd_test *t, const char *prefix, const char *outcome)
{
	json_t *sts = sd_cleaned_statefulset(SET, 2, "OrderedReady", "data", outcome, "8s", "shard still owned");
	sd_begin_scaled(t, prefix, sts, 2, 2, 1);
	struct sd_named web1 = {t, "web-1"};
	if (!it_wait_every(cleanup_pod_running, &web1, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "no cleanup pod web-1 Running");
	sd_scale(t, SET, 2);
	if (!it_wait_every(set_pod_ready, &web1, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "the StatefulSet did not get its pod web-1 back");
	struct sd_named data1 = {t, "data-web-1"};
	if (!it_wait_every(claim_bound, &data1, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "claim data-web-1 is not Bound after the scale-up");
	it_sleep_ms(3000); /* time for a wrong second cleanup run to show */
	sd_stop_recording(t);

	/* One cleanup run; the StatefulSet's pod came once its cleanup pod had gone, on the claim data-web-1. */
	json_t *cleanups = sd_cleanup_lives(t, SET, 1);
	const json_t *cleanup = json_array_get(cleanups, 0);
	assert_string_equal(json_string_value(json_object_get(cleanup, "name")), "web-1");
	long long cleanup_gone = json_integer_value(json_object_get(cleanup, "gone_rv"));
	assert_true(cleanup_gone > 0);
	json_t *set_pods = it_lives(t->pod_records, "app", SET);
	const json_t *back = last_life_named(set_pods, "web-1");
	assert_non_null(back);
	assert_true(json_integer_value(json_object_get(back, "added_rv")) > cleanup_gone);
	json_t *pod = it_get(t->admin, &KUBE_PODS, t->ns, "web-1");
	assert_string_equal(kube_obj_str(pod, "metadata.uid"), json_string_value(json_object_get(back, "uid")));
	assert_true(owned_by_statefulset(pod, SET, true));
	assert_true(sd_str_is(volume_claim(pod, "data"), "data-web-1"));
	json_decref(pod);
	static const char *const kept[] = {"data-web-0", NULL};
	sd_expect_claims_kept(t, kept);

	sd_operator_stop(t);
	json_decref(set_pods);
	json_decref(cleanups);
}

/* A failed cleanup deleted nothing: the pod comes back on the very claim it had. */
static void test_scale_up_during_failing_cleanup_keeps_the_claim(void **state)
{
	struct sd_test *t = *state;
	scale_up_during_cleanup(t, "it-sd-upfail", "fail");
	json_t *claims = it_lives(t->pvc_records, NULL, NULL);
	const json_t *data1 = it_life_named(claims, "data-web-1");
	assert_non_null(data1);
	assert_string_equal(json_string_value(json_object_get(data1, "uid")),
			    json_string_value(json_object_get(t->uids, "data-web-1")));
	assert_int_equal(json_integer_value(json_object_get(data1, "deleting_rv")), 0);
	if (last_life_named(claims, "data-web-1") != data1)
		fail_msg("claim data-web-1 was re-created");
	static const char *const kept[] = {"data-web-1", NULL};
	sd_expect_claims_kept(t, kept);
	/* Failed, and the ordinal is wanted again: no retry (checked above: one cleanup pod), nothing succeeded. */
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", SET), 0);
	json_decref(claims);
}

/* A successful cleanup handed the data off: its claim goes, the pod comes back on a new one. */
static void test_scale_up_during_successful_cleanup_replaces_the_claim(void **state)
{
	struct sd_test *t = *state;
	scale_up_during_cleanup(t, "it-sd-upok", "succeed");
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-web-1");
	assert_non_null(pvc);
	assert_string_not_equal(kube_obj_str(pvc, "metadata.uid"),
				json_string_value(json_object_get(t->uids, "data-web-1")));
	json_decref(pvc);
	json_t *cleanups = it_lives(t->pod_records, LABEL_CLEANUP_FOR, SET);
	expect_claims_deleted_after_success(t, json_array_get(cleanups, 0), SET, 1, "data");
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupSucceeded", SET), 1);
	json_decref(cleanups);
}

/* ---- refusals ---- */

static const struct bad_input {
	const char *set;
	const char *reason;
	const char *template; /* NULL: a valid one */
	bool when_scaled_delete;
} refusals[] = {
	{"when-delete", "ScaledownWhenScaledDelete", NULL, true},
	{"not-a-pod", "ScaledownTemplateNotAPod",
	 "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"cleanup\"},"
	 "\"spec\":{\"ports\":[{\"port\":80}]}}",
	 false},
	{"unparsable", "ScaledownTemplateInvalid", "{\"metadata\": {\"labels\": [unclosed", false},
	{"restart-always", "ScaledownTemplateRestartPolicy",
	 "{\"metadata\":{\"labels\":{\"app\":\"restart-always-cleanup\"}},\"spec\":{\"restartPolicy\":\"Always\","
	 "\"containers\":[{\"name\":\"cleanup\",\"image\":\"cleanup\"}]}}",
	 false},
	{"no-containers", "ScaledownTemplateNoContainers",
	 "{\"metadata\":{\"labels\":{\"app\":\"no-containers-cleanup\"}},\"spec\":{\"containers\":[]}}", false},
};
#define N_REFUSALS (sizeof(refusals) / sizeof(refusals[0]))

static json_t *refused_statefulset(const struct bad_input *r)
{
	json_t *sts = sd_cleaned_statefulset(r->set, 2, "OrderedReady", "data", "succeed", NULL, NULL);
	if (r->template)
		it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE, r->template);
	if (r->when_scaled_delete)
		json_object_set_new(json_object_get(sts, "spec"), "persistentVolumeClaimRetentionPolicy",
				    json_pack("{s:s, s:s}", "whenDeleted", "Retain", "whenScaled", "Delete"));
	return sts;
}

struct refusal_ctx {
	struct sd_test *t;
	const struct bad_input *r;
};

static bool refused(void *ctx)
{
	struct refusal_ctx *rc = ctx;
	return it_event_count(rc->t->admin, rc->t->ns, rc->r->reason, rc->r->set) > 0;
}

static void expect_only_warnings(const struct sd_test *t, const char *reason, const char *set)
{
	char *selector = xasprintf("reason=%s,involvedObject.name=%s", reason, set);
	json_t *ev = it_events(t->admin, t->ns, selector);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) if (!sd_str_is(kube_obj_str(e, "type"), "Warning"))
		fail_msg("%s Event about %s is %s, want Warning", reason, set, kube_obj_str(e, "type"));
	json_decref(ev);
	free(selector);
}

/*
 * Each refused StatefulSet: a Warning Event with the reason, no finalizer;
 * scaled 2 -> 1, no cleanup pod ever, and the operator deletes no claim.
 */
static void test_refusals_warn_and_clean_nothing(void **state)
{
	struct sd_test *t = *state;
	sd_namespace_new(t, "it-sd-refuse");
	for (size_t k = 0; k < N_REFUSALS; k++) {
		json_t *sts = refused_statefulset(&refusals[k]);
		sd_create_set(t, sts);
		json_decref(sts);
	}
	it_wait_ready_and_bound(t->admin, t->ns, 2 * (int)N_REFUSALS, 2 * (int)N_REFUSALS, SD_WAIT_MS);
	t->uids = sd_claim_uids(t);
	sd_record(t, false);
	sd_operator_start(t, NULL);

	for (size_t k = 0; k < N_REFUSALS; k++) {
		struct refusal_ctx rc = {t, &refusals[k]};
		if (!it_wait_every(refused, &rc, SD_WAIT_MS, SD_POLL_MS))
			sd_fail_with_log(t, "no %s Event about %s", refusals[k].reason, refusals[k].set);
		expect_only_warnings(t, refusals[k].reason, refusals[k].set);
	}
	for (size_t k = 0; k < N_REFUSALS; k++)
		sd_scale(t, refusals[k].set, 1);
	for (size_t k = 0; k < N_REFUSALS; k++) {
		char name[64];
		snprintf(name, sizeof(name), "%s-1", refusals[k].set);
		struct sd_named pod = {t, name};
		if (!it_wait_every(sd_pod_gone, &pod, SD_WAIT_MS, SD_POLL_MS))
			sd_fail_with_log(t, "%s did not scale down to 1", refusals[k].set);
	}
	it_sleep_ms(5000); /* long enough for a cleanup pod that should not exist to show up */
	sd_stop_recording(t);

	json_t *cleanups = it_lives(t->pod_records, LABEL_CLEANUP_FOR, NULL);
	if (json_array_size(cleanups))
		fail_msg("cleanup pod %s created for a refused StatefulSet", life_name(cleanups, 0));
	for (size_t k = 0; k < N_REFUSALS; k++) {
		json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, refusals[k].set);
		if (it_has_finalizer(sts, FINALIZER_SCALEDOWN))
			fail_msg("%s got the finalizer although refused", refusals[k].set);
		json_decref(sts);
		/* With whenScaled: Delete the StatefulSet controller deletes the claim itself. */
		if (refusals[k].when_scaled_delete)
			continue;
		char *c0 = sd_claim_name("data", refusals[k].set, 0), *c1 = sd_claim_name("data", refusals[k].set, 1);
		const char *const kept[] = {c0, c1, NULL};
		sd_expect_claims_kept(t, kept);
		free(c1);
		free(c0);
	}

	sd_operator_stop(t);
	json_decref(cleanups);
}

/* ---- the seed example, as users wrote it for the old controller ---- */

#define SEED_TEMPLATE                                                                                    \
	"{\"metadata\":{\"labels\":{\"app\":\"datastore-cleanup\"}},\"spec\":{\"containers\":[{\"name\":"  \
	"\"cleanup\",\"image\":\"my-cleanup-container\",\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":" \
	"\"/var/data\"}]}]}}"

/*
 * The template carries no test bed outcome, so on kwok its pod would run
 * forever (a pod not owned by a Job is never ended by the test bed's kwok
 * stages): the test ends it, as the real container would, by annotating
 * the running pod.
 */
static void test_seed_example_with_legacy_annotation(void **state)
{
	struct sd_test *t = *state;
	json_t *sts = it_statefulset("datastore", 3, "OrderedReady", "data");
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, SEED_TEMPLATE);
	sd_begin(t, "it-sd-seed", sts, 3, 3);
	sd_operator_start(t, "datastore");

	sd_scale(t, "datastore", 2);
	struct sd_named pc = {t, "datastore-2"};
	if (!it_wait_every(cleanup_pod_running, &pc, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "no cleanup pod datastore-2 Running");
	json_t *pod = it_get(t->admin, &KUBE_PODS, t->ns, "datastore-2");
	assert_true(sd_str_is(volume_claim(pod, "data"), "data-datastore-2"));
	assert_true(sd_str_is(it_label(pod, "app"), "datastore-cleanup"));
	assert_true(sd_str_is(it_label(pod, LABEL_CLEANUP_FOR), "datastore"));
	const json_t *container = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
	assert_true(sd_str_is(kube_obj_str(container, "image"), "my-cleanup-container"));
	const json_t *mount = json_array_get(json_object_get(container, "volumeMounts"), 0);
	assert_true(sd_str_is(kube_obj_str(mount, "name"), "data") &&
		    sd_str_is(kube_obj_str(mount, "mountPath"), "/var/data"));
	json_decref(pod);
	/* While the cleanup runs its claim stays. */
	it_sleep_ms(2000);
	static const char *const running[] = {"data-datastore-2", NULL};
	sd_expect_claims_kept(t, running);

	it_merge_patch(t->admin, &KUBE_PODS, t->ns, "datastore-2",
		       "{\"metadata\":{\"annotations\":{\"testbed.stateful-operator.io/outcome\":\"succeed\"}}}");
	static const char *const cleaned[] = {"data-datastore-2", NULL};
	sd_wait_cleanup_over(t, "datastore", cleaned, 1);
	static const char *const kept[] = {"data-datastore-0", "data-datastore-1", NULL};
	sd_expect_claims_kept(t, kept);
	json_t *now = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, "datastore");
	assert_true(it_has_finalizer(now, FINALIZER_SCALEDOWN));
	json_decref(now);

	sd_operator_stop(t);
}

/* ---- a resize re-creates the StatefulSet: that deletion is not the user's ---- */

struct resized_ctx {
	struct sd_test *t;
	const char *old_uid;
};

/* The StatefulSet was re-created (new UID), the resize is over and every claim has 2Gi. */
static bool resized(void *ctx)
{
	struct resized_ctx *rc = ctx;
	json_t *sts = it_get(rc->t->admin, &KUBE_STATEFULSETS, rc->t->ns, SET);
	bool done = sts && !sd_str_is(kube_obj_str(sts, "metadata.uid"), rc->old_uid) &&
		    !it_annotation(sts, "stateful-operator.io/resize-state") && it_has_finalizer(sts, FINALIZER_SCALEDOWN);
	json_decref(sts);
	json_t *pvcs = it_list(rc->t->admin, &KUBE_PVCS, rc->t->ns, NULL);
	size_t i;
	json_t *p;
	json_array_foreach(pvcs, i, p) done = done && sd_str_is(kube_obj_str(p, "status.capacity.storage"), "2Gi");
	json_decref(pvcs);
	return done;
}

/*
 * The in-place resize orphan-deletes the StatefulSet and creates it again:
 * with a cleanup template, its finalizer must let that deletion through at
 * once and clean nothing (the pods and claims stay the set's).
 */
static void test_resize_recreating_the_statefulset_cleans_nothing(void **state)
{
	struct sd_test *t = *state;
	sd_begin(t, "it-sd-resize", sd_cleaned_statefulset(SET, 3, "OrderedReady", "data", "succeed", "1s", NULL), 3,
		 3);
	sd_operator_start(t, SET);
	json_t *before = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	sd_record(t, false);

	it_merge_patch(t->admin, &KUBE_STATEFULSETS, t->ns, SET,
		       "{\"metadata\":{\"annotations\":{\"resize.stateful-operator.io/data\":\"2Gi\"}}}");
	struct resized_ctx rc = {t, kube_obj_str(before, "metadata.uid")};
	if (!it_wait_every(resized, &rc, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "the resize did not complete with the StatefulSet re-created");
	it_sleep_ms(2000); /* a cleanup started late would show by now */
	sd_stop_recording(t);

	assert_int_equal(it_most_alive(t->pod_records, LABEL_CLEANUP_FOR, SET), 0);
	static const char *const kept[] = {"data-web-0", "data-web-1", "data-web-2", NULL};
	sd_expect_claims_kept(t, kept);
	assert_int_equal(it_event_count(t->admin, t->ns, "CleanupStarted", SET), 0);

	sd_operator_stop(t);
	json_decref(before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		sd_unit_test(test_ordered_cleans_one_ordinal_at_a_time_highest_first),
		sd_unit_test(test_ordinals_start_is_respected),
		sd_unit_test(test_parallel_is_bounded_by_parallelism),
		sd_unit_test(test_scale_up_during_failing_cleanup_keeps_the_claim),
		sd_unit_test(test_scale_up_during_successful_cleanup_replaces_the_claim),
		sd_unit_test(test_refusals_warn_and_clean_nothing),
		sd_unit_test(test_seed_example_with_legacy_annotation),
		sd_unit_test(test_resize_recreating_the_statefulset_cleans_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
