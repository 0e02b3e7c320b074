/*
 * Issue 27, finding 5, on the test bed: cluster text a tenant writes
 * reaches no terminal through kubectl-stateful. A StatefulSet's
 * resize-status holds ESC ] 0;x BEL ESC [2J and U+009B 2J (a window title,
 * clear screen twice over), its resize-state and scaledown-state (JSON in
 * annotations) and scaledown-status hold the same, and so do a Warning
 * Event about it and a StatefulCluster's members and condition. Every
 * command the plugin has, run as a user runs it (the built binary,
 * KUBECONFIG from the environment; stdout and stderr together), prints
 * not one control: no ESC, no BEL, no U+009B, no raw 0x9b, no C1, no bidi
 * control. resize --wait is also run on a terminal (script(1)), where the
 * only escape sequences allowed are its own redraw's.
 *
 * No operator runs: the set carries stateful-operator.io/ignore so that an
 * operator of another test leaves it alone, and a Lease in the test's
 * namespace (told with --operator-namespace) stands for one, so resize and
 * abort get past their check.
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
#include "terminal_scan.h"
#include "util/xalloc.h"

#define SET "evil"
#define CLUSTER "coder"
/* The text: a title (OSC 0;x BEL), clear screen as ESC [2J and as U+009B 2J; then CR LF, DEL, an RLO. */
#define DIRTY "\033]0;x\007\033[2J\xc2\x9b" "2J\r\n\x7f\xe2\x80\xae"

static struct {
	struct kube_client *admin;
	char *ns;
} g;

static void create(const struct kube_resource *r, json_t *obj)
{
	struct kube_error err;
	if (!obj)
		fail_msg("%s manifest: bad arguments", r->plural);
	if (kube_create(g.admin, r, g.ns, obj, NULL, &err) < 0)
		fail_msg("create %s: %s", r->plural, err.message);
	json_decref(obj);
}

/* The StatefulCluster's status as a tenant with statefulclusters/status (or a bug) could leave it. */
static void write_cluster_status(void)
{
	char now[32];
	time_t t = time(NULL);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	json_t *status = json_pack("{s:{s:[{s:s, s:s, s:s, s:b, s:s, s:s}], s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status",
				   "members", "identity", "m-0 " DIRTY, "pod", CLUSTER "-0", "node", "node " DIRTY, "ready", 0,
				   "revision", "r " DIRTY, "phase", "Failed " DIRTY, "conditions", "type", "ReplicaFailure",
				   "status", "True", "reason", "PodFailed", "message", "failing " DIRTY, "lastTransitionTime",
				   now);
	struct kube_error err;
	if (kube_patch(g.admin, &KUBE_STATEFULCLUSTERS, g.ns, CLUSTER, "status", KUBE_PATCH_MERGE, status, NULL, &err) < 0)
		fail_msg("patch the StatefulCluster's status: %s", err.message);
	json_decref(status);
}

static int setup(void **state)
{
	(void)state;
	g.admin = it_admin_client();
	g.ns = it_namespace_new(g.admin, "it-plugin-text");

	json_t *rs = json_pack("{s:s, s:s, s:s, s:[i], s:{s:[i], s:s}}", "phase", "Failed", "strategy", "copy", "message",
			       "why " DIRTY, "ordinals", 0, "batch", "ordinals", 0, "step", "Copy " DIRTY);
	json_t *ss = json_pack("{s:{s:{s:i, s:s}}}", "ordinals", "1", "failures", 3, "message", "exit " DIRTY);
	char *rs_text = json_dumps(rs, JSON_COMPACT), *ss_text = json_dumps(ss, JSON_COMPACT);
	json_t *sts = it_statefulset(SET, 0, "OrderedReady", "data");
	it_set_annotation(sts, ANNOTATION_IGNORE, "true");
	it_set_annotation(sts, ANNOTATION_RESIZE_STATUS, "status " DIRTY);
	it_set_annotation(sts, ANNOTATION_RESIZE_STATE, rs_text);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_STATUS, "Failed: " DIRTY);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_STATE, ss_text);
	create(&KUBE_STATEFULSETS, sts);
	free(rs_text);
	free(ss_text);
	json_decref(rs);
	json_decref(ss);

	char now[32];
	time_t t = time(NULL);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	create(&KUBE_EVENTS, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:i, s:{s:s}}",
				       "apiVersion", "v1", "kind", "Event", "metadata", "name", SET ".dirty",
				       "involvedObject", "apiVersion", "apps/v1", "kind", "StatefulSet", "name", SET,
				       "namespace", g.ns, "type", "Warning", "reason", "ResizeFailed" DIRTY, "message",
				       "msg " DIRTY, "firstTimestamp", now, "lastTimestamp", now, "count", 1, "source",
				       "component", "tenant"));

	create(&KUBE_STATEFULCLUSTERS,
	       it_json("{\"apiVersion\":\"" CLUSTER_API_VERSION "\",\"kind\":\"" CLUSTER_KIND "\",\"metadata\":{\"name\":"
		       "\"" CLUSTER "\"},\"spec\":{\"replicas\":0,\"serviceName\":\"" CLUSTER "\",\"selector\":{\"matchLabels\":"
		       "{\"app\":\"" CLUSTER "\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"" CLUSTER "\"}},\"spec\":"
		       "{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}}}"));
	write_cluster_status();

	/* An operator that renewed its Lease just now, as far as the plugin can tell. */
	char renewed[40];
	strftime(renewed, sizeof(renewed), "%Y-%m-%dT%H:%M:%S.000000Z", gmtime(&t));
	create(&KUBE_LEASES, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:i}}", "apiVersion", "coordination.k8s.io/v1",
				       "kind", "Lease", "metadata", "name", "stateful-operator", "spec", "holderIdentity",
				       "op " DIRTY, "renewTime", renewed, "leaseDurationSeconds", 3600));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	it_namespace_delete(g.admin, g.ns);
	free(g.ns);
	kube_client_free(g.admin);
	return 0;
}

/*
 * Runs kubectl-stateful with args (-n and --operator-namespace added),
 * stdout and stderr together: not one control in them, whatever it printed.
 * Returns whether it exited with code and showed shows.
 */
static bool inert(const char *args, int code, const char *shows, bool quiet)
{
	char *out = NULL;
	int got = it_sh_capture(&out, "%s %s -n %s --operator-namespace %s 2>&1 </dev/null", SOP_PLUGIN_BINARY, args,
				g.ns, g.ns);
	printf("# kubectl stateful %s -> %d, %zu bytes\n", args, got, strlen(out));
	terminal_expect_safe(args, out, false);
	bool ok = got == code && strstr(out, shows);
	if (!ok && !quiet)
		fail_msg("kubectl stateful %s: exit %d (want %d), \"%s\" %s in:\n%s", args, got, code, shows,
			 strstr(out, shows) ? "present" : "missing", out);
	free(out);
	return ok;
}

static void expect_inert(const char *args, int code, const char *shows)
{
	inert(args, code, shows, false);
}

/*
 * The same for a command that reads the StatefulCluster's status: an
 * operator another test runs on the shared test bed may rewrite it (its
 * cluster controller has no ignore annotation), so it is written again
 * before each try, and a few tries must see it.
 */
static void expect_inert_cluster(const char *args, const char *shows)
{
	for (int i = 0; i < 5; i++) {
		write_cluster_status();
		if (inert(args, 0, shows, i < 4))
			return;
		it_sleep_ms(500);
	}
}

static void test_every_command(void **state)
{
	(void)state;
	expect_inert("status", 0, "why ");
	expect_inert("status sts/" SET, 0, "why ");
	expect_inert("status -o json", 0, "\"why ");
	expect_inert("status -o yaml", 0, "\"why ");
	expect_inert_cluster("status stc/" CLUSTER, "failing ");
	expect_inert("explain sts/" SET, 0, "msg ");
	expect_inert("cleanup sts/" SET, 0, "exit ");
	expect_inert_cluster("members stc/" CLUSTER, "m-0 ");
	expect_inert_cluster("members stc/" CLUSTER " -o json", "m-0 ");
	expect_inert_cluster("members stc/" CLUSTER " -o yaml", "m-0 ");
	expect_inert("abort sts/" SET, 0, "the resize was status ");
	/* The state is Failed and has no start: the wait takes it for this request's, draws it, and ends with 1. */
	expect_inert("resize sts/" SET " data=2Gi --wait --timeout 30s", 1, "why ");
}

/* On a terminal: the redraw's own sequences (ESC[2K, ESC[<n>A) and nothing of the tenant's. */
static void test_resize_wait_on_a_terminal(void **state)
{
	(void)state;
	char *out = NULL;
	int code = it_sh_capture(&out,
				 "script -qec 'stty cols 120 rows 40; %s resize sts/%s data=3Gi --wait --timeout 30s -n %s "
				 "--operator-namespace %s' /dev/null </dev/null",
				 SOP_PLUGIN_BINARY, SET, g.ns, g.ns);
	printf("# (terminal) kubectl stateful resize --wait -> %d, %zu bytes\n", code, strlen(out));
	terminal_expect_safe("resize --wait on a terminal", out, true);
	if (code != 1 || !strstr(out, "\033[2K") || !strstr(out, "sts/" SET ": status "))
		fail_msg("resize --wait on a terminal: exit %d (want 1), frame drawn: %s", code,
			 strstr(out, "\033[2K") ? "yes" : "no");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_command),
		cmocka_unit_test(test_resize_wait_on_a_terminal),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
