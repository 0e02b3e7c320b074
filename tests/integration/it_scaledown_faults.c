/*
 * Scale-down cleanup when things go wrong, on the test bed: a cleanup pod
 * that fails (retries with growing backoff, then the claims are kept and
 * the status says why), one past its timeout, the StatefulSet deleted
 * (every ordinal cleaned before it goes; an orphaning delete cleans
 * nothing), and kill -9 of the operator between the steps of a cleanup
 * (no second run after a success, every failure counted once, no claim
 * lost, no pod left). The happy paths are in it_scaledown.c.
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
#include <strings.h>
#include <sys/wait.h>
#include <time.h>

#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

#define SET "web"
#define WAIT_MS 60000L
#define POLL_MS 100L
#define MESSAGE "shard still owned"

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

/* StatefulSet "web" with a cleanup template mounting every claim, ended by kwok with outcome after delay. */
static json_t *cleaned_statefulset(int replicas, const char *claims, const char *outcome, const char *delay)
{
	json_t *sts = it_statefulset(SET, replicas, "OrderedReady", claims);
	char *tmpl = it_testbed_pod_template(SET "-cleanup", outcome, delay, MESSAGE, claims);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE, tmpl);
	free(tmpl);
	return sts;
}

static void create_set(struct kube_client *admin, const char *ns, const json_t *sts, int pods, int claims)
{
	struct kube_error err;
	if (kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	it_wait_ready_and_bound(admin, ns, pods, claims, WAIT_MS);
}

static void scale(struct kube_client *admin, const char *ns, int replicas)
{
	it_merge_patch(admin, &KUBE_STATEFULSETS, ns, SET, "{\"spec\":{\"replicas\":%d}}", replicas);
}

struct ctx {
	struct kube_client *c;
	const char *ns;
	const char *const *claims; /* NULL-terminated: the claims the cleanup must delete */
	int events;                /* CleanupSucceeded / CleanupFailed Events expected */
	const char *name;
	struct it_recorder *pods; /* the pods being recorded */
	int attempts;             /* cleanup pods expected */
};

static json_t *statefulset_now(const struct ctx *x)
{
	return it_get(x->c, &KUBE_STATEFULSETS, x->ns, SET);
}

static bool has_finalizer(void *ctx)
{
	json_t *sts = statefulset_now(ctx);
	bool has = it_has_finalizer(sts, FINALIZER_SCALEDOWN);
	json_decref(sts);
	return has;
}

static void wait_finalizer(struct kube_client *admin, const char *ns, struct daemon *d)
{
	struct ctx x = {.c = admin, .ns = ns};
	if (!it_wait_every(has_finalizer, &x, WAIT_MS, POLL_MS))
		fail_with_log(d, ns, "no finalizer %s on " SET, FINALIZER_SCALEDOWN);
}

static int cleanup_pods_left(const struct ctx *x)
{
	json_t *pods = it_list(x->c, &KUBE_PODS, x->ns, LABEL_CLEANUP_FOR "=" SET);
	int n = (int)json_array_size(pods);
	json_decref(pods);
	return n;
}

static bool claim_gone_or_deleting(struct kube_client *c, const char *ns, const char *name)
{
	json_t *pvc = it_get(c, &KUBE_PVCS, ns, name);
	bool gone = !pvc || kube_obj_str(pvc, "metadata.deletionTimestamp");
	json_decref(pvc);
	return gone;
}

/* The scaledown-status annotation now (new string), or NULL. */
static char *status_now(struct kube_client *c, const char *ns)
{
	struct ctx x = {.c = c, .ns = ns};
	json_t *sts = statefulset_now(&x);
	const char *s = it_annotation(sts, ANNOTATION_SCALEDOWN_STATUS);
	char *out = s ? xstrdup(s) : NULL;
	json_decref(sts);
	return out;
}

/* Given up: no cleanup pod, the failures reported (Events and status). */
static bool gave_up(void *ctx)
{
	struct ctx *x = ctx;
	if (cleanup_pods_left(x) || it_event_count(x->c, x->ns, "CleanupFailed", SET) < x->events)
		return false;
	char *status = status_now(x->c, x->ns);
	free(status);
	return status != NULL;
}

/* Done: no cleanup pod, the claims deleted, the status gone. */
static bool cleaned(void *ctx)
{
	struct ctx *x = ctx;
	if (cleanup_pods_left(x))
		return false;
	for (const char *const *claim = x->claims; *claim; claim++)
		if (!claim_gone_or_deleting(x->c, x->ns, *claim))
			return false;
	char *status = status_now(x->c, x->ns);
	free(status);
	return status == NULL && it_event_count(x->c, x->ns, "CleanupSucceeded", SET) >= x->events;
}

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

/* No record shows the claim being deleted, ever (a claim deleted and re-created would pass a UID check too late). */
static void expect_never_deleted(const json_t *pvc_records, const char *claim)
{
	json_t *lives = it_lives(pvc_records, NULL, NULL);
	size_t i;
	json_t *l;
	json_array_foreach(lives, i, l) if (str_is(json_string_value(json_object_get(l, "name")), claim) &&
					    json_integer_value(json_object_get(l, "deleting_rv")))
		fail_msg("claim %s was deleted", claim);
	json_decref(lives);
}

static void expect_warning_mentions(struct kube_client *c, const char *ns, const char *reason, const char *needle)
{
	char *selector = xasprintf("reason=%s,involvedObject.name=" SET, reason);
	json_t *ev = it_events(c, ns, selector);
	if (!json_array_size(ev))
		fail_msg("no %s Event", reason);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) {
		const char *m = kube_obj_str(e, "message");
		if (!str_is(kube_obj_str(e, "type"), "Warning") || !m || !strcasestr(m, needle))
			fail_msg("%s Event (%s) does not say \"%s\": %s", reason, kube_obj_str(e, "type"), needle,
				 m ? m : "(none)");
	}
	json_decref(ev);
	free(selector);
}

static void expect_status_mentions(struct kube_client *c, const char *ns, const char *needle)
{
	char *status = status_now(c, ns);
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

static void test_failed_cleanup_retries_with_backoff_then_keeps_the_claim(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-fail");
	json_t *sts = cleaned_statefulset(2, "data", "fail", NULL);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "3");
	create_set(admin, ns, sts, 2, 2);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, &d);

	scale(admin, ns, 1);
	struct ctx x = {.c = admin, .ns = ns, .events = 3};
	/* 5 s + 10 s of backoff between the three attempts. */
	if (!it_wait_every(gave_up, &x, WAIT_MS + 15000, POLL_MS))
		fail_with_log(&d, ns, "the cleanup did not fail 3 times and give up");
	/* A fourth attempt would come after 20 s of backoff. */
	it_sleep_ms(4 * SCALEDOWN_BACKOFF_BASE_MS + 2000);
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);

	json_t *attempts = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(attempts), 3);
	long long created[3];
	for (size_t k = 0; k < 3; k++) {
		const json_t *life = json_array_get(attempts, k);
		char want[8];
		snprintf(want, sizeof(want), "%zu", k + 1);
		assert_true(str_is(first_annotation(life, ANNOTATION_CLEANUP_ATTEMPT), want));
		assert_string_equal(json_string_value(json_object_get(life, "name")), "web-1");
		/* Each attempt failed, and only then was its pod deleted. */
		long long failed = it_first_rv_where(pod_records, json_string_value(json_object_get(life, "uid")),
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
	expect_claims_kept(admin, ns, uids, kept);
	expect_never_deleted(pvc_records, "data-web-1");
	expect_warning_mentions(admin, ns, "CleanupFailed", MESSAGE);
	assert_int_equal(it_event_count(admin, ns, "CleanupSucceeded", SET), 0);
	expect_status_mentions(admin, ns, MESSAGE);

	operator_stop(&d);
	json_decref(attempts);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

/* Past scaledown-timeout a running cleanup pod counts as failed (it would have succeeded after 10 min). */
static void test_cleanup_past_its_timeout_fails(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-timeout");
	json_t *sts = cleaned_statefulset(2, "data", "succeed", "10m");
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TIMEOUT, "3s");
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "1");
	create_set(admin, ns, sts, 2, 2);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, &d);

	scale(admin, ns, 1);
	struct ctx x = {.c = admin, .ns = ns, .events = 1};
	if (!it_wait_every(gave_up, &x, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "the cleanup pod was not stopped at its timeout");
	it_sleep_ms(SCALEDOWN_BACKOFF_BASE_MS + 2000); /* when a wrong retry would come */
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);

	json_t *attempts = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(attempts), 1);
	const json_t *life = json_array_get(attempts, 0);
	/* It ran until the timeout (3 s from a creationTimestamp that has whole seconds only). */
	double ran_ms = json_real_value(json_object_get(life, "deleting_ms")) -
			json_real_value(json_object_get(life, "added_ms"));
	printf("# the cleanup pod ran %.1f s of its 3 s timeout\n", ran_ms / 1000);
	assert_true(ran_ms >= 2000);
	assert_true(json_integer_value(json_object_get(life, "gone_rv")) > 0);
	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	expect_claims_kept(admin, ns, uids, kept);
	expect_never_deleted(pvc_records, "data-web-1");
	char *ev = it_event_message(admin, ns, "CleanupFailed", SET);
	char *status = status_now(admin, ns);
	printf("# CleanupFailed: %s\n# status: %s\n", ev ? ev : "(none)", status ? status : "(none)");
	if (!ev || !(strcasestr(ev, "timeout") || strcasestr(ev, "timed out")))
		fail_msg("CleanupFailed does not say it timed out: %s", ev ? ev : "(none)");
	if (!status || !(strcasestr(status, "timeout") || strcasestr(status, "timed out")))
		fail_msg("%s does not say it timed out: %s", ANNOTATION_SCALEDOWN_STATUS, status ? status : "(none)");
	free(status);
	free(ev);

	operator_stop(&d);
	json_decref(attempts);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

/* ---- deleting the StatefulSet ---- */

static bool statefulset_gone(void *ctx)
{
	json_t *sts = statefulset_now(ctx);
	json_decref(sts);
	return sts == NULL;
}

static void delete_statefulset(struct kube_client *admin, const char *ns, const char *propagation)
{
	struct kube_delete_options o = {.propagation_policy = propagation};
	struct kube_error err;
	if (kube_delete(admin, &KUBE_STATEFULSETS, ns, SET, &o, &err) < 0)
		fail_msg("delete StatefulSet " SET " (%s): %s", propagation, err.message);
}

static bool no_pods_left(void *ctx)
{
	struct ctx *x = ctx;
	json_t *pods = it_list(x->c, &KUBE_PODS, x->ns, NULL);
	bool none = json_array_size(pods) == 0;
	json_decref(pods);
	return none;
}

/* kubectl delete: background propagation; the finalizer holds the StatefulSet until every ordinal is cleaned. */
static void test_deleting_the_statefulset_cleans_every_ordinal(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-delete");
	json_t *sts = cleaned_statefulset(3, "data", "succeed", "1s");
	create_set(admin, ns, sts, 3, 3);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);
	struct it_recorder *sets = it_recorder_start(&KUBE_STATEFULSETS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, &d);

	delete_statefulset(admin, ns, "Background");
	struct ctx x = {.c = admin, .ns = ns};
	if (!it_wait_every(statefulset_gone, &x, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "the StatefulSet was not deleted");
	if (!it_wait_every(no_pods_left, &x, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "pods left after the StatefulSet went");
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);
	json_t *set_records = it_recorder_stop(sets);

	/* Every ordinal, one at a time, highest first, each claim deleted after its pod Succeeded. */
	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(cleanups), 3);
	assert_int_equal(it_most_alive(pod_records, LABEL_CLEANUP_FOR, SET), 1);
	/* The StatefulSet went last: no cleanup pod was left to the garbage collector. */
	json_t *set_lives = it_lives(set_records, NULL, NULL);
	long long set_gone = json_integer_value(json_object_get(it_life_named(set_lives, SET), "gone_rv"));
	assert_true(set_gone > 0);
	json_t *claims = it_lives(pvc_records, NULL, NULL);
	for (int k = 0; k < 3; k++) {
		const json_t *life = json_array_get(cleanups, (size_t)k);
		char pod[16], claim[32];
		snprintf(pod, sizeof(pod), SET "-%d", 2 - k);
		snprintf(claim, sizeof(claim), "data-" SET "-%d", 2 - k);
		assert_string_equal(json_string_value(json_object_get(life, "name")), pod);
		long long succeeded = it_first_rv_where(pod_records, json_string_value(json_object_get(life, "uid")),
							"status.phase", "Succeeded");
		const json_t *cl = it_life_named(claims, claim);
		assert_non_null(cl);
		assert_true(succeeded > 0);
		assert_true(json_integer_value(json_object_get(cl, "deleting_rv")) > succeeded);
		long long pod_deleted = json_integer_value(json_object_get(life, "deleting_rv"));
		if (!pod_deleted || pod_deleted > set_gone)
			fail_msg("cleanup pod %s was left when the StatefulSet went", pod);
	}
	static const char *const all[] = {"data-web-0", "data-web-1", "data-web-2", NULL};
	for (const char *const *c = all; *c; c++)
		assert_true(claim_gone_or_deleting(admin, ns, *c));
	assert_int_equal(it_event_count(admin, ns, "CleanupSucceeded", SET), 3);

	operator_stop(&d);
	json_decref(claims);
	json_decref(set_lives);
	json_decref(cleanups);
	json_decref(set_records);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(sts);
	kube_client_free(admin);
}

/* --cascade=orphan keeps pods and claims: nothing to clean, the finalizer simply goes. */
static void test_orphan_delete_cleans_nothing(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-orphan");
	json_t *sts = cleaned_statefulset(2, "data", "succeed", NULL);
	create_set(admin, ns, sts, 2, 2);
	json_t *uids = claim_uids(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns);
	struct daemon d = operator_start();
	wait_finalizer(admin, ns, &d);

	delete_statefulset(admin, ns, "Orphan");
	struct ctx x = {.c = admin, .ns = ns};
	if (!it_wait_every(statefulset_gone, &x, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "the StatefulSet was not deleted");
	it_sleep_ms(3000); /* for a cleanup pod that should not exist to show up */
	json_t *pod_records = it_recorder_stop(pods);

	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, NULL);
	assert_int_equal(json_array_size(cleanups), 0);
	for (int k = 0; k < 2; k++) {
		char name[16];
		snprintf(name, sizeof(name), SET "-%d", k);
		json_t *pod = it_get(admin, &KUBE_PODS, ns, name);
		if (!pod || kube_obj_str(pod, "metadata.deletionTimestamp"))
			fail_msg("pod %s was not kept", name);
		json_decref(pod);
	}
	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	expect_claims_kept(admin, ns, uids, kept);

	operator_stop(&d);
	json_decref(cleanups);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

/* ---- kill -9 between the steps of a cleanup ---- */

/* An operator that kills itself with SIGKILL right after performing step. */
static void run_until_crash(const char *step, const char *ns)
{
	struct daemon d = daemon_start_operator_crashing(step);
	running_operator = d.pid;
	int rc = daemon_wait_exit(&d, WAIT_MS);
	running_operator = 0;
	if (rc != 128 + SIGKILL)
		fail_with_log(&d, ns, "the operator did not kill itself after %s (exit %d)", step, rc);
	printf("# kill -9 after %s\n", step);
	daemon_cleanup(&d);
}

static bool set_pod_gone(void *ctx)
{
	struct ctx *x = ctx;
	json_t *pod = it_get(x->c, &KUBE_PODS, x->ns, x->name);
	json_decref(pod);
	return pod == NULL;
}

/* Scaled 2 -> 1 with no operator running: the claim set of ordinal 1 waits, orphaned. */
static void scale_down_unattended(struct kube_client *admin, const char *ns)
{
	scale(admin, ns, 1);
	struct ctx x = {.c = admin, .ns = ns, .name = SET "-1"};
	if (!it_wait_every(set_pod_gone, &x, WAIT_MS, POLL_MS))
		fail_msg("the StatefulSet did not remove its pod " SET "-1");
}

/*
 * Two claims, so that the crash after the first DeleteClaim leaves one to
 * delete. Each ordinal's cleanup runs exactly once: one cleanup pod UID
 * ever, across four processes.
 */
static void test_crash_during_successful_cleanup_runs_it_once(void **state)
{
	(void)state;
	static const char *const steps[] = {"CreateCleanupPod", "DeleteClaim", "DeleteCleanupPod"};
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-crashok");
	json_t *sts = cleaned_statefulset(2, "data,logs", "succeed", "2s");
	create_set(admin, ns, sts, 2, 4);
	json_t *uids = claim_uids(admin, ns);
	scale_down_unattended(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);

	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++)
		run_until_crash(steps[k], ns);
	struct daemon d = operator_start();
	static const char *const cleaned_claims[] = {"data-web-1", "logs-web-1", NULL};
	struct ctx x = {.c = admin, .ns = ns, .claims = cleaned_claims};
	if (!it_wait_every(cleaned, &x, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "the cleanup did not end after the crashes");
	it_sleep_ms(2000); /* for a wrong second run to show */
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);

	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(cleanups), 1);
	long long succeeded = it_first_rv_where(
		pod_records, json_string_value(json_object_get(json_array_get(cleanups, 0), "uid")), "status.phase",
		"Succeeded");
	assert_true(succeeded > 0);
	json_t *claims = it_lives(pvc_records, NULL, NULL);
	for (const char *const *c = cleaned_claims; *c; c++) {
		const json_t *cl = it_life_named(claims, *c);
		assert_non_null(cl);
		assert_true(json_integer_value(json_object_get(cl, "deleting_rv")) > succeeded);
	}
	static const char *const kept[] = {"data-web-0", "logs-web-0", NULL};
	expect_claims_kept(admin, ns, uids, kept);

	operator_stop(&d);
	json_decref(claims);
	json_decref(cleanups);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

/* All the attempts were made (recorded), none is left running, and the status reports the outcome. */
static bool attempts_over(void *ctx)
{
	struct ctx *x = ctx;
	json_t *records = it_recorder_records(x->pods);
	json_t *lives = it_lives(records, LABEL_CLEANUP_FOR, SET);
	int made = (int)json_array_size(lives);
	json_decref(lives);
	json_decref(records);
	if (made < x->attempts || cleanup_pods_left(x))
		return false;
	char *status = status_now(x->c, x->ns);
	free(status);
	return status != NULL;
}

/*
 * max-attempts 2, crashes around the first failure: counted once, so
 * exactly one more attempt follows, then the claim is kept.
 */
static void test_crash_during_failing_cleanup_counts_each_failure_once(void **state)
{
	(void)state;
	static const char *const steps[] = {"CreateCleanupPod", "RecordFailure", "DeleteCleanupPod"};
	struct kube_client *admin = it_admin_client();
	const char *ns = namespace_new(admin, "it-sd-crashfail");
	json_t *sts = cleaned_statefulset(2, "data", "fail", NULL);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "2");
	create_set(admin, ns, sts, 2, 2);
	json_t *uids = claim_uids(admin, ns);
	scale_down_unattended(admin, ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, ns), *pvcs = it_recorder_start(&KUBE_PVCS, ns);

	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++)
		run_until_crash(steps[k], ns);
	struct daemon d = operator_start();
	struct ctx x = {.c = admin, .ns = ns, .pods = pods, .attempts = 2};
	/* The second attempt comes 5 s after the first failure, then the operator gives up. */
	if (!it_wait_every(attempts_over, &x, WAIT_MS, POLL_MS))
		fail_with_log(&d, ns, "no second attempt ending in giving up");
	it_sleep_ms(2 * SCALEDOWN_BACKOFF_BASE_MS + 2000); /* when a wrong third attempt would come */
	json_t *pod_records = it_recorder_stop(pods), *pvc_records = it_recorder_stop(pvcs);

	json_t *attempts = it_lives(pod_records, LABEL_CLEANUP_FOR, SET);
	assert_int_equal(json_array_size(attempts), 2);
	assert_true(str_is(first_annotation(json_array_get(attempts, 0), ANNOTATION_CLEANUP_ATTEMPT), "1"));
	assert_true(str_is(first_annotation(json_array_get(attempts, 1), ANNOTATION_CLEANUP_ATTEMPT), "2"));
	static const char *const kept[] = {"data-web-0", "data-web-1", NULL};
	expect_claims_kept(admin, ns, uids, kept);
	expect_never_deleted(pvc_records, "data-web-1");
	assert_int_equal(cleanup_pods_left(&x), 0);
	expect_status_mentions(admin, ns, MESSAGE);

	operator_stop(&d);
	json_decref(attempts);
	json_decref(pvc_records);
	json_decref(pod_records);
	json_decref(uids);
	json_decref(sts);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_failed_cleanup_retries_with_backoff_then_keeps_the_claim, teardown),
		cmocka_unit_test_teardown(test_cleanup_past_its_timeout_fails, teardown),
		cmocka_unit_test_teardown(test_deleting_the_statefulset_cleans_every_ordinal, teardown),
		cmocka_unit_test_teardown(test_orphan_delete_cleans_nothing, teardown),
		cmocka_unit_test_teardown(test_crash_during_successful_cleanup_runs_it_once, teardown),
		cmocka_unit_test_teardown(test_crash_during_failing_cleanup_counts_each_failure_once, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
