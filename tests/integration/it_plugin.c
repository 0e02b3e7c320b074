/*
 * The kubectl plugin (kubectl-stateful) against the test bed, run as a
 * user runs it (a child process, KUBECONFIG from the environment, the
 * admin's identity; standard output not a terminal): every bad input with
 * its message and exit status, "no operator running" before the operator
 * starts, resize --wait through a copy (kwok plays the copy Jobs) to exit
 * 0, status (table with who leads, -A, -o json/yaml/name/wide/jsonpath, --no-headers) during a
 * copy, abort, resize --dry-run (client and server: nothing stored), explain of an
 * abort and of a refusal, a refused and a failed resize --wait exiting 1
 * with the operator's message, cleanup and cleanup --retry of a claim set
 * given up, and members of a StatefulCluster; shell completion's object
 * names (__complete), resize --class moving the volumes to another class,
 * and the plugin run by kubectl itself (found by its name on PATH). The
 * progress bar drawn in a real terminal from a real copy pod's log is
 * tests/realnode/rn_plugin.c.
 *
 * The operator runs with --leader-elect and its Lease in the test's
 * namespace, which the plugin is told with --operator-namespace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "daemon.h"
#include "itest.h"
#include "scaledown_steps.h"
#include "util/xalloc.h"

#define SET "db"

static struct {
	struct kube_client *admin;
	char *ns;
	struct daemon d;
	bool running;
} g;

/*
 * Runs program (the shell words that start the plugin) with args, -n and
 * --operator-namespace of the test added, stdout and stderr together into
 * *out (new string, may be NULL); returns its exit status.
 */
static int run(char **out, const char *program, const char *args)
{
	char *text = NULL;
	int code = it_sh_capture(&text, "%s %s -n %s --operator-namespace %s 2>&1 </dev/null", program, args, g.ns,
				 g.ns);
	printf("# %skubectl stateful %s -> %d\n", strcmp(program, SOP_PLUGIN_BINARY) ? "(through kubectl) " : "", args,
	       code);
	if (out)
		*out = text;
	else
		free(text);
	return code;
}

/* Runs kubectl-stateful with args (printf-style); see run(). */
static int plugin(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int plugin(char **out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *args = xvasprintf(fmt, ap);
	va_end(ap);
	int code = run(out, SOP_PLUGIN_BINARY, args);
	free(args);
	return code;
}

/* Runs program with args; its exit status must be code and its output must contain each needle (NULL-terminated). */
static char *expect_from(const char *program, int code, const char *const *needles, const char *args)
{
	char *out = NULL;
	int got = run(&out, program, args);
	bool ok = got == code;
	for (const char *const *n = needles; ok && *n; n++)
		ok = strstr(out, *n) != NULL;
	if (!ok) {
		fprintf(stderr, "kubectl stateful %s: exit %d (want %d), output:\n%s\n", args, got, code, out);
		for (const char *const *n = needles; *n; n++)
			fprintf(stderr, "  want: %s%s\n", *n, strstr(out, *n) ? "" : "   <- missing");
		fail_msg("kubectl stateful %s", args);
	}
	return out;
}

/* Runs the plugin; see expect_from(). */
static char *expect(int code, const char *const *needles, const char *args)
{
	return expect_from(SOP_PLUGIN_BINARY, code, needles, args);
}

#define EXPECT(code, args, ...)                                                                                        \
	do {                                                                                                           \
		const char *needles_[] = {__VA_ARGS__, NULL};                                                          \
		free(expect((code), needles_, (args)));                                                                \
	} while (0)

/*
 * `kubectl stateful`, as a user runs it: the test bed's kubectl (first on
 * PATH, as every kubectl of this file), which finds kubectl-stateful by its
 * name on PATH: the build's directory put first.
 */
#define KUBECTL_STATEFUL "PATH=\"$(dirname '" SOP_PLUGIN_BINARY "')\":$PATH \"$(command -v kubectl)\" stateful"

#define EXPECT_VIA_KUBECTL(code, args, ...)                                                                            \
	do {                                                                                                           \
		const char *needles_[] = {__VA_ARGS__, NULL};                                                          \
		free(expect_from(KUBECTL_STATEFUL, (code), needles_, (args)));                                         \
	} while (0)

/* The plugin where there is no kubeconfig: neither KUBECONFIG nor a home with ~/.kube/config. */
#define NO_KUBECONFIG "env -u KUBECONFIG HOME=/nonexistent " SOP_PLUGIN_BINARY

#define EXPECT_FROM_NO_KUBECONFIG(code, args, ...)                                                                     \
	do {                                                                                                           \
		const char *needles_[] = {__VA_ARGS__, NULL};                                                          \
		free(expect_from(NO_KUBECONFIG, (code), needles_, (args)));                                            \
	} while (0)

static void annotate(const char *what, const char *kv)
{
	if (it_sh("kubectl annotate --overwrite -n %s %s '%s' >/dev/null", g.ns, what, kv))
		fail_msg("kubectl annotate %s %s failed", what, kv);
}

static void start_operator(void)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--leader-elect",
			      "--leader-election-namespace", g.ns, "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", NULL};
	daemon_start(&g.d, args, NULL);
	if (!daemon_wait_log(&g.d, "became leader", 30000) || !daemon_wait_log(&g.d, "all caches synced", 30000))
		fail_msg("operator did not start leading");
	g.running = true;
}

static int setup(void **state)
{
	(void)state;
	g.admin = it_admin_client();
	g.ns = it_namespace_new(g.admin, "it-plugin");
	json_t *sts = it_statefulset(SET, 2, "OrderedReady", "data");
	json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	json_object_set_new(json_object_get(tmpl, "spec"), "storageClassName", json_string("fixed"));
	struct kube_error err;
	if (kube_create(g.admin, &KUBE_STATEFULSETS, g.ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	json_decref(sts);
	it_wait_ready_and_bound(g.admin, g.ns, 2, 2, 60000);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (g.running)
		daemon_stop_operator(&g.d);
	it_delete_all_removing_finalizer(g.admin, &KUBE_STATEFULSETS, g.ns, FINALIZER_SCALEDOWN);
	it_namespace_delete(g.admin, g.ns);
	free(g.ns);
	kube_client_free(g.admin);
	return 0;
}

/* A field of the set's (only) volumeClaimTemplate. */
static const char *template_field(const json_t *sts, const char *path)
{
	return kube_obj_str(json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0),
			    path);
}

static const char *template_size(const json_t *sts)
{
	return template_field(sts, "spec.resources.requests.storage");
}

/* ---- before the operator runs ---- */

static void test_bad_input_and_no_operator(void **state)
{
	(void)state;
	EXPECT(2, "status sts/nope", "error: statefulset.apps \"nope\" not found in namespace");
	EXPECT(2, "resize sts/nope data=2Mi", "error: statefulset.apps \"nope\" not found");
	EXPECT(2, "explain sts/nope", "not found");
	EXPECT(2, "abort sts/nope", "not found");
	EXPECT(2, "cleanup sts/nope", "not found");
	EXPECT(2, "members stc/nope", "error: statefulcluster \"nope\" not found");
	EXPECT(2, "resize sts/" SET " data=20Gb", "error: bad size for template \"data\": \"20Gb\": unknown suffix \"Gb\"");
	EXPECT(2, "resize sts/" SET " data=0", "is not more than zero");
	EXPECT(2, "resize sts/" SET " data=-1Mi", "is not more than zero");
	EXPECT(2, "resize sts/" SET " logs=2Mi", "error: sts/" SET " has no volumeClaimTemplate \"logs\"; it has: data");
	EXPECT(2, "resize sts/" SET " data=2Mi --strategy fast", "unknown strategy \"fast\"");
	EXPECT(2, "resize deploy/" SET " data=2Mi", "unknown kind \"deploy\"");
	EXPECT(2, "members sts/" SET, "is not a StatefulCluster");
	EXPECT(2, "status -o xml", "unknown output format \"xml\"");
	EXPECT(2, "frobnicate", "unknown command \"frobnicate\"");
	/* Without the -n that plugin() adds: a completion takes no namespace. */
	char *fish = NULL;
	int fish_code = it_sh_capture(&fish, "%s completion fish 2>&1 </dev/null", SOP_PLUGIN_BINARY);
	if (fish_code != 2 || !fish || !strstr(fish, "completion bash|zsh"))
		fail_msg("completion fish: exit %d, %s", fish_code, fish ? fish : "(no output)");
	free(fish);
	EXPECT(2, "status --kubeconfig /nonexistent/kubeconfig", "/nonexistent/kubeconfig");
	/* Nothing would act on a resize: refused, and nothing written. */
	EXPECT(3, "resize sts/" SET " data=2Mi --no-wait", "error: no operator running: no Lease ", "/stateful-operator");
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	assert_null(kube_obj_annotation(sts, RESIZE_ANNOTATION_PREFIX "data"));
	json_decref(sts);
	/* Reading needs no operator. */
	EXPECT(0, "status sts/" SET, "sts/" SET, "Idle");
	EXPECT(0, "explain sts/" SET, "Resize: none under way.");
	/*
	 * Completion of an object name (what plugins/kubectl_complete-stateful
	 * asks for kubectl): the sets of the namespace the words name, then
	 * cobra's directive :4 (no file names). Not plugin(): the word typed is last.
	 */
	char *names = NULL;
	int names_code =
		it_sh_capture(&names, "%s __complete -n %s abort '' 2>&1 </dev/null", SOP_PLUGIN_BINARY, g.ns);
	if (names_code != 0 || !names || strcmp(names, "sts/" SET "\n:4\n"))
		fail_msg("__complete abort '': exit %d, %s", names_code, names ? names : "(no output)");
	free(names);
	names_code =
		it_sh_capture(&names, "%s __complete -n %s status sts/x 2>&1 </dev/null", SOP_PLUGIN_BINARY, g.ns);
	if (names_code != 0 || !names || strcmp(names, ":4\n"))
		fail_msg("__complete status sts/x: exit %d, %s", names_code, names ? names : "(no output)");
	free(names);
}

/*
 * kubectl's connection flags: --as (the admin of the test bed may
 * impersonate) with a ServiceAccount that may only read this namespace,
 * one that may read nothing, and no kubeconfig at all with --server,
 * --token and --certificate-authority, as a CI job or a pod would run it.
 */
static void test_kubectl_connection_flags(void **state)
{
	(void)state;
	if (it_sh("kubectl create serviceaccount -n %s reader >/dev/null && "
		  "kubectl create serviceaccount -n %s nobody >/dev/null && "
		  "kubectl create role -n %s reader --verb=get,list,watch "
		  "--resource=statefulsets.apps,pods,persistentvolumeclaims,events,configmaps,"
		  "leases.coordination.k8s.io,jobs.batch >/dev/null && "
		  "kubectl create rolebinding -n %s reader --role=reader --serviceaccount=%s:reader >/dev/null",
		  g.ns, g.ns, g.ns, g.ns, g.ns))
		fail_msg("could not make the ServiceAccounts and their Role");
	char *as_reader = xasprintf("status sts/" SET " --as system:serviceaccount:%s:reader", g.ns);
	EXPECT(0, as_reader, "sts/" SET, "Idle");
	free(as_reader);
	char *as_nobody = xasprintf("status sts/" SET " --as system:serviceaccount:%s:nobody --as-group "
				    "system:authenticated",
				    g.ns);
	EXPECT(1, as_nobody, "forbidden", "nobody");
	free(as_nobody);
	/* The flags are checked before any request: a header cannot be smuggled in. */
	EXPECT(2, "status --as-uid 7", "--as-group and --as-uid need --as");

	char *server = it_sh_output("kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}'");
	char *ca = xasprintf("/tmp/it-plugin-ca-%d.crt", (int)getpid());
	if (!server || !*server ||
	    it_sh("kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' "
		  "| base64 -d > %s && test -s %s",
		  ca, ca))
		fail_msg("could not read the test bed's server and CA from its kubeconfig");
	/* The token goes through a file, so the test's log shows no credential. */
	char *token = xasprintf("/tmp/it-plugin-token-%d", (int)getpid());
	if (it_sh("kubectl create token -n %s reader --duration 10m > %s && test -s %s", g.ns, token, token))
		fail_msg("kubectl create token failed");
	char *args = xasprintf("status sts/" SET " --server %s --token \"$(cat %s)\" --certificate-authority %s", server,
			       token, ca);
	EXPECT_FROM_NO_KUBECONFIG(0, args, "sts/" SET, "Idle");
	free(args);
	args = xasprintf("status sts/" SET " --server %s --token not-a-token --certificate-authority %s", server, ca);
	EXPECT_FROM_NO_KUBECONFIG(1, args, "Unauthorized");
	free(args);
	unlink(ca);
	unlink(token);
	free(ca);
	free(token);
	free(server);
}

/* ---- with the operator ---- */

static void test_resize_wait_through_a_copy(void **state)
{
	(void)state;
	start_operator();
	/* Each copy Job's pod reports like the script, after 2 s. */
	annotate("statefulset/" SET, "stateful-operator.io/copy-pod-annotations={\"testbed.stateful-operator.io/delay\": "
				     "\"2s\", \"testbed.stateful-operator.io/message\": \"SOP-PROGRESS bytes=1048576 "
				     "files=3 totalBytes=1048576 totalFiles=3\\nSOP-RESULT ok\"}");
	char *out = NULL;
	const char *needles[] = {"sts/" SET ": resize of template data to 2Mi requested", "sts/" SET ": Copying 1/2",
				 "sts/" SET ": Copying 2/2", "  " SET "-0  waiting", "  " SET "-1  done",
				 "sts/" SET ": resize completed", NULL};
	out = expect(0, needles, "resize sts/" SET " data=2Mi --strategy copy --wait --timeout 4m");
	/* Off a terminal: one line per change, no cursor movement. */
	assert_null(strstr(out, "\033["));
	printf("%s", out);
	free(out);
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	assert_string_equal(template_size(sts), "2Mi");
	assert_null(kube_obj_annotation(sts, ANNOTATION_RESIZE_STATE));
	json_decref(sts);
	EXPECT(0, "status sts/" SET, "sts/" SET, "Idle");
	/* Asking for what the template already has: nothing to follow, no endless wait. */
	EXPECT(0, "resize sts/" SET " data=2Mi --wait", "template data already asks for 2Mi; nothing to wait for");
}

static bool state_step_copy(void *ctx)
{
	(void)ctx;
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	json_t *cm = it_get(g.admin, &KUBE_CONFIGMAPS, g.ns, SET BACKUP_SUFFIX);
	const char *st = kube_obj_annotation(sts, ANNOTATION_RESIZE_STATE);
	if (!st)
		st = kube_obj_annotation(cm, ANNOTATION_RESIZE_STATE);
	bool at_copy = st && strstr(st, "\"step\":\"Copy\"");
	json_decref(sts);
	json_decref(cm);
	return at_copy;
}

static bool resize_over(void *ctx)
{
	(void)ctx;
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	json_t *cm = it_get(g.admin, &KUBE_CONFIGMAPS, g.ns, SET BACKUP_SUFFIX);
	bool over = sts && !cm && !kube_obj_annotation(sts, ANNOTATION_RESIZE_STATE);
	json_decref(sts);
	json_decref(cm);
	return over;
}

static bool moved_to_expandable(void *ctx)
{
	(void)ctx;
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	const char *cls = template_field(sts, "spec.storageClassName");
	bool moved = cls && !strcmp(cls, "expandable") && resize_over(NULL);
	json_decref(sts);
	return moved;
}

/*
 * --class writes the class annotation, and the operator moves the volumes
 * (by copy, 2 s a replica as above) and is done before the next test asks
 * for a resize. The template stays in class expandable (which could grow in
 * place): the later resizes name --strategy copy, so they still copy.
 */
static void test_resize_class(void **state)
{
	(void)state;
	EXPECT(0, "resize sts/" SET " data=2Mi --class expandable --no-wait",
	       "sts/" SET ": resize of template data to 2Mi requested, class expandable");
	/* Mid-copy the set may be gone (its copy is in the backup): looked at once it is back. */
	if (!it_wait_every(moved_to_expandable, NULL, 240000, 500))
		fail_msg("sts/" SET "'s volumes were not moved to class expandable");
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	const char *cls = kube_obj_annotation(sts, CLASS_ANNOTATION_PREFIX "data");
	if (!cls || strcmp(cls, "expandable"))
		fail_msg("sts/" SET ": annotation " CLASS_ANNOTATION_PREFIX "data is %s, want expandable",
			 cls ? cls : "absent");
	assert_string_equal(template_size(sts), "2Mi");
	json_decref(sts);
	EXPECT(0, "status sts/" SET, "sts/" SET, "Idle");
}

static void test_status_during_a_copy_then_abort(void **state)
{
	(void)state;
	/* A copy that takes long enough to be looked at. */
	annotate("statefulset/" SET, "stateful-operator.io/copy-pod-annotations={\"testbed.stateful-operator.io/delay\": "
				     "\"60s\", \"testbed.stateful-operator.io/message\": \"SOP-RESULT ok\"}");
	EXPECT(0, "resize sts/" SET " data=3Mi --strategy copy --no-wait", "resize of template data to 3Mi requested");
	if (!it_wait_every(state_step_copy, NULL, 120000, 500))
		fail_msg("the copy never reached its Copy step");

	/* Who leads, beside the table: the Lease's holder. */
	char *leads = xasprintf(" leads (Lease %s/stateful-operator)", g.ns);
	EXPECT(0, "status", "NAME", "OPERATION", "PHASE", "PROGRESS", "LAST EVENT", "sts/" SET, "resize/copy", "Copying",
	       "replica 1/2", "operator: ", leads);
	free(leads);
	EXPECT(0, "status -A", "NAMESPACE", g.ns);
	/* Through kubectl: the same table, header first. */
	const char *base = strrchr(SOP_PLUGIN_BINARY, '/');
	assert_string_equal(base ? base + 1 : SOP_PLUGIN_BINARY, "kubectl-stateful");
	EXPECT_VIA_KUBECTL(0, "status", "NAME", "OPERATION", "PHASE", "PROGRESS", "LAST EVENT", "sts/" SET, "Copying");
	char *out = NULL;
	assert_int_equal(plugin(&out, "status sts/" SET " -o json"), 0);
	json_t *rows = json_loads(out, 0, NULL);
	if (!json_is_array(rows) || json_array_size(rows) != 1)
		fail_msg("status -o json: not one row: %s", out);
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(kube_obj_str(row, "operation"), "resize/copy");
	assert_string_equal(kube_obj_str(row, "phase"), "Copying");
	const json_t *reps = json_object_get(row, "replicas");
	assert_int_equal(json_array_size(reps), 2);
	assert_int_equal(kube_obj_int(json_array_get(reps, 0), "ordinal", NULL, -1), 1); /* highest first */
	assert_string_equal(kube_obj_str(json_array_get(reps, 0), "stage"), "Starting");
	assert_string_equal(kube_obj_str(json_array_get(reps, 1), "stage"), "Waiting");
	json_decref(rows);
	free(out);
	assert_int_equal(plugin(&out, "status sts/" SET " -o yaml"), 0);
	assert_non_null(strstr(out, "- namespace: "));
	assert_non_null(strstr(out, "\n  operation: resize/copy\n"));
	free(out);
	/* kubectl's other printers (issue 30): names, a JSONPath, the table without its header. */
	assert_int_equal(plugin(&out, "status -o name"), 0);
	if (!strstr(out, "statefulset.apps/" SET "\n") || strstr(out, "NAME") || strstr(out, "operator: "))
		fail_msg("status -o name:\n%s", out);
	free(out);
	assert_int_equal(plugin(&out, "status sts/" SET " -o 'jsonpath={[0].phase}/{[0].replicas[*].ordinal}'"), 0);
	assert_string_equal(out, "Copying/1 0");
	free(out);
	assert_int_equal(plugin(&out, "status sts/" SET " -o 'jsonpath={range [*]}{.kind}/{.name}{\"\\n\"}{end}'"), 0);
	assert_string_equal(out, "sts/" SET "\n");
	free(out);
	EXPECT(0, "status sts/" SET " -o wide", "STRATEGY", "STARTED", "copy", "Copying");
	assert_int_equal(plugin(&out, "status sts/" SET " --no-headers"), 0);
	if (!strstr(out, "sts/" SET) || strstr(out, "OPERATION"))
		fail_msg("status --no-headers:\n%s", out);
	free(out);
	EXPECT(2, "status -o 'jsonpath={..name}'", "recursive descent \"..\" is not supported");

	/* One resize at a time. */
	EXPECT(1, "resize sts/" SET " data=5Mi --no-wait", "error: sts/" SET " has a resize under way (");
	/* The set is gone mid-copy: abort goes on its backup. */
	EXPECT(0, "abort sts/" SET, "sts/" SET ": abort requested");
	if (!it_wait_every(resize_over, NULL, 120000, 500))
		fail_msg("the resize did not end after the abort");
	json_t *sts = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	assert_string_equal(template_size(sts), "2Mi");
	json_decref(sts);
	EXPECT(0, "explain sts/" SET, "Warnings (oldest first):", "ResizeAborted");
	EXPECT(1, "abort sts/" SET, "error: sts/" SET " has no resize under way; nothing to abort");
}

/*
 * resize --dry-run: client prints the annotations and sends nothing;
 * server sends them with dryRun=All, the API server answers what it would
 * store, and the set is left as it was (same annotations, same
 * resourceVersion).
 */
static void test_resize_dry_run(void **state)
{
	(void)state;
	json_t *before = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	EXPECT(0, "resize sts/" SET " data=6Mi --dry-run", "(dry run: nothing sent)", RESIZE_ANNOTATION_PREFIX "data=6Mi");
	EXPECT(0, "resize " SET " data=6Mi --strategy copy --dry-run=server",
	       "accepted by the API server and admission (dry run: nothing stored)",
	       RESIZE_ANNOTATION_PREFIX "data=6Mi", ANNOTATION_STRATEGY "=copy");
	EXPECT(2, "resize sts/" SET " data=6Mi --dry-run=sometimes", "use --dry-run=client, --dry-run=server");
	json_t *after = it_get(g.admin, &KUBE_STATEFULSETS, g.ns, SET);
	assert_string_equal(kube_obj_str(after, "metadata.resourceVersion"), kube_obj_str(before, "metadata.resourceVersion"));
	if (!json_equal(json_object_get(json_object_get(before, "metadata"), "annotations"),
			json_object_get(json_object_get(after, "metadata"), "annotations")))
		fail_msg("resize --dry-run=server changed the annotations");
	json_decref(after);
	json_decref(before);
}

static void test_refused_and_failed_resize_exit_1(void **state)
{
	(void)state;
	/* Smaller without allow-shrink: the operator refuses, the plugin quotes it. */
	EXPECT(1, "resize sts/" SET " data=1Mi --wait --timeout 2m", "error: resize of sts/" SET ": ResizeShrinkRefused: ");
	EXPECT(0, "explain sts/" SET, "ResizeShrinkRefused");
	/* A copy whose verification fails: Failed with the Job's message. */
	annotate("statefulset/" SET, "stateful-operator.io/copy-pod-annotations={\"testbed.stateful-operator.io/outcome\": "
				     "\"fail\", \"testbed.stateful-operator.io/message\": \"SOP-RESULT fail verification "
				     "found differences\"}");
	EXPECT(1, "resize sts/" SET " data=4Mi --strategy copy --wait --timeout 4m", "error: resize of sts/" SET " failed: ",
	       "verification found differences");
	EXPECT(0, "status sts/" SET, "Failed", "verification found differences");
	EXPECT(0, "explain sts/" SET, "Resize: phase Failed", "To start over");
}

static void test_cleanup_given_up_and_retry(void **state)
{
	(void)state;
	json_t *web = sd_cleaned_statefulset("web", 2, "OrderedReady", "data", "fail", NULL, "drain failed");
	it_set_annotation(web, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "1");
	struct kube_error err;
	if (kube_create(g.admin, &KUBE_STATEFULSETS, g.ns, web, NULL, &err) < 0)
		fail_msg("create web: %s", err.message);
	json_decref(web);
	it_wait_ready_and_bound(g.admin, g.ns, 4, 4, 60000);
	it_merge_patch(g.admin, &KUBE_STATEFULSETS, g.ns, "web", "{\"spec\":{\"replicas\":1}}");
	double until = it_now_ms() + 120000;
	char *out = NULL;
	while (true) {
		free(out);
		assert_int_equal(plugin(&out, "cleanup sts/web"), 0);
		if (strstr(out, "GivenUp"))
			break;
		if (it_now_ms() > until)
			fail_msg("the cleanup of web-1 was not given up:\n%s", out);
		it_sleep_ms(1000);
	}
	assert_non_null(strstr(out, "ORDINAL"));
	assert_non_null(strstr(out, "1/1"));
	assert_non_null(strstr(out, "kubectl stateful cleanup sts/web --retry"));
	free(out);
	int failed_before = it_event_count(g.admin, g.ns, "CleanupFailed", "web");
	EXPECT(0, "cleanup sts/web --retry", "sts/web: 1 claim set re-armed");
	/* Re-armed: the operator runs the cleanup again (and it fails again). */
	until = it_now_ms() + 120000;
	while (it_event_count(g.admin, g.ns, "CleanupFailed", "web") <= failed_before) {
		if (it_now_ms() > until)
			fail_msg("no new cleanup attempt after --retry");
		it_sleep_ms(500);
	}
	EXPECT(0, "status", "sts/web", "cleanup");
}

static bool members_ready(void *ctx)
{
	(void)ctx;
	json_t *stc = it_get(g.admin, &KUBE_STATEFULCLUSTERS, g.ns, "coder");
	const json_t *m = json_object_get(json_object_get(stc, "status"), "members");
	bool ok = json_array_size(m) == 2 && json_is_true(json_object_get(json_array_get(m, 0), "ready")) &&
		  json_is_true(json_object_get(json_array_get(m, 1), "ready"));
	json_decref(stc);
	return ok;
}

static void test_members(void **state)
{
	(void)state;
	json_t *stc = it_json("{\"apiVersion\":\"" CLUSTER_API_VERSION "\",\"kind\":\"" CLUSTER_KIND "\","
			      "\"metadata\":{\"name\":\"coder\"},\"spec\":{\"replicas\":2,\"serviceName\":\"coder\","
			      "\"selector\":{\"matchLabels\":{\"app\":\"coder\"}},\"template\":{\"metadata\":{\"labels\":"
			      "{\"app\":\"coder\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}}}");
	struct kube_error err;
	if (kube_create(g.admin, &KUBE_STATEFULCLUSTERS, g.ns, stc, NULL, &err) < 0)
		fail_msg("create StatefulCluster: %s", err.message);
	json_decref(stc);
	if (!it_wait_every(members_ready, NULL, 60000, 500))
		fail_msg("coder's members never became Ready");
	stc = it_get(g.admin, &KUBE_STATEFULCLUSTERS, g.ns, "coder");
	const json_t *members = json_object_get(json_object_get(stc, "status"), "members");
	char *out = NULL;
	assert_int_equal(plugin(&out, "members stc/coder"), 0);
	assert_non_null(strstr(out, "IDENTITY"));
	size_t i;
	const json_t *m;
	json_array_foreach(members, i, m) {
		if (!strstr(out, kube_obj_str(m, "identity")))
			fail_msg("members: %s missing:\n%s", kube_obj_str(m, "identity"), out);
	}
	assert_non_null(strstr(out, "true"));
	free(out);
	assert_int_equal(plugin(&out, "members coder -o name"), 0);
	json_array_foreach(members, i, m) {
		char *line = xasprintf("pod/%s\n", kube_obj_str(m, "pod"));
		if (!strstr(out, line))
			fail_msg("members -o name: %s missing:\n%s", line, out);
		free(line);
	}
	free(out);
	assert_int_equal(plugin(&out, "members stc/coder --no-headers -o wide"), 0);
	if (strstr(out, "IDENTITY") || !strstr(out, kube_obj_str(json_array_get(members, 0), "node")))
		fail_msg("members --no-headers -o wide:\n%s", out);
	free(out);
	assert_int_equal(plugin(&out, "members stc/coder -o 'jsonpath={[*].identity}'"), 0);
	char *want = xasprintf("%s %s", kube_obj_str(json_array_get(members, 0), "identity"),
			       kube_obj_str(json_array_get(members, 1), "identity"));
	assert_string_equal(out, want);
	free(want);
	free(out);
	assert_int_equal(plugin(&out, "members stc/coder -o json"), 0);
	json_t *got = json_loads(out, 0, NULL);
	if (!json_equal(got, members))
		fail_msg("members -o json is not status.members:\n%s", out);
	json_decref(got);
	free(out);
	EXPECT(0, "status stc/coder", "stc/coder", "cluster", "ready 2/2");
	json_decref(stc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input_and_no_operator),
		cmocka_unit_test(test_kubectl_connection_flags),
		cmocka_unit_test(test_resize_wait_through_a_copy),
		cmocka_unit_test(test_resize_class),
		cmocka_unit_test(test_status_during_a_copy_then_abort),
		cmocka_unit_test(test_resize_dry_run),
		cmocka_unit_test(test_refused_and_failed_resize_exit_1),
		cmocka_unit_test(test_cleanup_given_up_and_retry),
		cmocka_unit_test(test_members),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
