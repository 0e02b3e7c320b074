/*
 * kubectl-stateful's command line: what each subcommand accepts (kubectl's
 * flag spellings anywhere on the line) and every bad input refused with a
 * message naming what to fix, before anything talks to the cluster.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_args.h"
#include "plugin/plugin_complete.h"
#include "plugin/plugin_help.h"

#define MAXARGS 40

/* Splits line on spaces into argv (argv[0] is the program). */
static int split(char *line, char **argv)
{
	int argc = 0;
	argv[argc++] = (char *)"kubectl-stateful";
	for (char *save = NULL, *t = strtok_r(line, " ", &save); t && argc < MAXARGS; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	return argc;
}

static int parse(const char *line, struct plugin_args *a, char **err)
{
	static char buf[512];
	char *argv[MAXARGS];
	snprintf(buf, sizeof(buf), "%s", line);
	int argc = split(buf, argv);
	return plugin_args_parse(argc, argv, a, err);
}

static void test_good(void **state)
{
	(void)state;
	struct plugin_args a;
	char *err;

	assert_int_equal(parse("status", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_STATUS);
	assert_int_equal(a.kind, PLUGIN_KIND_NONE);
	assert_null(a.operator_namespace); /* the session picks it (plugin_session.h) */
	plugin_args_release(&a);

	assert_int_equal(parse("-n shop status -A -o yaml --context kind-x --kubeconfig /k", &a, &err), 0);
	assert_string_equal(a.namespace, "shop");
	assert_true(a.all_namespaces);
	assert_int_equal(a.output, PLUGIN_OUT_YAML);
	assert_string_equal(a.connection.context, "kind-x");
	assert_string_equal(a.kubeconfig, "/k");
	plugin_args_release(&a);

	assert_int_equal(parse("uninstall --dry-run --force -n shop", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_UNINSTALL);
	assert_true(a.dry_run);
	assert_true(a.force);
	assert_string_equal(a.namespace, "shop");
	plugin_args_release(&a);
	assert_int_equal(parse("uninstall", &a, &err), 0);
	assert_false(a.dry_run || a.force);
	assert_int_equal(a.dry_run, PLUGIN_DRY_RUN_NONE);
	assert_null(a.namespace); /* every namespace */
	plugin_args_release(&a);

	/* kubectl's printers and --dry-run spellings (issue 30). */
	static const struct {
		const char *line;
		enum plugin_output output;
		const char *jsonpath;
		bool no_headers;
		enum plugin_dry_run dry_run;
	} printers[] = {
		{"status -o wide", PLUGIN_OUT_WIDE, NULL, false, PLUGIN_DRY_RUN_NONE},
		{"status -oname", PLUGIN_OUT_NAME, NULL, false, PLUGIN_DRY_RUN_NONE},
		{"status --no-headers", PLUGIN_OUT_TABLE, NULL, true, PLUGIN_DRY_RUN_NONE},
		{"members coder -o=jsonpath={.x}", PLUGIN_OUT_JSONPATH, "{.x}", false, PLUGIN_DRY_RUN_NONE},
		{"cleanup web --output jsonpath={range[*]}{.pod}{end}", PLUGIN_OUT_JSONPATH, "{range[*]}{.pod}{end}", false,
		 PLUGIN_DRY_RUN_NONE},
		{"cleanup web -o wide --no-headers", PLUGIN_OUT_WIDE, NULL, true, PLUGIN_DRY_RUN_NONE},
		{"resize web data=1Gi --dry-run", PLUGIN_OUT_TABLE, NULL, false, PLUGIN_DRY_RUN_CLIENT},
		{"resize web data=1Gi --dry-run=client", PLUGIN_OUT_TABLE, NULL, false, PLUGIN_DRY_RUN_CLIENT},
		{"resize web data=1Gi --dry-run=server --no-wait", PLUGIN_OUT_TABLE, NULL, false, PLUGIN_DRY_RUN_SERVER},
		{"resize web data=1Gi --dry-run=none", PLUGIN_OUT_TABLE, NULL, false, PLUGIN_DRY_RUN_NONE},
		{"uninstall --dry-run=client", PLUGIN_OUT_TABLE, NULL, false, PLUGIN_DRY_RUN_CLIENT},
	};
	for (size_t i = 0; i < sizeof(printers) / sizeof(printers[0]); i++) {
		if (parse(printers[i].line, &a, &err) < 0)
			fail_msg("%s: %s", printers[i].line, err);
		assert_int_equal(a.output, printers[i].output);
		if (printers[i].jsonpath)
			assert_string_equal(a.jsonpath, printers[i].jsonpath);
		assert_int_equal(a.no_headers, printers[i].no_headers);
		assert_int_equal(a.dry_run, printers[i].dry_run);
		plugin_args_release(&a);
	}

	assert_int_equal(parse("status stc/coder -ojson --namespace=db", &a, &err), 0);
	assert_int_equal(a.kind, PLUGIN_KIND_STC);
	assert_string_equal(a.name, "coder");
	assert_int_equal(a.output, PLUGIN_OUT_JSON);
	assert_string_equal(a.namespace, "db");
	plugin_args_release(&a);

	assert_int_equal(parse("resize statefulset/web data=1.5Gi --strategy copy --class fast --wait --timeout 30m", &a,
			       &err),
			 0);
	assert_int_equal(a.cmd, PLUGIN_RESIZE);
	assert_int_equal(a.kind, PLUGIN_KIND_STS);
	assert_string_equal(a.name, "web");
	assert_string_equal(a.template_name, "data");
	assert_string_equal(a.size_text, "1.5Gi");
	assert_string_equal(a.strategy, "copy");
	assert_string_equal(a.storage_class, "fast");
	assert_int_equal(a.wait, PLUGIN_WAIT_ON);
	assert_int_equal(a.timeout_ms, 30 * 60 * 1000);
	plugin_args_release(&a);

	assert_int_equal(parse("resize sts/web data=20Gi --wait=false", &a, &err), 0);
	assert_int_equal(a.wait, PLUGIN_WAIT_OFF);
	plugin_args_release(&a);
	assert_int_equal(parse("resize sts/web data=20Gi", &a, &err), 0);
	assert_int_equal(a.wait, PLUGIN_WAIT_AUTO);
	plugin_args_release(&a);
	assert_int_equal(parse("resize sts/web data=20Gi --no-wait", &a, &err), 0);
	assert_int_equal(a.wait, PLUGIN_WAIT_OFF);
	plugin_args_release(&a);

	assert_int_equal(parse("cleanup sts/web --retry --operator-namespace ops", &a, &err), 0);
	assert_true(a.retry);
	assert_string_equal(a.operator_namespace, "ops");
	plugin_args_release(&a);

	assert_int_equal(parse("members stc/coder", &a, &err), 0);
	assert_int_equal(parse("abort sts/web", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_ABORT);
	assert_int_equal(parse("explain sts/web", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_EXPLAIN);
	assert_int_equal(parse("completion zsh", &a, &err), 0);
	assert_string_equal(a.shell, "zsh");
	assert_int_equal(parse("", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_HELP);
	assert_int_equal(parse("resize --help", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_HELP);
	assert_true(a.help_topic_set);
	assert_int_equal(a.help_topic, PLUGIN_RESIZE);
	assert_int_equal(parse("help cleanup", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_HELP);
	assert_int_equal(a.help_topic, PLUGIN_CLEANUP);
	assert_int_equal(parse("-n x --help", &a, &err), 0);
	assert_int_equal(a.help_topic, PLUGIN_HELP);
	assert_int_equal(parse("--version", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_VERSION);
	/* kubectl's other ways to name the object. */
	assert_int_equal(parse("status sts web", &a, &err), 0);
	assert_int_equal(a.kind, PLUGIN_KIND_STS);
	assert_string_equal(a.name, "web");
	plugin_args_release(&a);
	assert_int_equal(parse("resize statefulset web data=2Gi", &a, &err), 0);
	assert_string_equal(a.name, "web");
	assert_string_equal(a.template_name, "data");
	plugin_args_release(&a);
	assert_int_equal(parse("resize web data=2Gi", &a, &err), 0);
	assert_int_equal(a.kind, PLUGIN_KIND_STS);
	assert_string_equal(a.name, "web");
	plugin_args_release(&a);
	assert_int_equal(parse("members coder", &a, &err), 0);
	assert_int_equal(a.kind, PLUGIN_KIND_STC);
	assert_string_equal(a.name, "coder");
	plugin_args_release(&a);
	/* members remove|replace: the StatefulCluster in any of kubectl's spellings, then its members. */
	assert_int_equal(parse("members remove stc/coder coder-2", &a, &err), 0);
	assert_int_equal(a.cmd, PLUGIN_MEMBERS);
	assert_int_equal(a.members_op, PLUGIN_MEMBERS_REMOVE);
	assert_string_equal(a.name, "coder");
	assert_int_equal(a.nmember_names, 1);
	assert_string_equal(a.member_names[0], "coder-2");
	plugin_args_release(&a);
	assert_int_equal(parse("members replace coder coder-1 coder-10 -o name", &a, &err), 0);
	assert_int_equal(a.members_op, PLUGIN_MEMBERS_REPLACE);
	assert_string_equal(a.name, "coder");
	assert_int_equal(a.nmember_names, 2);
	assert_string_equal(a.member_names[1], "coder-10");
	assert_int_equal(a.output, PLUGIN_OUT_NAME);
	plugin_args_release(&a);
	assert_int_equal(parse("members replace stc coder coder-0 -o json", &a, &err), 0);
	assert_string_equal(a.name, "coder");
	assert_string_equal(a.member_names[0], "coder-0");
	plugin_args_release(&a);
	assert_int_equal(parse("members coder", &a, &err), 0);
	assert_int_equal(a.members_op, PLUGIN_MEMBERS_LIST);
	assert_int_equal(a.nmember_names, 0);
	plugin_args_release(&a);
	/* A StatefulCluster named like a verb: as stc/NAME. */
	assert_int_equal(parse("members stc/remove", &a, &err), 0);
	assert_int_equal(a.members_op, PLUGIN_MEMBERS_LIST);
	assert_string_equal(a.name, "remove");
	plugin_args_release(&a);
	/* "--" ends the flags: a name may then start with a dash. */
	assert_int_equal(parse("explain -- sts/-odd", &a, &err), 0);
	assert_string_equal(a.name, "-odd");
}

static const struct {
	const char *line;
	const char *message; /* a part of the message */
} bad[] = {
	{"frobnicate", "unknown command \"frobnicate\""},
	{"status --bogus", "unknown flag \"--bogus\""},
	{"status -o xml", "unknown output format \"xml\""},
	{"status deploy/web", "unknown kind \"deploy\""},
	{"status web", "name the object as sts/NAME or stc/NAME"},
	{"status sts/", "no object name"},
	{"status sts/a sts/b", "at most one object"},
	{"status sts/web -A", "does not go with one object"},
	{"resize sts/web", "resize sts/NAME TEMPLATE=SIZE"},
	{"resize sts/web data", "TEMPLATE=SIZE"},
	{"resize sts/web =20Gi", "TEMPLATE=SIZE"},
	{"resize sts/web data=20Gb", "unknown suffix \"Gb\""},
	{"resize sts/web data=", "bad size for template \"data\""},
	{"resize sts/web data=0", "is not more than zero"},
	{"resize sts/web data=-1Gi", "is not more than zero"},
	{"resize sts/web data=lots", "bad size for template \"data\""},
	{"resize stc/web data=1Gi", "is not a StatefulSet"},
	{"resize sts/web data=1Gi --strategy fast", "unknown strategy \"fast\""},
	{"resize sts/web data=1Gi --timeout soon", "--timeout"},
	{"resize sts/web data=1Gi --wait=maybe", "--wait=false"},
	{"resize sts/web data=1Gi -A", "does not apply to resize"},
	{"resize sts/web data=1Gi --strategy", "needs a value"},
	{"status --retry", "does not apply to status"},
	{"abort sts/web -o json", "does not apply to abort"},
	{"members sts/web", "is not a StatefulCluster"},
	{"members", "members stc/NAME"},
	{"cleanup stc/x", "is not a StatefulSet"},
	{"explain", "explain sts/NAME"},
	{"completion fish", "completion bash|zsh"},
	{"-n", "needs a value"},
	{"status --all-namespaces=1", "takes no value"},
	{"status -Ax", "unknown flag \"-Ax\""},
	{"-n x", "name a command"},
	{"uninstall sts/web", "uninstall takes no object"},
	{"resize sts/web data=1Gi --dry-run=maybe", "use --dry-run=client, --dry-run=server"},
	{"resize sts/web data=1Gi --dry-run --wait", "--wait does not go with --dry-run"},
	{"uninstall --dry-run=server", "--dry-run=server is not supported"},
	{"status -o jsonpath=", "jsonpath= needs a template"},
	{"status -o jsonpath={..name}", "recursive descent"},
	{"status -o jsonpath={.items[?(@.a)]}", "filters [?(...)] are not supported"},
	{"status -o jsonpath={.a", "'{' not closed"},
	{"status -o custom-columns=NAME:.name", "use json, yaml, wide, name or jsonpath=TEMPLATE"},
	{"explain sts/web -o json", "-o does not apply to explain"},
	{"resize sts/web data=1Gi --no-headers", "--no-headers does not apply to resize"},
	{"cleanup sts/web --retry -o json", "--retry lists nothing"},
	{"cleanup sts/web --force", "--force does not apply to cleanup"},
	{"status --request-timeout soon", "--request-timeout"},
	{"status --request-timeout=-1s", "--request-timeout"},
	{"status --insecure-skip-tls-verify=maybe", "use true or false"},
	{"status --as", "needs a value"},
	{"completion bash --token x", "does not apply to completion"},
	{"members sts web", "is not a StatefulCluster"},
	{"members remove stc/coder", "members remove stc/NAME MEMBER..."},
	{"members replace", "members replace stc/NAME MEMBER..."},
	{"members remove sts/web web-1", "is not a StatefulCluster"},
	{"members remove stc/coder other-1", "\"other-1\" is not a member name of stc/coder"},
	{"members remove stc/coder coder-01", "\"coder-01\" is not a member name"},
	{"members replace stc/coder coder-", "\"coder-\" is not a member name"},
	{"members replace stc/coder coder", "\"coder\" is not a member name"},
	{"members replace stc/coder 2", "\"2\" is not a member name"},
	{"members replace stc/coder coder-2x", "\"coder-2x\" is not a member name"},
	{"members replace stc/coder coder-1 coder-1", "coder-1 is named twice"},
	{"members remove stc/c c-1 c-2 c-3 c-4 c-5 c-6 c-7 c-8 c-9", "at most 8 members"},
	{"members remove stc/coder coder-1 -o wide", "-o wide and --no-headers are for lists"},
	{"members replace stc/coder coder-1 --no-headers", "-o wide and --no-headers are for lists"},
	{"members stc/coder coder-1", "members takes one StatefulCluster"},
	{"--as-group g", "name a command"},
	{"help nope", "help: unknown command \"nope\""},
};

/* Each command's help: its usage line, examples to copy, and the way to kubectl's flags. */
static void test_command_help(void **state)
{
	(void)state;
	static const struct {
		enum plugin_cmd cmd;
		const char *usage;
	} cmds[] = {
		{PLUGIN_STATUS, "Usage: kubectl stateful status"},     {PLUGIN_RESIZE, "Usage: kubectl stateful resize"},
		{PLUGIN_ABORT, "Usage: kubectl stateful abort"},       {PLUGIN_EXPLAIN, "Usage: kubectl stateful explain"},
		{PLUGIN_CLEANUP, "Usage: kubectl stateful cleanup"},   {PLUGIN_MEMBERS, "Usage: kubectl stateful members"},
		{PLUGIN_UNINSTALL, "Usage: kubectl stateful uninstall"}, {PLUGIN_COMPLETION, "Usage: kubectl stateful completion"},
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *h = plugin_command_help(cmds[i].cmd);
		if (!strstr(h, cmds[i].usage) || !strstr(h, "Example"))
			fail_msg("help of %s lacks its usage line or examples:\n%s", cmds[i].usage, h);
	}
	assert_ptr_equal(plugin_command_help(PLUGIN_HELP), plugin_usage());
	assert_non_null(strstr(plugin_usage(), "4 --timeout"));
	assert_non_null(strstr(plugin_command_help(PLUGIN_RESIZE), "exit 4"));
}

/* kubectl's global flags, each where kubectl takes it, kept for the kubeconfig's loading. */
static void test_connection_flags(void **state)
{
	(void)state;
	struct plugin_args a;
	char *err = NULL;
	assert_int_equal(parse("status -s https://h:6443 --token t0k --certificate-authority /ca --tls-server-name api "
			       "--cluster c1 --user u1 --as jane --as-group dev --as-group=ops --as-uid 42 "
			       "--request-timeout 5",
			       &a, &err),
			 0);
	const struct kube_overrides *o = &a.connection;
	assert_string_equal(o->server, "https://h:6443");
	assert_string_equal(o->token, "t0k");
	assert_string_equal(o->certificate_authority, "/ca");
	assert_string_equal(o->tls_server_name, "api");
	assert_string_equal(o->cluster, "c1");
	assert_string_equal(o->user, "u1");
	assert_string_equal(o->as, "jane");
	assert_int_equal(o->nas_groups, 2);
	assert_string_equal(o->as_groups[0], "dev");
	assert_string_equal(o->as_groups[1], "ops");
	assert_string_equal(o->as_uid, "42");
	assert_int_equal(o->insecure_skip_tls_verify, -1); /* as the kubeconfig says */
	assert_int_equal(a.request_timeout_ms, 5000);      /* bare seconds, as kubectl */
	plugin_args_release(&a);

	assert_int_equal(parse("explain sts/web --insecure-skip-tls-verify --request-timeout=2m", &a, &err), 0);
	assert_int_equal(a.connection.insecure_skip_tls_verify, 1);
	assert_int_equal(a.request_timeout_ms, 120000);
	plugin_args_release(&a);
	assert_int_equal(parse("explain sts/web --insecure-skip-tls-verify=false --request-timeout 0", &a, &err), 0);
	assert_int_equal(a.connection.insecure_skip_tls_verify, 0);
	assert_int_equal(a.request_timeout_ms, 0); /* none */
	plugin_args_release(&a);
	assert_int_equal(parse("status", &a, &err), 0);
	assert_int_equal(a.request_timeout_ms, -1); /* not given: the plugin's own default */
	assert_null(a.connection.server);
	plugin_args_release(&a);
}

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct plugin_args a;
		char *err = NULL;
		int rc = parse(bad[i].line, &a, &err);
		if (rc != -1 || !err || !strstr(err, bad[i].message))
			fail_msg("\"%s\": rc %d, message \"%s\", want one with \"%s\"", bad[i].line, rc, err ? err : "(none)",
				 bad[i].message);
		free(err);
		assert_null(a.template_name); /* released on failure */
	}
}

/* kubectl stateful <TAB>: what each position offers, and where the names come from. */
static void test_complete(void **state)
{
	(void)state;
	static const struct {
		const char *line; /* the words; a trailing space means an empty word being typed */
		enum complete_kind want;
	} cases[] = {
		{" ", COMPLETE_COMMANDS},
		{"st", COMPLETE_COMMANDS},
		{"-n shop re", COMPLETE_COMMANDS},
		{"status ", COMPLETE_STS_STC},
		{"status -A ", COMPLETE_STS_STC},
		{"members ", COMPLETE_STC_OR_MEMBER_OPS},
		{"members re", COMPLETE_STC_OR_MEMBER_OPS},
		{"members remove ", COMPLETE_STC},
		{"members replace st", COMPLETE_STC},
		{"members remove stc/coder ", COMPLETE_MEMBERS},
		{"members replace stc/coder coder-1 c", COMPLETE_MEMBERS},
		{"members stc/coder ", COMPLETE_NOTHING},
		{"resize ", COMPLETE_STS},
		{"resize sts/web ", COMPLETE_NOTHING},
		{"abort s", COMPLETE_STS},
		{"explain ", COMPLETE_STS},
		{"cleanup --retry ", COMPLETE_STS},
		{"completion ", COMPLETE_SHELLS},
		{"uninstall ", COMPLETE_NOTHING},
		{"uninstall --d", COMPLETE_FLAGS},
		{"status --", COMPLETE_FLAGS},
		{"status -o ", COMPLETE_OUTPUTS},
		{"resize sts/web data=1Gi --strategy ", COMPLETE_STRATEGIES},
		{"resize -n ", COMPLETE_NOTHING},
		{"status sts/web ", COMPLETE_NOTHING},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[256];
		char *words[MAXARGS];
		int n = 0;
		snprintf(buf, sizeof(buf), "%s", cases[i].line);
		bool trailing = buf[0] && buf[strlen(buf) - 1] == ' ';
		for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
			words[n++] = t;
		if (trailing)
			words[n++] = (char *)"";
		struct complete_where where;
		enum complete_kind got = complete_what(n, words, &where);
		if (got != cases[i].want)
			fail_msg("\"%s\": %d, want %d", cases[i].line, got, cases[i].want);
	}
	char *w[] = {(char *)"--context", (char *)"kind-x", (char *)"-n", (char *)"shop", (char *)"--kubeconfig=/k",
		     (char *)"abort", (char *)""};
	struct complete_where where;
	assert_int_equal(complete_what(7, w, &where), COMPLETE_STS);
	assert_string_equal(where.context, "kind-x");
	assert_string_equal(where.namespace, "shop");
	assert_string_equal(where.kubeconfig, "/k");
	assert_string_equal(complete_words(COMPLETE_SHELLS)[1], "zsh");
	char *m[] = {(char *)"members", (char *)"replace", (char *)"stc/coder", (char *)"co"};
	assert_int_equal(complete_what(4, m, &where), COMPLETE_MEMBERS);
	assert_string_equal(where.object, "stc/coder");
	assert_string_equal(complete_words(COMPLETE_STC_OR_MEMBER_OPS)[0], "remove");
	assert_string_equal(complete_words(COMPLETE_STC_OR_MEMBER_OPS)[1], "replace");
	assert_null(complete_words(COMPLETE_STS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_connection_flags),
		cmocka_unit_test(test_command_help),
		cmocka_unit_test(test_complete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
