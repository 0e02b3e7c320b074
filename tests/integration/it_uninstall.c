/*
 * `kubectl stateful uninstall` against the test bed, run as a user runs it
 * (the plugin as a child process, the admin's KUBECONFIG), with no
 * operator running: what an uninstall leaves behind when the operator is
 * gone first. A StatefulSet deleted while it holds our finalizer hangs in
 * Terminating; the command takes the finalizer off and the deletion
 * completes. Before that, each refusal changes nothing: an operator that
 * still holds its Lease (it would put the finalizer back), a scale-down
 * cleanup pod, a resize in flight. --dry-run changes nothing. Another
 * controller's finalizer on the same object stays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "itest.h"
#include "util/xalloc.h"

#define STUCK "stuck"   /* deleted while it holds our finalizer */
#define SHARED "shared" /* ours and another controller's */
#define OTHER_FINALIZER "example.com/keep-me"

static struct {
	struct kube_client *admin;
	char *ns;
} g;

/* Runs kubectl-stateful uninstall with args; *out (new string) gets stdout and stderr; returns the exit status. */
static int uninstall(char **out, const char *args)
{
	int code = it_sh_capture(out, "%s uninstall %s --operator-namespace %s 2>&1 </dev/null", SOP_PLUGIN_BINARY, args,
				 g.ns);
	printf("# kubectl stateful uninstall %s -> %d\n%s", args, code, *out ? *out : "");
	return code;
}

/* Runs it with -n of the test; the exit status must be code and the output must hold each needle. */
static void expect(int code, const char *args, const char *const *needles)
{
	char *all = xasprintf("%s -n %s", args, g.ns);
	char *out = NULL;
	int got = uninstall(&out, all);
	bool ok = got == code;
	for (const char *const *n = needles; ok && *n; n++)
		ok = out && strstr(out, *n);
	if (!ok)
		fail_msg("kubectl stateful uninstall %s: exit %d (want %d); output above", all, got, code);
	free(out);
	free(all);
}

#define EXPECT(code, args, ...)                                                                                        \
	do {                                                                                                           \
		const char *needles_[] = {__VA_ARGS__, NULL};                                                          \
		expect((code), (args), needles_);                                                                      \
	} while (0)

/* The finalizers of StatefulSet name as one string "a,b" (new), or NULL when the set is gone. */
static char *finalizers_of(const char *name)
{
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, name);
	if (!sts)
		return NULL;
	char *s = xstrdup("");
	size_t i;
	const json_t *f;
	json_array_foreach(json_object_get(json_object_get(sts, "metadata"), "finalizers"), i, f) {
		char *n = xasprintf("%s%s%s", s, *s ? "," : "", json_string_value(f));
		free(s);
		s = n;
	}
	json_decref(sts);
	return s;
}

static void expect_finalizers(const char *name, const char *want)
{
	char *got = finalizers_of(name);
	if (!got || strcmp(got, want))
		fail_msg("sts/%s: finalizers %s, want %s", name, got ? got : "(set gone)", want);
	free(got);
}

/* Nothing changed: the stuck set still hangs with our finalizer, the shared one holds both. */
static void expect_unchanged(void)
{
	expect_finalizers(STUCK, FINALIZER_SCALEDOWN);
	expect_finalizers(SHARED, OTHER_FINALIZER "," FINALIZER_SCALEDOWN);
}

static void create_set(const char *name, const char *finalizers_json)
{
	json_t *sts = it_statefulset(name, 0, "OrderedReady", "data");
	json_object_set_new(json_object_get(sts, "metadata"), "finalizers", it_json("%s", finalizers_json));
	struct kube_error err;
	if (kube_create(g.admin, &KUBE_STATEFULSETS, g.ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet %s: %s", name, err.message);
	json_decref(sts);
}

static int setup(void **state)
{
	(void)state;
	g.admin = it_admin_client();
	g.ns = it_namespace_new(g.admin, "it-uninstall");
	create_set(STUCK, "[\"" FINALIZER_SCALEDOWN "\"]");
	create_set(SHARED, "[\"" OTHER_FINALIZER "\",\"" FINALIZER_SCALEDOWN "\"]");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	it_delete_all_removing_finalizer(g.admin, &KUBE_STATEFULSETS, g.ns, FINALIZER_SCALEDOWN);
	it_delete_all_removing_finalizer(g.admin, &KUBE_STATEFULSETS, g.ns, OTHER_FINALIZER);
	it_namespace_delete(g.admin, g.ns);
	free(g.ns);
	kube_client_free(g.admin);
	return 0;
}

static bool stuck_gone(void *ctx)
{
	(void)ctx;
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, STUCK);
	json_decref(sts);
	return !sts;
}

/* A Lease stateful-operator in the test's namespace, renewed just now: an operator that runs. */
static void fake_running_operator(void)
{
	char now[40];
	time_t t = time(NULL);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S.000000Z", gmtime(&t));
	json_t *lease = it_json("{\"metadata\":{\"name\":\"stateful-operator\"},\"spec\":{\"holderIdentity\":\"it-elsewhere\","
				"\"leaseDurationSeconds\":60,\"renewTime\":\"%s\"}}",
				now);
	struct kube_error err;
	if (kube_create(g.admin, &KUBE_LEASES, g.ns, lease, NULL, &err) < 0)
		fail_msg("create Lease: %s", err.message);
	json_decref(lease);
}

static void delete_object(const struct kube_resource *r, const char *name)
{
	struct kube_error err;
	static const long at_once = 0;
	struct kube_delete_options del = {.propagation_policy = "Background", .grace_period_seconds = &at_once};
	if (kube_delete(g.admin, r, g.ns, name, &del, &err) < 0 && err.code != 404)
		fail_msg("delete %s %s: %s", r->plural, name, err.message);
}

static bool cleanup_pod_gone(void *ctx)
{
	json_t *pod = it_get(g.admin, &KUBE_PODS, g.ns, ctx);
	json_decref(pod);
	return !pod;
}

static void test_refusals_then_removal(void **state)
{
	(void)state;
	/* The stuck set: deleted, held by our finalizer, and nothing will remove it. */
	delete_object(&KUBE_STATEFULSETS, STUCK);
	it_sleep_ms(2000);
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, STUCK);
	assert_non_null(sts);
	assert_true(kube_obj_terminating(sts));
	json_decref(sts);

	/* --dry-run: says what it would do, changes nothing. */
	EXPECT(0, "--dry-run", "statefulset.apps/" STUCK " -n ", ": would remove finalizer " FINALIZER_SCALEDOWN " (Terminating",
	       "statefulset.apps/" SHARED " -n ", "dry run: 2 StatefulSets hold finalizer", "nothing changed");
	expect_unchanged();
	/* Every namespace without -n (other tests' leftovers may refuse it: only the listing is checked). */
	char *out = NULL;
	(void)uninstall(&out, "--dry-run");
	char *line = xasprintf("statefulset.apps/" STUCK " -n %s: would remove finalizer", g.ns);
	if (!out || !strstr(out, line))
		fail_msg("uninstall --dry-run (every namespace) does not list %s", line);
	free(line);
	free(out);
	expect_unchanged();

	/* An operator holds its Lease: it would put the finalizer back. */
	fake_running_operator();
	EXPECT(1, "", "error: the operator still runs (", "it-elsewhere leads (Lease ",
	       "scale deployment stateful-operator --replicas=0");
	expect_unchanged();
	delete_object(&KUBE_LEASES, "stateful-operator");

	/* A scale-down cleanup runs (kwok keeps the pod Running): refused with how to end it. */
	json_t *pod = it_json("{\"metadata\":{\"name\":\"" SHARED "-3\",\"labels\":{\"" LABEL_CLEANUP_FOR "\":\"" SHARED
			      "\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"cleanup\"}]}}");
	struct kube_error err;
	if (kube_create(g.admin, &KUBE_PODS, g.ns, pod, NULL, &err) < 0)
		fail_msg("create cleanup pod: %s", err.message);
	json_decref(pod);
	EXPECT(1, "", "error: statefulset.apps/" SHARED " -n ", ": a scale-down cleanup runs: pod " SHARED "-3",
	       "to go on: let it finish (kubectl stateful cleanup sts/" SHARED, "kubectl delete pod " SHARED "-3",
	       "1 StatefulSet with work in flight: nothing changed");
	expect_unchanged();
	/* --dry-run says the same and exits as the command would. */
	EXPECT(1, "--dry-run", "a scale-down cleanup runs", "the command would be refused");
	expect_unchanged();
	delete_object(&KUBE_PODS, SHARED "-3");
	static char cleanup_pod[] = SHARED "-3";
	if (!it_wait(cleanup_pod_gone, cleanup_pod, 30000))
		fail_msg("cleanup pod not gone");

	/* A resize in flight on a set without our finalizer holds the command back too. */
	create_set("resizing", "[]");
	if (it_sh("kubectl annotate -n %s sts/resizing '" ANNOTATION_RESIZE_STATE
		  "={\"phase\":\"Copying\",\"strategy\":\"copy\"}' >/dev/null",
		  g.ns))
		fail_msg("kubectl annotate failed");
	EXPECT(1, "", "statefulset.apps/resizing -n ", ": a resize is in flight (phase Copying)",
	       "kubectl stateful abort sts/resizing");
	expect_unchanged();
	delete_object(&KUBE_STATEFULSETS, "resizing");

	/* Nothing in flight: our finalizer goes, the stuck deletion completes, the other finalizer stays. */
	EXPECT(0, "", "statefulset.apps/" STUCK " -n ", ": finalizer " FINALIZER_SCALEDOWN " removed (Terminating",
	       "statefulset.apps/" SHARED " -n ", "2 finalizers removed");
	if (!it_wait(stuck_gone, NULL, 30000))
		fail_msg("sts/" STUCK " still there 30 s after its finalizer was removed");
	expect_finalizers(SHARED, OTHER_FINALIZER);
	/* Again: nothing left to remove. */
	EXPECT(0, "", "no StatefulSet in namespace ", "holds finalizer " FINALIZER_SCALEDOWN "; nothing to remove");
	expect_finalizers(SHARED, OTHER_FINALIZER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals_then_removal),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
