/*
 * Scale-down cleanup on the test bed (SPEC section "scaledown"; kwok ends
 * cleanup pods as their testbed annotations say): OrderedReady one ordinal
 * at a time, highest first, each claim deleted only after its cleanup pod
 * Succeeded; Parallel bounded by scaledown-parallelism; scaling back up
 * while a cleanup runs; refusals; the seed example with the legacy key.
 * Failures, timeouts, StatefulSet deletion and crashes: it_scaledown_faults.c.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

#define SET "web"
#define WAIT_MS 60000L
#define POLL_MS 100L

static bool str_is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

/* ---- one operator and one namespace per test; the teardown removes both whatever happened ---- */

static pid_t running_operator;
static char *test_ns;

static const char *namespace_new(struct kube_client *admin, const char *prefix)
{
	test_ns = it_namespace_new(admin, prefix);
	return test_ns;
}

static struct daemon operator_start(void)
{
	struct daemon d = daemon_start_operator_crashing(NULL);
	running_operator = d.pid;
	return d;
}

static void operator_stop(struct daemon *d)
{
	daemon_stop_operator(d);
	running_operator = 0;
}

static int teardown(void **state)
{
	(void)state;
	if (running_operator > 0 && kill(running_operator, 0) == 0) {
		kill(running_operator, SIGKILL);
		waitpid(running_operator, NULL, 0);
	}
	running_operator = 0;
	if (test_ns) {
		struct kube_client *admin = it_admin_client();
		/* With no operator left to remove it, our finalizer would keep the namespace forever. */
		it_delete_all_removing_finalizer(admin, &KUBE_STATEFULSETS, test_ns, FINALIZER_SCALEDOWN);
		it_namespace_delete(admin, test_ns);
		kube_client_free(admin);
		free(test_ns);
		test_ns = NULL;
	}
	return 0;
}

/* Fails the test with what the cluster and the operator show. */
#define fail_with_log(d, ns, ...)                                                                        \
	do {                                                                                             \
		it_sh("kubectl get -n %s sts,pods,pvc -o wide >&2; kubectl get -n %s events >&2; "     \
		      "kubectl get sts -n %s -o jsonpath='{range .items[*]}{.metadata.name} "            \
		      "{.metadata.annotations}{\"\\n\"}{end}' >&2",                                      \
		      ns, ns, ns);                                                                       \
		char *log_ = daemon_log(d);                                                              \
		char *what_ = xasprintf(__VA_ARGS__);                                                    \
		fail_msg("%s; operator log:\n%s", what_, log_);                                          \
	} while (0)

/* ---- building and driving a StatefulSet ---- */

/*
 * StatefulSet name with a cleanup template that mounts every claim and
 * that kwok ends with outcome after delay (with message).
 */
static json_t *cleaned_statefulset(const char *name, int replicas, const char *policy, const char *claims,
				   const char *outcome, const char *delay, const char *message)
{
	json_t *sts = it_statefulset(name, replicas, policy, claims);
	/* Labels the selector (app=<name>) does not match: the StatefulSet must not adopt its cleanup pods. */
	char *app = xasprintf("%s-cleanup", name);
	char *tmpl = it_testbed_pod_template(app, outcome, delay, message, claims);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE, tmpl);
	free(tmpl);
	free(app);
	return sts;
}

static void create_set(struct kube_client *admin, const char *ns, const json_t *sts, int pods, int claims)
{
	struct kube_error err;
	if (kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet %s: %s", kube_obj_str(sts, "metadata.name"), err.message);
	it_wait_ready_and_bound(admin, ns, pods, claims, WAIT_MS);
}

static void scale(struct kube_client *admin, const char *ns, const char *name, int replicas)
{
	it_merge_patch(admin, &KUBE_STATEFULSETS, ns, name, "{\"spec\":{\"replicas\":%d}}", replicas);
}

struct set_ctx {
	struct kube_client *c;
	const char *ns;
	const char *set;
	const char *const *claims; /* NULL-terminated: the claims the cleanup must delete */
	int succeeded;             /* CleanupSucceeded Events expected */
};

static bool has_finalizer(void *ctx)
{
	struct set_ctx *sc = ctx;
	json_t *sts = it_get(sc->c, &KUBE_STATEFULSETS, sc->ns, sc->set);
	bool has = it_has_finalizer(sts, FINALIZER_SCALEDOWN);
	json_decref(sts);
	return has;
}

/* The operator has taken the StatefulSet on: its finalizer is there. */
static void wait_finalizer(struct kube_client *admin, const char *ns, const char *set, struct daemon *d)
{
	struct set_ctx sc = {.c = admin, .ns = ns, .set = set};
	if (!it_wait_every(has_finalizer, &sc, WAIT_MS, POLL_MS))
		fail_with_log(d, ns, "no finalizer %s on %s", FINALIZER_SCALEDOWN, set);
}

static int cleanup_pods_of(struct kube_client *c, const char *ns, const char *set)
{
	char *selector = xasprintf("%s=%s", LABEL_CLEANUP_FOR, set);
	json_t *pods = it_list(c, &KUBE_PODS, ns, selector);
	int n = (int)json_array_size(pods);
	json_decref(pods);
	free(selector);
	return n;
}

static bool claim_gone_or_deleting(struct kube_client *c, const char *ns, const char *name)
{
	json_t *pvc = it_get(c, &KUBE_PVCS, ns, name);
	bool gone = !pvc || kube_obj_str(pvc, "metadata.deletionTimestamp");
	json_decref(pvc);
	return gone;
}

static const char *status_of(const json_t *sts)
{
	return it_annotation(sts, ANNOTATION_SCALEDOWN_STATUS);
}

/* Cleanup is over: no cleanup pod, the claims deleted, the Events there, no status left. */
static bool cleanup_over(void *ctx)
{
	struct set_ctx *sc = ctx;
	if (cleanup_pods_of(sc->c, sc->ns, sc->set))
		return false;
	for (const char *const *claim = sc->claims; *claim; claim++)
		if (!claim_gone_or_deleting(sc->c, sc->ns, *claim))
			return false;
	json_t *sts = it_get(sc->c, &KUBE_STATEFULSETS, sc->ns, sc->set);
	bool quiet = sts && !status_of(sts);
	json_decref(sts);
	return quiet && it_event_count(sc->c, sc->ns, "CleanupSucceeded", sc->set) >= sc->succeeded;
}

static void wait_cleanup_over(struct kube_client *admin, const char *ns, const char *set, const char *const *claims,
			      int succeeded, struct daemon *d)
{
	struct set_ctx sc = {admin, ns, set, claims, succeeded};
	if (!it_wait_every(cleanup_over, &sc, WAIT_MS, POLL_MS))
		fail_with_log(d, ns, "the cleanup of %s did not end", set);
}

/* claim name -> UID of every claim in ns: a new object. */
static json_t *claim_uids(struct kube_client *c, const char *ns)
{
	json_t *pvcs = it_list(c, &KUBE_PVCS, ns, NULL), *uids = json_object();
	size_t i;
	json_t *p;
	json_array_foreach(pvcs, i, p) json_object_set_new(uids, kube_obj_str(p, "metadata.name"),
							   json_string(kube_obj_str(p, "metadata.uid")));
	json_decref(pvcs);
	return uids;
}

/* Each claim named is the very object it was (same UID) and is not being deleted. */
static void expect_claims_kept(struct kube_client *c, const char *ns, const json_t *before, const char *const *names)
{
	for (; *names; names++) {
		json_t *pvc = it_get(c, &KUBE_PVCS, ns, *names);
		if (!pvc)
			fail_msg("claim %s is gone", *names);
		if (!str_is(kube_obj_str(pvc, "metadata.uid"), json_string_value(json_object_get(before, *names))))
			fail_msg("claim %s was replaced (new UID)", *names);
		if (kube_obj_str(pvc, "metadata.deletionTimestamp"))
			fail_msg("claim %s is being deleted", *names);
		json_decref(pvc);
	}
}

/* The claim the pod mounts as volume (NULL when none). Borrowed. */
static const char *volume_claim(const json_t *pod, const char *volume)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
		if (str_is(json_string_value(json_object_get(v, "name")), volume))
			return kube_obj_str(v, "persistentVolumeClaim.claimName");
	return NULL;
}

/* The claim <template>-<set>-<ordinal> (new string). */
static char *claim_name(const char *tmpl, const char *set, int ordinal)
{
	return xasprintf("%s-%s-%d", tmpl, set, ordinal);
}

static bool owned_by_statefulset(const json_t *pod, const char *set, bool controller)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref)
		if (str_is(json_string_value(json_object_get(ref, "kind")), "StatefulSet") &&
		    str_is(json_string_value(json_object_get(ref, "name")), set) &&
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
	assert_true(str_is(it_label(pod, "app"), app));
	assert_true(owned_by_statefulset(pod, set, false));
	snprintf(want, sizeof(want), "%d", ordinal);
	assert_true(str_is(it_annotation(pod, ANNOTATION_CLEANUP_ORDINAL), want));
	assert_true(str_is(it_annotation(pod, ANNOTATION_CLEANUP_ATTEMPT), "1"));
	const char *recorded = it_annotation(pod, ANNOTATION_CLEANUP_CLAIMS);
	json_t *mounted = recorded ? json_loads(recorded, 0, NULL) : NULL;
	if (!json_is_object(mounted))
		fail_msg("%s: annotation %s is not a JSON object: %s", kube_obj_str(pod, "metadata.name"),
			 ANNOTATION_CLEANUP_CLAIMS, recorded ? recorded : "(none)");
	char *copy = xstrdup(claims), *save = NULL;
	for (char *tmpl = strtok_r(copy, ",", &save); tmpl; tmpl = strtok_r(NULL, ",", &save)) {
		char *claim = claim_name(tmpl, set, ordinal);
		if (!str_is(volume_claim(pod, tmpl), claim))
			fail_msg("%s: volume %s mounts %s, want %s", kube_obj_str(pod, "metadata.name"), tmpl,
				 volume_claim(pod, tmpl) ? volume_claim(pod, tmpl) : "nothing", claim);
		const char *uid = json_string_value(json_object_get(uids_before, claim));
		if (!str_is(json_string_value(json_object_get(mounted, claim)), uid))
			fail_msg("%s: %s does not name %s with UID %s: %s", kube_obj_str(pod, "metadata.name"),
				 ANNOTATION_CLEANUP_CLAIMS, claim, uid, recorded);
		free(claim);
	}
	free(copy);
	json_decref(mounted);
}

/*
 * Each claim of the cleanup pod's ordinal began to be deleted only after
 * the API server recorded the pod Succeeded.
 */
static void expect_claims_deleted_after_success(const json_t *pod_records, const json_t *pvc_records,
						const json_t *life, const char *set, int ordinal, const char *claims)
{
	const char *uid = json_string_value(json_object_get(life, "uid"));
	long long succeeded = it_first_rv_where(pod_records, uid, "status.phase", "Succeeded");
	if (!succeeded)
		fail_msg("cleanup pod %s-%d was never Succeeded", set, ordinal);
	json_t *claim_lives = it_lives(pvc_records, NULL, NULL);
	char *copy = xstrdup(claims), *save = NULL;
	for (char *tmpl = strtok_r(copy, ",", &save); tmpl; tmpl = strtok_r(NULL, ",", &save)) {
		char *claim = claim_name(tmpl, set, ordinal);
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

static void test_ordered_cleans_one_ordinal_at_a_time_highest_first(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-ordered");
	json_t *sts = cleaned_statefulset(SET, 3, "OrderedReady", "data,logs", "succeed", "2s", NULL);
	create_set(admin, ns, sts, 3, 6);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, SET, &d);

	scale(admin, ns, SET, 1);
	static const char *const cleaned[] = {"data-web-1", "logs-web-1", "data-web-2", "logs-web-2", NULL};
	wait_cleanup_over(admin, ns, SET, cleaned, 2, &d);
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);

	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(cleanups), 2);
	assert_string_equal(life_name(cleanups, 0), "web-2");
	assert_string_equal(life_name(cleanups, 1), "web-1");
	assert_int_equal(it_most_alive(pod_records, LABEL_CLEANUP_FOR, SET), 1);
	for (int k = 0; k < 2; k++) {
		const json_t *life = json_array_get(cleanups, (size_t)k);
		expect_cleanup_pod(life, SET, 2 - k, "data,logs", uids);
		expect_claims_deleted_after_success(pod_records, pvc_records, life, SET, 2 - k, "data,logs");
	}
	static const char *const kept[] = {"data-web-0", "logs-web-0", NULL};
	expect_claims_kept(admin, ns, uids, kept);
	assert_int_equal(it_event_count(admin, ns, "CleanupSucceeded", SET), 2);
	json_t *now = it_get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_true(it_has_finalizer(now, FINALIZER_SCALEDOWN));
	json_decref(now);
	printf("# OrderedReady 3 -> 1: %zu pod and %zu claim changes recorded\n", json_array_size(pod_records),
	       json_array_size(pvc_records));

	operator_stop(&d);
	json_decref(cleanups);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

static void test_parallel_is_bounded_by_parallelism(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-parallel");
	json_t *sts = cleaned_statefulset(SET, 4, "Parallel", "data", "succeed", "3s", NULL);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_PARALLELISM, "2");
	create_set(admin, ns, sts, 4, 4);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, SET, &d);

	scale(admin, ns, SET, 1);
	static const char *const cleaned[] = {"data-web-1", "data-web-2", "data-web-3", NULL};
	wait_cleanup_over(admin, ns, SET, cleaned, 3, &d);
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);

	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(cleanups), 3);
	/* Two at once (the 3 s each pod runs lets the second start before the first ends), never three. */
	int most = it_most_alive(pod_records, LABEL_CLEANUP_FOR, SET);
	printf("# Parallel 4 -> 1, parallelism 2: at most %d cleanup pods at once\n", most);
	assert_int_equal(most, 2);
	size_t i;
	json_t *life;
	json_array_foreach(cleanups, i, life) {
		const char *name = json_string_value(json_object_get(life, "name"));
		int ordinal = atoi(name + strlen(SET "-")); /* web-<ordinal>: expect_cleanup_pod checks the rest */
		expect_cleanup_pod(life, SET, ordinal, "data", uids);
		expect_claims_deleted_after_success(pod_records, pvc_records, life, SET, ordinal, "data");
	}
	static const char *const kept[] = {"data-web-0", NULL};
	expect_claims_kept(admin, ns, uids, kept);

	operator_stop(&d);
	json_decref(cleanups);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

/* ---- scaling back up while a cleanup pod runs ---- */

struct pod_ctx {
	struct kube_client *c;
	const char *ns;
	const char *name;
};

static bool is_cleanup_pod(const json_t *pod)
{
	return it_label(pod, LABEL_CLEANUP_FOR) != NULL;
}

static bool cleanup_pod_running(void *ctx)
{
	struct pod_ctx *pc = ctx;
	json_t *pod = it_get(pc->c, &KUBE_PODS, pc->ns, pc->name);
	bool running = pod && is_cleanup_pod(pod) && str_is(kube_obj_str(pod, "status.phase"), "Running");
	json_decref(pod);
	return running;
}

/* The StatefulSet's own pod of that name (not a cleanup pod) is Ready. */
static bool set_pod_ready(void *ctx)
{
	struct pod_ctx *pc = ctx;
	json_t *pod = it_get(pc->c, &KUBE_PODS, pc->ns, pc->name);
	bool ready = pod && !is_cleanup_pod(pod) && kube_obj_condition(pod, "Ready", NULL) &&
		     !kube_obj_str(pod, "metadata.deletionTimestamp");
	json_decref(pod);
	return ready;
}

static bool claim_bound(void *ctx)
{
	struct pod_ctx *pc = ctx;
	json_t *pvc = it_get(pc->c, &KUBE_PVCS, pc->ns, pc->name);
	bool bound = pvc && str_is(kube_obj_str(pvc, "status.phase"), "Bound") &&
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
	json_array_foreach(lives, i, l) if (str_is(json_string_value(json_object_get(l, "name")), name)) last = l;
	return last;
}

/*
 * Scale 2 -> 1, and back to 2 while the cleanup pod of ordinal 1 runs (it
 * ends with outcome after 8 s). Whatever the outcome, the cleanup runs
 * once and only after it has gone does the StatefulSet get its pod back,
 * under the same name and claim name. Returns the pod and claim records.
 */
static void scale_up_during_cleanup(const char *prefix, const char *outcome, json_t **pod_records_out,
				    json_t **pvc_records_out, json_t **uids_out)
{
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, prefix);
	json_t *sts = cleaned_statefulset(SET, 2, "OrderedReady", "data", outcome, "8s", "shard still owned");
	create_set(admin, ns, sts, 2, 2);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, SET, &d);

	scale(admin, ns, SET, 1);
	struct pod_ctx web1 = {admin, ns, "web-1"};
	if (!it_wait_every(cleanup_pod_running, &web1, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "no cleanup pod web-1 Running");
	scale(admin, ns, SET, 2);
	if (!it_wait_every(set_pod_ready, &web1, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "the StatefulSet did not get its pod web-1 back");
	struct pod_ctx data1 = {admin, ns, "data-web-1"};
	if (!it_wait_every(claim_bound, &data1, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "claim data-web-1 is not Bound after the scale-up");
	it_sleep_ms(3000); /* time for a wrong second cleanup run to show */
	*pod_records_out = it_recorder_stop(pods);
	*pvc_records_out = it_recorder_stop(pvcs);
	*uids_out = uids;

	/* One cleanup run; the StatefulSet's pod came once its cleanup pod had gone, on the claim data-web-1. */
	json_t *cleanups = it_lives(*pod_records_out, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(cleanups), 1);
	const json_t *cleanup = json_array_get(cleanups, 0);
	assert_string_equal(json_string_value(json_object_get(cleanup, "name")), "web-1");
	long long cleanup_gone = json_integer_value(json_object_get(cleanup, "gone_rv"));
	assert_true(cleanup_gone > 0);
	json_t *set_pods = it_lives(*pod_records_out, "app", SET);
	const json_t *back = last_life_named(set_pods, "web-1");
	assert_non_null(back);
	assert_true(json_integer_value(json_object_get(back, "added_rv")) > cleanup_gone);
	json_t *pod = it_get(admin, &KUBE_PODS, ns, "web-1");
	assert_string_equal(kube_obj_str(pod, "metadata.uid"), json_string_value(json_object_get(back, "uid")));
	assert_true(owned_by_statefulset(pod, SET, true));
	assert_true(str_is(volume_claim(pod, "data"), "data-web-1"));
	json_decref(pod);
	static const char *const kept[] = {"data-web-0", NULL};
	expect_claims_kept(admin, ns, uids, kept);

	operator_stop(&d);
	json_decref(set_pods);
	json_decref(cleanups);
	json_decref(sts);
	kube_client_free(admin);
}

/* A failed cleanup deleted nothing: the pod comes back on the very claim it had. */
static void test_scale_up_during_failing_cleanup_keeps_the_claim(void **state)
{
	(void)state;
	json_t *pod_records, *pvc_records, *uids;
	scale_up_during_cleanup("it-sd-upfail", "fail", &pod_records, &pvc_records, &uids);
	json_t *claims = it_lives(pvc_records, NULL, NULL);
	const json_t *data1 = it_life_named(claims, "data-web-1");
	assert_non_null(data1);
	assert_string_equal(json_string_value(json_object_get(data1, "uid")),
			    json_string_value(json_object_get(uids, "data-web-1")));
	assert_int_equal(json_integer_value(json_object_get(data1, "deleting_rv")), 0);
	if (last_life_named(claims, "data-web-1") != data1)
		fail_msg("claim data-web-1 was re-created");
	struct kube_client *admin = it_admin_client();
	static const char *const kept[] = {"data-web-1", NULL};
	expect_claims_kept(admin, test_ns, uids, kept);
	/* Failed, and the ordinal is wanted again: no retry (checked above: one cleanup pod), nothing succeeded. */
	assert_int_equal(it_event_count(admin, test_ns, "CleanupSucceeded", SET), 0);
	kube_client_free(admin);
	json_decref(claims);
	json_decref(uids);
	json_decref(pvc_records);
	json_decref(pod_records);
}

/* A successful cleanup handed the data off: its claim goes, the pod comes back on a new one. */
static void test_scale_up_during_successful_cleanup_replaces_the_claim(void **state)
{
	(void)state;
	json_t *pod_records, *pvc_records, *uids;
	scale_up_during_cleanup("it-sd-upok", "succeed", &pod_records, &pvc_records, &uids);
	struct kube_client *admin = it_admin_client();
	json_t *pvc = it_get(admin, &KUBE_PVCS, test_ns, "data-web-1");
	assert_non_null(pvc);
	assert_string_not_equal(kube_obj_str(pvc, "metadata.uid"), json_string_value(json_object_get(uids, "data-web-1")));
	json_decref(pvc);
	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	expect_claims_deleted_after_success(pod_records, pvc_records, json_array_get(cleanups, 0), SET, 1, "data");
	assert_int_equal(it_event_count(admin, test_ns, "CleanupSucceeded", SET), 1);
	kube_client_free(admin);
	json_decref(cleanups);
	json_decref(uids);
	json_decref(pvc_records);
	json_decref(pod_records);
}

/* ---- refusals ---- */

static const struct refusal {
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

static json_t *refused_statefulset(const struct refusal *r)
{
	json_t *sts = cleaned_statefulset(r->set, 2, "OrderedReady", "data", "succeed", NULL, NULL);
	if (r->template)
		it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE, r->template);
	if (r->when_scaled_delete)
		json_object_set_new(json_object_get(sts, "spec"), "persistentVolumeClaimRetentionPolicy",
				    json_pack("{s:s, s:s}", "whenDeleted", "Retain", "whenScaled", "Delete"));
	return sts;
}

struct refusal_ctx {
	struct kube_client *c;
	const char *ns;
	const struct refusal *r;
};

static bool refused(void *ctx)
{
	struct refusal_ctx *rc = ctx;
	return it_event_count(rc->c, rc->ns, rc->r->reason, rc->r->set) > 0;
}

static bool scaled_to_one(void *ctx)
{
	struct refusal_ctx *rc = ctx;
	char name[64];
	snprintf(name, sizeof(name), "%s-1", rc->r->set);
	json_t *pod = it_get(rc->c, &KUBE_PODS, rc->ns, name);
	json_decref(pod);
	return pod == NULL;
}

static void expect_only_warnings(struct kube_client *c, const char *ns, const char *reason, const char *set)
{
	char *selector = xasprintf("reason=%s,involvedObject.name=%s", reason, set);
	json_t *ev = it_events(c, ns, selector);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) if (!str_is(kube_obj_str(e, "type"), "Warning"))
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
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-refuse");
	struct kube_error err;
	for (size_t k = 0; k < N_REFUSALS; k++) {
		json_t *sts = refused_statefulset(&refusals[k]);
		if (kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
			fail_msg("create StatefulSet %s: %s", refusals[k].set, err.message);
		json_decref(sts);
	}
	it_wait_ready_and_bound(admin, ns, 2 * (int)N_REFUSALS, 2 * (int)N_REFUSALS, WAIT_MS);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns);
	struct daemon d = operator_start();

	for (size_t k = 0; k < N_REFUSALS; k++) {
		struct refusal_ctx rc = {admin, ns, &refusals[k]};
		if (!it_wait_every(refused, &rc, WAIT_MS, POLL_MS))
			fail_with_log(&d, ns, "no %s Event about %s", refusals[k].reason, refusals[k].set);
		expect_only_warnings(admin, ns, refusals[k].reason, refusals[k].set);
	}
	for (size_t k = 0; k < N_REFUSALS; k++)
		scale(admin, ns, refusals[k].set, 1);
	for (size_t k = 0; k < N_REFUSALS; k++) {
		struct refusal_ctx rc = {admin, ns, &refusals[k]};
		if (!it_wait_every(scaled_to_one, &rc, WAIT_MS, POLL_MS))
			fail_with_log(&d, ns, "%s did not scale down to 1", refusals[k].set);
	}
	it_sleep_ms(5000); /* long enough for a cleanup pod that should not exist to show up */
	json_t *pod_records = it_recorder_stop(pods);

	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, NULL);
	if (json_array_size(cleanups))
		fail_msg("cleanup pod %s created for a refused StatefulSet", life_name(cleanups, 0));
	for (size_t k = 0; k < N_REFUSALS; k++) {
		json_t *sts = it_get(admin, &KUBE_STATEFULSETS, ns, refusals[k].set);
		if (it_has_finalizer(sts, FINALIZER_SCALEDOWN))
			fail_msg("%s got the finalizer although refused", refusals[k].set);
		json_decref(sts);
		/* With whenScaled: Delete the StatefulSet controller deletes the claim itself. */
		if (refusals[k].when_scaled_delete)
			continue;
		char *c0 = claim_name("data", refusals[k].set, 0), *c1 = claim_name("data", refusals[k].set, 1);
		const char *const kept[] = {c0, c1, NULL};
		expect_claims_kept(admin, ns, uids, kept);
		free(c1);
		free(c0);
	}

	operator_stop(&d);
	json_decref(cleanups);
	json_decref(pod_records);
	json_decref(uids);
	kube_client_free(admin);
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
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-seed");
	json_t *sts = it_statefulset("datastore", 3, "OrderedReady", "data");
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, SEED_TEMPLATE);
	create_set(admin, ns, sts, 3, 3);
	json_t *uids = claim_uids(admin, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, "datastore", &d);

	scale(admin, ns, "datastore", 2);
	struct pod_ctx pc = {admin, ns, "datastore-2"};
	if (!it_wait_every(cleanup_pod_running, &pc, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "no cleanup pod datastore-2 Running");
	json_t *pod = it_get(admin, &KUBE_PODS, ns, "datastore-2");
	assert_true(str_is(volume_claim(pod, "data"), "data-datastore-2"));
	assert_true(str_is(it_label(pod, "app"), "datastore-cleanup"));
	assert_true(str_is(it_label(pod, LABEL_CLEANUP_FOR), "datastore"));
	const json_t *container = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
	assert_true(str_is(kube_obj_str(container, "image"), "my-cleanup-container"));
	const json_t *mount = json_array_get(json_object_get(container, "volumeMounts"), 0);
	assert_true(str_is(kube_obj_str(mount, "name"), "data") && str_is(kube_obj_str(mount, "mountPath"), "/var/data"));
	json_decref(pod);
	/* While the cleanup runs its claim stays. */
	it_sleep_ms(2000);
	static const char *const running[] = {"data-datastore-2", NULL};
	expect_claims_kept(admin, ns, uids, running);

	it_merge_patch(admin, &KUBE_PODS, ns, "datastore-2",
		       "{\"metadata\":{\"annotations\":{\"testbed.stateful-operator.io/outcome\":\"succeed\"}}}");
	static const char *const cleaned[] = {"data-datastore-2", NULL};
	wait_cleanup_over(admin, ns, "datastore", cleaned, 1, &d);
	static const char *const kept[] = {"data-datastore-0", "data-datastore-1", NULL};
	expect_claims_kept(admin, ns, uids, kept);
	json_t *now = it_get(admin, &KUBE_STATEFULSETS, ns, "datastore");
	assert_true(it_has_finalizer(now, FINALIZER_SCALEDOWN));
	json_decref(now);

	operator_stop(&d);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

/* ---- a resize re-creates the StatefulSet: that deletion is not the user's ---- */

struct resized_ctx {
	struct kube_client *c;
	const char *ns;
	const char *old_uid;
};

/* The StatefulSet was re-created (new UID), the resize is over and every claim has 2Gi. */
static bool resized(void *ctx)
{
	struct resized_ctx *rc = ctx;
	json_t *sts = it_get(rc->c, &KUBE_STATEFULSETS, rc->ns, SET);
	bool done = sts && !str_is(kube_obj_str(sts, "metadata.uid"), rc->old_uid) &&
		    !it_annotation(sts, "stateful-operator.io/resize-state") && it_has_finalizer(sts, FINALIZER_SCALEDOWN);
	json_decref(sts);
	json_t *pvcs = it_list(rc->c, &KUBE_PVCS, rc->ns, NULL);
	size_t i;
	json_t *p;
	json_array_foreach(pvcs, i, p) done = done && str_is(kube_obj_str(p, "status.capacity.storage"), "2Gi");
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
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-resize");
	json_t *sts = cleaned_statefulset(SET, 3, "OrderedReady", "data", "succeed", "1s", NULL);
	create_set(admin, ns, sts, 3, 3);
	json_t *uids = claim_uids(admin, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, SET, &d);
	json_t *before = it_get(admin, &KUBE_STATEFULSETS, ns, SET);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns);

	it_merge_patch(admin, &KUBE_STATEFULSETS, ns, SET,
		       "{\"metadata\":{\"annotations\":{\"resize.stateful-operator.io/data\":\"2Gi\"}}}");
	struct resized_ctx rc = {admin, ns, kube_obj_str(before, "metadata.uid")};
	if (!it_wait_every(resized, &rc, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "the resize did not complete with the StatefulSet re-created");
	it_sleep_ms(2000); /* a cleanup started late would show by now */

	json_t *records = it_recorder_stop(pods);
	assert_int_equal(it_most_alive(records, LABEL_CLEANUP_FOR, SET), 0);
	static const char *const kept[] = {"data-web-0", "data-web-1", "data-web-2", NULL};
	expect_claims_kept(admin, ns, uids, kept);
	assert_int_equal(it_event_count(admin, ns, "CleanupStarted", SET), 0);

	operator_stop(&d);
	json_decref(records);
	json_decref(before);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ordered_cleans_one_ordinal_at_a_time_highest_first, teardown),
		cmocka_unit_test_teardown(test_parallel_is_bounded_by_parallelism, teardown),
		cmocka_unit_test_teardown(test_scale_up_during_failing_cleanup_keeps_the_claim, teardown),
		cmocka_unit_test_teardown(test_scale_up_during_successful_cleanup_replaces_the_claim, teardown),
		cmocka_unit_test_teardown(test_refusals_warn_and_clean_nothing, teardown),
		cmocka_unit_test_teardown(test_seed_example_with_legacy_annotation, teardown),
		cmocka_unit_test_teardown(test_resize_recreating_the_statefulset_cleans_nothing, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
