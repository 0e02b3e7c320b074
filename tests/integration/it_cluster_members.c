/*
 * StatefulCluster members the user names, on the test bed (issue 32):
 * `kubectl stateful members remove` takes exactly the member named (not the
 * newest), its claim kept as whenScaled says; `members replace` rebuilds a
 * member as a new identity with a new claim, its own claim kept as
 * whenReplaced says, the request gone once done; refusals: the plugin
 * refuses a name that is not a member, the API server one of another
 * cluster, the operator a name it never handed out (nothing changes, not
 * even the lower replicas applied with it) and a malformed replace-members
 * annotation (removed, nothing replaced); two replacements asked at once
 * with maxUnavailable 1 go one after the other.
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
#include "client/kube_object.h"
#include "controllers/contract.h"
#include "util/duration.h"

/* The operator leading from a Lease in the test's namespace: the plugin then sees it running. */
static void start_leading_operator(struct cl_test *t)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--leader-elect",
			      "--leader-election-namespace", t->ns, "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", NULL};
	daemon_start(&t->d, args, NULL);
	if (!daemon_wait_log(&t->d, "became leader", 30000) || !daemon_wait_log(&t->d, "all caches synced", 30000))
		cl_fail_with_log(t, "operator did not start leading");
}

/* Runs kubectl-stateful with args in t's namespace; stdout and stderr into *out (new string). Its exit status. */
static int plugin(struct cl_test *t, char **out, const char *args)
{
	int code = it_sh_capture(out, "%s %s -n %s --operator-namespace %s 2>&1 </dev/null", SOP_PLUGIN_BINARY, args,
				 t->ns, t->ns);
	if (!*out)
		*out = xstrdup("");
	printf("# kubectl stateful %s -> %d\n%s", args, code, *out);
	return code;
}

/* Runs the plugin: its exit status must be code and its output must contain want. */
static void expect_plugin(struct cl_test *t, int code, const char *want, const char *args)
{
	char *out = NULL;
	int got = plugin(t, &out, args);
	if (got != code || !strstr(out, want))
		cl_fail_with_log(t, "kubectl stateful %s: exit %d (want %d), output does %scontain \"%s\":\n%s", args, got,
				 code, strstr(out, want) ? "" : "not ", want, out);
	free(out);
}

struct event_wait {
	struct cl_test *t;
	const char *reason, *needle;
};

static bool event_seen(void *ctx)
{
	struct event_wait *w = ctx;
	char *selector = xasprintf("reason=%s,involvedObject.name=x", w->reason);
	json_t *ev = it_events(w->t->admin, w->t->ns, selector);
	free(selector);
	bool seen = false;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
		seen |= kube_obj_str(e, "message") && strstr(kube_obj_str(e, "message"), w->needle);
	json_decref(ev);
	return seen;
}

/* Waits for an Event about stc/x with reason whose message contains needle, of type; fails the test after CL_WAIT_MS. */
static void wait_event(struct cl_test *t, const char *reason, const char *needle, const char *type)
{
	struct event_wait w = {t, reason, needle};
	cl_wait_or_fail(t, event_seen, &w, "no %s Event saying %s", reason, needle);
	cl_expect_events(t, reason, "x", type);
}

/* stc/x as the API server has it now; fails the test when it is gone. */
static json_t *must_get(struct cl_test *t)
{
	json_t *stc = cl_get(t, "x");
	if (!stc)
		cl_fail_with_log(t, "stc/x is gone");
	return stc;
}

/* Asserts status.members is exactly want ("x-0,x-1") and so are the pods, none going: nothing was removed. */
static void expect_members_untouched(struct cl_test *t, const char *want)
{
	json_t *stc = must_get(t);
	char *have = cl_member_list(stc);
	json_t *pods = cl_member_pods(t, "x");
	size_t i, live = 0;
	json_t *pod;
	json_array_foreach(pods, i, pod)
		live += !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
	size_t want_n = 1;
	for (const char *c = want; *c; c++)
		want_n += *c == ',';
	if (strcmp(have, want) || live != want_n || json_array_size(pods) != want_n)
		cl_fail_with_log(t, "members %s with %zu pods (%zu live), want %s and their pods untouched", have,
				 json_array_size(pods), live, want);
	free(have);
	json_decref(pods);
	json_decref(stc);
}

static void test_remove_and_replace_chosen_members(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-members");
	start_leading_operator(t);
	json_t *stc = cl_manifest("x", 3, "data");
	cl_create(t, stc);
	json_decref(stc);
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-1,x-2"));
	it_wait_ready_and_bound(t->admin, t->ns, 3, 3, CL_WAIT_MS);
	char *uid0 = cl_claim_uid(t, "data-x-0"), *uid1 = cl_claim_uid(t, "data-x-1");

	/* remove: exactly x-1 goes (a plain scale-down would take the newest, x-2), its claim kept (whenScaled Retain) */
	expect_plugin(t, 0, "member x-1 removed", "members remove stc/x x-1");
	stc = cl_wait_settled(t, "x", 2, "x-0,x-2");
	const json_t *spec = json_object_get(stc, "spec");
	json_t *want = json_pack("[s]", "x-1");
	if (cl_int_at(stc, "spec.replicas") != 2 || !json_equal(json_object_get(spec, "removeMembers"), want))
		cl_fail_with_log(t, "after members remove: spec.replicas %lld, removeMembers not [x-1]",
				 cl_int_at(stc, "spec.replicas"));
	json_decref(want);
	json_decref(stc);
	cl_expect_claim_kept(t, "data-x-1", uid1);
	wait_event(t, "MemberRemoved", "x-1", "Normal");

	/* replace: x-0 is rebuilt as x-3 with a new claim; its own claim kept (whenReplaced Retain) */
	expect_plugin(t, 0, "statefulcluster.stateful-operator.io/x\n", "members replace stc/x x-0 -o name");
	stc = cl_wait_settled(t, "x", 2, "x-2,x-3");
	if (kube_obj_annotation(stc, ANNOTATION_CLUSTER_REPLACE) || cl_int_at(stc, "status.nextIdentity") != 4)
		cl_fail_with_log(t, "after the replacement: the request is still there, or nextIdentity is not 4");
	json_decref(stc);
	cl_expect_claim_kept(t, "data-x-0", uid0);
	char *uid3 = cl_claim_uid(t, "data-x-3");
	if (!uid3)
		cl_fail_with_log(t, "x-3 has no claim data-x-3");
	wait_event(t, "MemberReplaced", "x-0", "Normal");

	/* refused before any request: names that are not members (any more) */
	expect_plugin(t, 2, "x-1 is not a member of stc/x (members: x-2, x-3)", "members remove stc/x x-1");
	expect_plugin(t, 2, "x-7 is not a member of stc/x", "members replace stc/x x-7");
	expect_plugin(t, 2, "\"y-1\" is not a member name of stc/x", "members replace stc/x y-1");
	/* the API server refuses another cluster's name */
	json_t *patch = json_pack("{s:{s:[s]}}", "spec", "removeMembers", "y-1");
	struct kube_error err;
	if (kube_patch(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, "x", NULL, KUBE_PATCH_MERGE, patch, NULL, &err) == 0 ||
	    err.code != 422 || !strstr(err.message, "spec.removeMembers"))
		cl_fail_with_log(t, "removeMembers [y-1] was not refused naming spec.removeMembers: %ld %s", err.code,
				 err.message);
	json_decref(patch);

	/* -o json: the StatefulCluster as patched */
	char *out = NULL;
	if (plugin(t, &out, "members remove stc/x x-2 -o json") != 0)
		cl_fail_with_log(t, "members remove -o json failed:\n%s", out);
	json_t *doc = json_loads(out, 0, NULL);
	want = json_pack("[s, s]", "x-1", "x-2");
	if (!doc || cl_int_at(doc, "spec.replicas") != 1 ||
	    !json_equal(json_object_get(json_object_get(doc, "spec"), "removeMembers"), want))
		cl_fail_with_log(t, "members remove -o json did not print the patched StatefulCluster:\n%s", out);
	json_decref(want);
	json_decref(doc);
	free(out);
	json_decref(cl_wait_settled(t, "x", 1, "x-3"));
	cl_expect_claim_kept(t, "data-x-3", uid3);
	free(uid0);
	free(uid1);
	free(uid3);
}

static void test_refusals_change_nothing_and_max_unavailable_holds(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-members-refused");
	start_leading_operator(t);
	json_t *stc = cl_manifest("x", 3, "data");
	/* Ready 2 s after start: a replacement's successor is down for a while. */
	cl_template_annotate(stc, CL_READY_AFTER, "2s");
	cl_create(t, stc);
	json_decref(stc);
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-1,x-2"));

	/* a name never handed out, with replicas lowered: refused, and nobody goes */
	cl_patch(t, "x", "{\"spec\": {\"replicas\": 2, \"removeMembers\": [\"x-7\"]}}");
	wait_event(t, "InvalidSpec", "\"x-7\"", "Warning");
	it_sleep_ms(2000); /* a wrong removal would show by now */
	expect_members_untouched(t, "x-0,x-1,x-2");
	/* corrected: exactly the member named goes */
	cl_patch(t, "x", "{\"spec\": {\"removeMembers\": [\"x-0\"]}}");
	json_decref(cl_wait_settled(t, "x", 2, "x-1,x-2"));

	/* a malformed request: refused, removed, nothing replaced */
	if (it_sh("kubectl annotate -n %s stc/x %s=x-1,bogus >/dev/null", t->ns, ANNOTATION_CLUSTER_REPLACE))
		cl_fail_with_log(t, "kubectl annotate failed");
	wait_event(t, "ReplaceRefused", "\"bogus\"", "Warning");
	stc = must_get(t);
	if (kube_obj_annotation(stc, ANNOTATION_CLUSTER_REPLACE))
		cl_fail_with_log(t, "the refused request is still there");
	json_decref(stc);
	it_sleep_ms(2000);
	expect_members_untouched(t, "x-1,x-2");

	/* two at once, maxUnavailable 1: x-4 is made only once x-3 (x-1's successor) is Ready */
	if (it_sh("kubectl annotate -n %s stc/x %s=x-1,x-2 >/dev/null", t->ns, ANNOTATION_CLUSTER_REPLACE))
		cl_fail_with_log(t, "kubectl annotate failed");
	wait_event(t, "ReplaceWaiting", "x-2", "Normal");
	json_decref(cl_wait_settled(t, "x", 2, "x-3,x-4"));
	json_t *x3 = it_get(t->admin, &KUBE_PODS, t->ns, "x-3"), *x4 = it_get(t->admin, &KUBE_PODS, t->ns, "x-4");
	const json_t *ready = kube_array_find(json_object_get(json_object_get(x3, "status"), "conditions"), "type", "Ready");
	int64_t ready3 = rfc3339_seconds(kube_obj_str(ready, "lastTransitionTime"));
	int64_t made4 = rfc3339_seconds(kube_obj_str(x4, "metadata.creationTimestamp"));
	if (ready3 < 0 || made4 < ready3)
		cl_fail_with_log(t, "x-4 was made at %lld, before x-3 was Ready (%lld): two members down at once",
				 (long long)made4, (long long)ready3);
	json_decref(x3);
	json_decref(x4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cl_unit_test(test_remove_and_replace_chosen_members),
		cl_unit_test(test_refusals_change_nothing_and_max_unavailable_holds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
