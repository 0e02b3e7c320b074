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
 * No operator of this test runs: a Lease in the test's namespace (told
 * with --operator-namespace) stands for one, so resize and abort get past
 * their check; operators of other tests on the shared test bed are kept
 * from rewriting what the test wrote (fence_namespace).
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
#include "util/strbuf.h"
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

/*
 * Other tests on the shared test bed run operators over every namespace:
 * theirs would rewrite the StatefulCluster's status and drop the unsealed
 * scaledown-state. A ValidatingAdmissionPolicy bound to this test's
 * namespace alone refuses every update there but the test's own (the
 * admin's), so what the plugin reads is what the test wrote.
 */
static void fence_namespace(void)
{
	char *me = it_sh_output("kubectl auth whoami -o jsonpath='{.status.userInfo.username}'");
	int rc = it_sh("kubectl apply -f - >/dev/null <<'EOF'\n"
		       "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n"
		       "{\"apiVersion\": \"admissionregistration.k8s.io/v1\", \"kind\": \"ValidatingAdmissionPolicy\",\n"
		       " \"metadata\": {\"name\": \"%s\"},\n"
		       " \"spec\": {\"failurePolicy\": \"Fail\", \"matchConstraints\": {\"resourceRules\": [{\"apiGroups\": [\"apps\", "
		       "\"stateful-operator.io\"], \"apiVersions\": [\"*\"], \"operations\": [\"UPDATE\"], \"resources\": [\"*\", "
		       "\"*/status\"]}]},\n"
		       "  \"validations\": [{\"expression\": \"request.userInfo.username == '%s'\", \"message\": \"it_plugin_text "
		       "keeps what it wrote here as it wrote it\"}]}},\n"
		       "{\"apiVersion\": \"admissionregistration.k8s.io/v1\", \"kind\": \"ValidatingAdmissionPolicyBinding\",\n"
		       " \"metadata\": {\"name\": \"%s\"},\n"
		       " \"spec\": {\"policyName\": \"%s\", \"validationActions\": [\"Deny\"], \"matchResources\": "
		       "{\"namespaceSelector\": {\"matchLabels\": {\"kubernetes.io/metadata.name\": \"%s\"}}}}}\n"
		       "]}\n"
		       "EOF",
		       g.ns, me, g.ns, g.ns, g.ns);
	if (rc)
		fail_msg("cannot fence namespace %s with a ValidatingAdmissionPolicy", g.ns);
	free(me);
}

static void unfence_namespace(void)
{
	it_sh("kubectl delete --ignore-not-found validatingadmissionpolicybinding/%s validatingadmissionpolicy/%s "
	      ">/dev/null",
	      g.ns, g.ns);
}

/* The fence holds once an update by anyone else (a dry run, as a cluster admin of another name) is refused by it. */
static bool fenced(void *ctx)
{
	(void)ctx;
	char *out = NULL;
	it_sh_capture(&out, "kubectl --as=it-plugin-text-probe --as-group=system:masters -n %s annotate --dry-run=server "
			    "--overwrite statefulset/%s probe=1 2>&1",
		      g.ns, SET);
	bool held = strstr(out, "it_plugin_text keeps") != NULL;
	free(out);
	return held;
}

static int setup(void **state)
{
	(void)state;
	g.admin = it_admin_client();
	g.ns = it_namespace_new(g.admin, "it-plugin-text");
	json_t *sts = it_statefulset(SET, 0, "OrderedReady", "data");
	it_set_annotation(sts, ANNOTATION_IGNORE, "true");
	create(&KUBE_STATEFULSETS, sts);
	create(&KUBE_STATEFULCLUSTERS,
	       it_json("{\"apiVersion\":\"" CLUSTER_API_VERSION "\",\"kind\":\"" CLUSTER_KIND "\",\"metadata\":{\"name\":"
		       "\"" CLUSTER "\"},\"spec\":{\"replicas\":0,\"serviceName\":\"" CLUSTER "\",\"selector\":{\"matchLabels\":"
		       "{\"app\":\"" CLUSTER "\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"" CLUSTER "\"}},\"spec\":"
		       "{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}}}"));
	fence_namespace();
	if (!it_wait_every(fenced, NULL, 30000, 250))
		fail_msg("the ValidatingAdmissionPolicy fencing %s never took effect", g.ns);

	/* Now nobody else may change them: the tenant's text. */
	json_t *rs = json_pack("{s:s, s:s, s:s, s:[i], s:{s:[i], s:s}}", "phase", "Failed", "strategy", "copy", "message",
			       "why " DIRTY, "ordinals", 0, "batch", "ordinals", 0, "step", "Copy " DIRTY);
	json_t *ss = json_pack("{s:{s:{s:i, s:s}}}", "ordinals", "1", "failures", 3, "message", "exit " DIRTY);
	char *rs_text = json_dumps(rs, JSON_COMPACT), *ss_text = json_dumps(ss, JSON_COMPACT);
	json_t *ann = json_pack("{s:{s:{s:s, s:s, s:s, s:s}}}", "metadata", "annotations", ANNOTATION_RESIZE_STATUS,
				"status " DIRTY, ANNOTATION_RESIZE_STATE, rs_text, ANNOTATION_SCALEDOWN_STATUS,
				"Failed: " DIRTY, ANNOTATION_SCALEDOWN_STATE, ss_text);
	struct kube_error err;
	if (kube_patch(g.admin, &KUBE_STATEFULSETS, g.ns, SET, NULL, KUBE_PATCH_MERGE, ann, NULL, &err) < 0)
		fail_msg("annotate sts/%s: %s", SET, err.message);
	json_decref(ann);
	free(rs_text);
	free(ss_text);
	json_decref(rs);
	json_decref(ss);
	write_cluster_status();

	char now[32];
	time_t t = time(NULL);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	create(&KUBE_EVENTS, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:i, s:{s:s}}",
				       "apiVersion", "v1", "kind", "Event", "metadata", "name", SET ".dirty",
				       "involvedObject", "apiVersion", "apps/v1", "kind", "StatefulSet", "name", SET,
				       "namespace", g.ns, "type", "Warning", "reason", "ResizeFailed" DIRTY, "message",
				       "msg " DIRTY, "firstTimestamp", now, "lastTimestamp", now, "count", 1, "source",
				       "component", "tenant"));

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
	unfence_namespace();
	it_namespace_delete(g.admin, g.ns);
	free(g.ns);
	kube_client_free(g.admin);
	return 0;
}

/* What went wrong, one line per command, so one run names every command that lets a control through. */
static struct strbuf problems = STRBUF_INIT;

/*
 * Runs kubectl-stateful with args (-n and --operator-namespace added),
 * stdout and stderr together. A control in them is a problem, whatever
 * else; so is another exit status than code, or no shows in the output.
 */
static void expect_inert(const char *args, int code, const char *shows)
{
	char *out = NULL;
	int got = it_sh_capture(&out, "%s %s -n %s --operator-namespace %s 2>&1 </dev/null", SOP_PLUGIN_BINARY, args,
				g.ns, g.ns);
	printf("# kubectl stateful %s -> %d, %zu bytes\n", args, got, strlen(out));
	const char *what = NULL;
	long at = terminal_scan(out, strlen(out), false, &what);
	if (at >= 0)
		strbuf_appendf(&problems, "  %s: %s at byte %ld\n", args, what, at);
	else if (got != code || !strstr(out, shows))
		strbuf_appendf(&problems, "  %s: exit %d (want %d), \"%s\" %s\n", args, got, code, shows,
			       strstr(out, shows) ? "present" : "missing");
	free(out);
}

static void test_every_command(void **state)
{
	(void)state;
	expect_inert("status", 0, "why ");
	expect_inert("status sts/" SET, 0, "why ");
	expect_inert("status -o json", 0, "\"why ");
	expect_inert("status -o yaml", 0, ": why "); /* clean already (text_sanitize): a plain scalar */
	expect_inert("status -o wide", 0, "why ");
	expect_inert("status -o 'jsonpath={[*].progress}'", 0, "why ");
	expect_inert("status -o name --no-headers", 0, "statefulset.apps/");
	expect_inert("status stc/" CLUSTER, 0, "failing ");
	expect_inert("explain sts/" SET, 0, "msg ");
	expect_inert("cleanup sts/" SET, 0, "exit ");
	expect_inert("members stc/" CLUSTER, 0, "m-0 ");
	expect_inert("members stc/" CLUSTER " -o json", 0, "m-0 ");
	expect_inert("members stc/" CLUSTER " -o yaml", 0, "m-0 ");
	expect_inert("members stc/" CLUSTER " -o wide", 0, "node ");
	expect_inert("members stc/" CLUSTER " -o 'jsonpath={[*].node}'", 0, "node ");
	expect_inert("abort sts/" SET, 0, "the resize was status ");
	/* The state is Failed and has no start: the wait takes it for this request's, draws it, and ends with 1. */
	expect_inert("resize sts/" SET " data=2Gi --wait --timeout 30s", 1, "why ");
	if (problems.len) {
		fprintf(stderr, "commands that failed:\n%s", problems.buf);
		strbuf_release(&problems);
		fail_msg("a tenant's text reached the terminal, or a command did not run as it should (above)");
	}
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
