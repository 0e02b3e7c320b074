/*
 * Unit tests for exec_credential.c: small /bin/sh plugins written into a
 * scratch directory play the credential plugin.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/kube_config.h"
#include "scratch_dir.h"
#include "util/clock.h"
#include "util/xalloc.h"

#define V1 "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"

static char *tmpdir; /* scratch directory with the plugins; removed at the end */

/* Writes tmpdir/name as an executable /bin/sh script; returns the new full path. */
static char *plugin(const char *name, const char *body)
{
	char *script = xasprintf("#!/bin/sh\n%s", body);
	char *path = scratch_file_write(tmpdir, name, script, 0700);
	free(script);
	return path;
}

/* A script that prints body as a heredoc (no expansion). */
static char *printing_plugin(const char *name, const char *json)
{
	char *body = xasprintf("cat <<'EOF'\n%s\nEOF\n", json);
	char *p = plugin(name, body);
	free(body);
	return p;
}

static int group_setup(void **state)
{
	(void)state;
	tmpdir = scratch_dir_make("test_exec_credential");
	if (!tmpdir)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	scratch_dir_remove(tmpdir);
	tmpdir = NULL;
	return 0;
}

static void assert_err_has(const char *err, const char *needle)
{
	if (!err)
		fail_msg("expected an error containing \"%s\", got none", needle);
	if (!strstr(err, needle))
		fail_msg("error \"%s\"\n  does not contain \"%s\"", err, needle);
}

static void assert_cred_zeroed(const struct kube_exec_credential *c)
{
	static const struct kube_exec_credential zero;
	assert_memory_equal(c, &zero, sizeof(zero));
}

/* Runs cmd (owned by the caller) as a v1 plugin and expects success. */
static void get_ok(const struct kube_exec_config *x, const char *server,
		   struct kube_exec_credential *cred)
{
	char *err = NULL;
	if (kube_exec_credential_get(x, server, cred, &err) != 0)
		fail_msg("kube_exec_credential_get failed: %s", err ? err : "(no message)");
	assert_null(err);
}

/* Runs x under timeout_ms and expects an error containing want; frees everything. */
static void run_fails(const struct kube_exec_config *x, const char *server, long timeout_ms,
		      const char *want)
{
	struct kube_exec_credential cred;
	char *err = NULL;
	memset(&cred, 0xA5, sizeof(cred));
	assert_int_equal(kube_exec_credential_run(x, server, timeout_ms, &cred, &err), -1);
	assert_err_has(err, want);
	assert_cred_zeroed(&cred);
	free(err);
}

/* Runs x under the default limits and expects an error containing want. */
static void get_fails(const struct kube_exec_config *x, const char *server, const char *want)
{
	run_fails(x, server, KUBE_EXEC_TIMEOUT_MS, want);
}

static struct kube_exec_config simple(char *cmd, const char *api)
{
	struct kube_exec_config x = {0};
	x.command = cmd;
	x.api_version = (char *)api;
	return x;
}

/* ------------------------------------------------------------------ */

static void test_v1_token_with_expiry(void **state)
{
	(void)state;
	char *p = printing_plugin("ok_v1",
				  "{\"apiVersion\": \"" V1 "\", \"kind\": \"ExecCredential\",\n"
				  " \"status\": {\"token\": \"tok-123\",\n"
				  "   \"expirationTimestamp\": \"2030-01-02T03:04:05Z\"}}");
	struct kube_exec_config x = simple(p, V1);
	struct kube_exec_credential cred;
	get_ok(&x, "https://h:6443", &cred);
	assert_string_equal(cred.token, "tok-123");
	assert_int_equal(cred.expires_at, 1893553445LL);
	assert_null(cred.cert_data.data);
	assert_null(cred.key_data.data);
	kube_exec_credential_release(&cred);
	assert_cred_zeroed(&cred);
	free(p);
}

static void test_v1beta1_cert_and_key(void **state)
{
	(void)state;
	char *p = printing_plugin(
		"certs",
		"{\"apiVersion\": \"" V1BETA1 "\", \"kind\": \"ExecCredential\", \"status\": {\n"
		"  \"clientCertificateData\": \"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n\",\n"
		"  \"clientKeyData\": \"-----BEGIN PRIVATE KEY-----\\nBBBB\\n-----END PRIVATE KEY-----\\n\",\n"
		"  \"expirationTimestamp\": \"2024-03-01T00:59:59.123456+01:00\"}}");
	struct kube_exec_config x = simple(p, V1BETA1);
	struct kube_exec_credential cred;
	get_ok(&x, NULL, &cred);
	assert_null(cred.token);
	assert_string_equal(cred.cert_data.data,
			    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
	assert_int_equal(cred.cert_data.len, strlen(cred.cert_data.data));
	assert_string_equal(cred.key_data.data,
			    "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n");
	assert_int_equal(cred.key_data.len, strlen(cred.key_data.data));
	assert_int_equal(cred.expires_at, 1709251199LL); /* 2024-02-29T23:59:59Z */
	kube_exec_credential_release(&cred);
	free(p);
}

static void test_exit_status(void **state)
{
	(void)state;
	char *p = plugin("fail", "echo 'plugin says no' >&2\nexit 1\n");
	struct kube_exec_config x = simple(p, V1);
	char *want = xasprintf("exec plugin \"%s\" exited with status 1", p);
	get_fails(&x, NULL, want);
	free(want);
	free(p);

	p = plugin("killed", "kill -9 $$\n");
	x = simple(p, V1);
	get_fails(&x, NULL, "was killed by signal 9");
	free(p);
}

static void test_garbage_output(void **state)
{
	(void)state;
	char *p = plugin("garbage", "echo 'this is not json s3cr3t-token'\n");
	struct kube_exec_config x = simple(p, V1);
	struct kube_exec_credential cred;
	char *err = NULL;
	assert_int_equal(kube_exec_credential_get(&x, NULL, &cred, &err), -1);
	assert_err_has(err, "printed output that is not valid JSON (line 1, column");
	assert_null(strstr(err, "s3cr3t")); /* output may be a secret: never quoted */
	free(err);
	free(p);

	p = plugin("empty", "exit 0\n");
	x = simple(p, V1);
	get_fails(&x, NULL, "printed nothing");
	free(p);

	p = printing_plugin("array", "[1, 2]");
	x = simple(p, V1);
	get_fails(&x, NULL, "printed JSON that is not an object");
	free(p);
}

/* The plugin gets KUBERNETES_EXEC_INFO and echoes the server back in its token. */
static void test_cluster_info_is_passed(void **state)
{
	(void)state;
	char *p = plugin(
		"info",
		"[ -n \"$KUBERNETES_EXEC_INFO\" ] || { echo 'no KUBERNETES_EXEC_INFO' >&2; exit 3; }\n"
		"case \"$KUBERNETES_EXEC_INFO\" in\n"
		"*'\"kind\":\"ExecCredential\"'*) ;; *) echo 'bad kind' >&2; exit 4 ;; esac\n"
		"case \"$KUBERNETES_EXEC_INFO\" in\n"
		"*'\"apiVersion\":\"" V1 "\"'*) ;; *) echo 'bad apiVersion' >&2; exit 5 ;; esac\n"
		"case \"$KUBERNETES_EXEC_INFO\" in\n"
		"*'\"interactive\":false'*) ;; *) echo 'not interactive=false' >&2; exit 6 ;; esac\n"
		"server=$(printf '%s' \"$KUBERNETES_EXEC_INFO\" | "
		"sed -n 's/.*\"cluster\":{\"server\":\"\\([^\"]*\\)\".*/\\1/p')\n"
		"[ -n \"$server\" ] || server=none\n"
		"printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
		"\"status\":{\"token\":\"server=%s\"}}' \"$server\"\n");
	struct kube_exec_config x = simple(p, V1);
	x.provide_cluster_info = true;
	struct kube_exec_credential cred;
	get_ok(&x, "https://api.example:6443", &cred);
	assert_string_equal(cred.token, "server=https://api.example:6443");
	kube_exec_credential_release(&cred);

	/* Without provideClusterInfo there is no cluster in the info. */
	x.provide_cluster_info = false;
	get_ok(&x, "https://api.example:6443", &cred);
	assert_string_equal(cred.token, "server=none");
	kube_exec_credential_release(&cred);

	/* A KUBERNETES_EXEC_INFO inherited from the parent is replaced, not doubled. */
	setenv("KUBERNETES_EXEC_INFO", "stale", 1);
	x.provide_cluster_info = true;
	get_ok(&x, "https://other:1", &cred);
	assert_string_equal(cred.token, "server=https://other:1");
	kube_exec_credential_release(&cred);
	unsetenv("KUBERNETES_EXEC_INFO");

	/* provideClusterInfo with no server is refused before running anything. */
	get_fails(&x, NULL, "provideClusterInfo is set but there is no server");
	free(p);
}

static void test_args_env_stdin(void **state)
{
	(void)state;
	char *p = plugin("argsenv",
			 "if read -r line; then echo 'stdin was not empty' >&2; exit 7; fi\n"
			 "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
			 "\"status\":{\"token\":\"%s|%s|%s|%s|%s\"}}' \"$1\" \"$2\" \"$FOO\" "
			 "\"$SOP_TEST_PARENT\" \"$SOP_TEST_OVERRIDE\"\n");
	char *args[] = {(char *)"first arg", (char *)"--second"};
	char *env[] = {(char *)"FOO=bar", (char *)"SOP_TEST_OVERRIDE=old",
		       (char *)"SOP_TEST_OVERRIDE=from-config"};
	struct kube_exec_config x = simple(p, V1);
	x.args = args;
	x.nargs = 2;
	x.env = env;
	x.nenv = 3;
	setenv("SOP_TEST_PARENT", "inherited", 1);
	setenv("SOP_TEST_OVERRIDE", "from-parent", 1);
	/* Our stdin has a line waiting; the plugin must not see it. */
	int fds[2], saved_stdin = dup(0);
	assert_true(saved_stdin >= 0);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], "line\n", 5), 5);
	close(fds[1]);
	assert_int_equal(dup2(fds[0], 0), 0);
	close(fds[0]);
	struct kube_exec_credential cred;
	char *err = NULL;
	int rc = kube_exec_credential_get(&x, NULL, &cred, &err);
	assert_int_equal(dup2(saved_stdin, 0), 0);
	close(saved_stdin);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cred.token, "first arg|--second|bar|inherited|from-config");
	kube_exec_credential_release(&cred);
	unsetenv("SOP_TEST_PARENT");
	unsetenv("SOP_TEST_OVERRIDE");
	free(p);
}

static void test_path_lookup_and_missing(void **state)
{
	(void)state;
	/* No slash: found through PATH. */
	char *p = printing_plugin("sop-test-plugin",
				  "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
				  "\"status\":{\"token\":\"via-path\"}}");
	const char *old = getenv("PATH");
	char *saved = old ? xstrdup(old) : NULL;
	char *path = xasprintf("%s:%s", tmpdir, old ? old : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	struct kube_exec_config x = simple((char *)"sop-test-plugin", V1);
	struct kube_exec_credential cred;
	get_ok(&x, NULL, &cred);
	assert_string_equal(cred.token, "via-path");
	kube_exec_credential_release(&cred);
	if (saved)
		setenv("PATH", saved, 1);
	else
		unsetenv("PATH");
	free(saved);
	free(path);
	free(p);

	x = simple((char *)"sop-no-such-plugin-anywhere", V1);
	get_fails(&x, NULL, "exec plugin \"sop-no-such-plugin-anywhere\": cannot run it: "
			    "not found in PATH");

	char *missing = xasprintf("%s/no-such-dir/plugin", tmpdir);
	x = simple(missing, V1);
	get_fails(&x, NULL, "cannot run it: No such file or directory");
	free(missing);

	char *noexec = xasprintf("%s/not-executable", tmpdir);
	FILE *f = fopen(noexec, "w");
	assert_non_null(f);
	assert_int_equal(fclose(f), 0);
	x = simple(noexec, V1);
	get_fails(&x, NULL, "cannot run it: Permission denied");
	free(noexec);

	x = simple(NULL, V1);
	get_fails(&x, NULL, "command and apiVersion must be set");
}

static void test_bad_credentials(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		const char *api;
		const char *want;
	} cases[] = {
		{"{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
		 V1, "returned apiVersion \"" V1BETA1 "\", expected \"" V1 "\""},
		{"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}", V1,
		 "returned apiVersion \"\", expected"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"Secret\",\"status\":{\"token\":\"t\"}}", V1,
		 "returned kind \"Secret\", expected \"ExecCredential\""},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}", V1,
		 "returned an ExecCredential without status"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{}}", V1,
		 "returned neither status.token nor status.clientCertificateData"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"\"}}", V1,
		 "returned neither status.token"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\"}}",
		 V1, "status.clientCertificateData is set but status.clientKeyData is not"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"token\":\"t\",\"clientKeyData\":\"k\"}}",
		 V1, "status.clientKeyData is set but status.clientCertificateData is not"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":5}}", V1,
		 "status.token is not a string"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"token\":\"a\\r\\nX-Evil: 1\"}}",
		 V1, "status.token contains a line break"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}}",
		 V1, "status.expirationTimestamp \"tomorrow\" is not an RFC 3339 time"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"token\":\"t\",\"expirationTimestamp\":\"2030-02-30T00:00:00Z\"}}",
		 V1, "is not an RFC 3339 time"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"token\":\"t\",\"expirationTimestamp\":\"2030-01-01T00:00:00\"}}",
		 V1, "is not an RFC 3339 time"},
		{"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
		 "{\"token\":\"t\",\"token\":\"u\"}}",
		 V1, "not valid JSON"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *name = xasprintf("bad%zu", i);
		char *p = printing_plugin(name, cases[i].json);
		struct kube_exec_config x = simple(p, cases[i].api);
		print_message("case %zu: %s\n", i, cases[i].want);
		get_fails(&x, NULL, cases[i].want);
		free(p);
		free(name);
	}
}

#define CRED_JSON "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}"

/* A plugin that prints a valid credential padded with spaces to total bytes. */
static char *padded_plugin(const char *name, size_t total)
{
	char *body = xasprintf("printf '%%s' '%s'\nhead -c %zu /dev/zero | tr '\\000' ' '\n", CRED_JSON,
			       total - strlen(CRED_JSON));
	char *p = plugin(name, body);
	free(body);
	return p;
}

/*
 * Waits up to 2 s for the process whose pid the plugin wrote to pidfile
 * to be gone (or dead, a zombie its new parent has not reaped yet).
 */
static void assert_killed(const char *pidfile)
{
	FILE *f = fopen(pidfile, "r");
	assert_non_null(f);
	long pid = 0;
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	assert_true(pid > 1);
	char *stat_path = xasprintf("/proc/%ld/stat", pid);
	bool gone = false;
	for (int i = 0; i < 200 && !gone; i++) {
		char line[512] = "";
		FILE *sf = fopen(stat_path, "r");
		if (!sf) {
			gone = true;
			break;
		}
		size_t n = fread(line, 1, sizeof(line) - 1, sf);
		fclose(sf);
		line[n] = '\0';
		const char *paren = strrchr(line, ')'); /* "pid (comm) S ..." */
		gone = paren && paren[1] == ' ' && paren[2] == 'Z';
		if (!gone)
			clock_sleep_ms(10);
	}
	if (!gone)
		fail_msg("process %ld the plugin started still runs", pid);
	free(stat_path);
}

/* stdout: exactly the cap is read; one byte more is refused, and so is endless output, cut and killed. */
static void test_output_cap(void **state)
{
	(void)state;
	char *p = padded_plugin("exact", KUBE_EXEC_OUTPUT_MAX);
	struct kube_exec_config x = simple(p, V1);
	struct kube_exec_credential cred;
	get_ok(&x, NULL, &cred);
	assert_string_equal(cred.token, "t");
	kube_exec_credential_release(&cred);
	free(p);

	p = padded_plugin("over", KUBE_EXEC_OUTPUT_MAX + 1);
	x = simple(p, V1);
	char *want = xasprintf("exec plugin \"%s\" printed more than 1024 KiB on stdout; killed it", p);
	get_fails(&x, NULL, want);
	free(want);
	free(p);

	/* Endless output, from the plugin and a child of its own: cut at the cap, both killed. */
	p = plugin("endless", "yes aaaaaaaa &\necho $! > \"$0.pid\"\nexec yes bbbbbbbb\n");
	char *pidfile = xasprintf("%s.pid", p);
	x = simple(p, V1);
	double t0 = clock_mono_ms();
	get_fails(&x, NULL, "printed more than 1024 KiB on stdout; killed it");
	assert_true(clock_mono_ms() - t0 < 10000);
	assert_killed(pidfile);
	free(p);
	free(pidfile);
}

/*
 * Run time: a plugin that finishes within the limit is read; one that
 * hangs (with its output open or closed) or trickles output forever is
 * killed at the limit, its children too, with an error naming it and the
 * limit.
 */
static void test_run_time_limit(void **state)
{
	(void)state;
	assert_int_equal(KUBE_EXEC_TIMEOUT_MS, 60000);
	char *body = xasprintf("sleep 0.2\nprintf '%%s' '%s'\n", CRED_JSON);
	char *p = plugin("slowish", body);
	struct kube_exec_config x = simple(p, V1);
	struct kube_exec_credential cred;
	char *err = NULL;
	if (kube_exec_credential_run(&x, NULL, 5000, &cred, &err) != 0)
		fail_msg("a plugin done in 0.2 s under a 5 s limit: %s", err);
	assert_string_equal(cred.token, "t");
	kube_exec_credential_release(&cred);
	free(body);
	free(p);

	static const struct {
		const char *name;
		const char *body; /* writes the pid to watch into "$0.pid" */
	} hangs[] = {
		{"sleeps", "sleep 1000 &\necho $! > \"$0.pid\"\nwait\n"},
		{"closes_stdout", "exec >&-\nsleep 1000 &\necho $! > \"$0.pid\"\nwait\n"},
		{"trickles", "echo $$ > \"$0.pid\"\nwhile :; do printf ' '; sleep 0.05; done\n"},
	};
	for (size_t i = 0; i < sizeof(hangs) / sizeof(hangs[0]); i++) {
		p = plugin(hangs[i].name, hangs[i].body);
		char *pidfile = xasprintf("%s.pid", p);
		x = simple(p, V1);
		char *want = xasprintf("exec plugin \"%s\" did not finish within 0.4 s; killed it", p);
		double t0 = clock_mono_ms();
		run_fails(&x, NULL, 400, want);
		double took = clock_mono_ms() - t0;
		if (took < 400 || took > 5000)
			fail_msg("%s: refused after %.0f ms, want 400 ms", hangs[i].name, took);
		assert_killed(pidfile);
		free(want);
		free(p);
		free(pidfile);
	}
}

/*
 * Descriptors the operator holds (API server connections, listeners) are
 * not close-on-exec; the plugin must not inherit them.
 */
static void test_descriptors_not_inherited(void **state)
{
	(void)state;
	int sock = socket(AF_INET, SOCK_STREAM, 0); /* no SOCK_CLOEXEC, like libcurl's */
	int pair[2];
	assert_true(sock >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	assert_int_equal(dup2(sock, 50), 50);
	assert_int_equal(dup2(pair[0], 51), 51);
	char *p = plugin("fds",
			 "open=\n"
			 "for n in 50 51; do [ -L /proc/$$/fd/$n ] && open=\"$open$n \"; done\n"
			 "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
			 "\"status\":{\"token\":\"open=%s\"}}' \"$open\"\n");
	struct kube_exec_config x = simple(p, V1);
	struct kube_exec_credential cred;
	get_ok(&x, NULL, &cred);
	assert_string_equal(cred.token, "open=");
	kube_exec_credential_release(&cred);
	free(p);
	close(50);
	close(51);
	close(sock);
	close(pair[0]);
	close(pair[1]);
}

static void test_release_is_safe(void **state)
{
	(void)state;
	struct kube_exec_credential cred;
	memset(&cred, 0, sizeof(cred));
	kube_exec_credential_release(&cred);
	kube_exec_credential_release(&cred);
	kube_exec_credential_release(NULL);
	assert_cred_zeroed(&cred);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1_token_with_expiry),
		cmocka_unit_test(test_v1beta1_cert_and_key),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_garbage_output),
		cmocka_unit_test(test_cluster_info_is_passed),
		cmocka_unit_test(test_args_env_stdin),
		cmocka_unit_test(test_path_lookup_and_missing),
		cmocka_unit_test(test_bad_credentials),
		cmocka_unit_test(test_output_cap),
		cmocka_unit_test(test_run_time_limit),
		cmocka_unit_test(test_release_is_safe),
		cmocka_unit_test(test_descriptors_not_inherited),
	};
	return cmocka_run_group_tests_name("exec_credential", tests, group_setup, group_teardown);
}
