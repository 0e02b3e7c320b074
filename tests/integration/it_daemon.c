/*
 * The stateful-operator binary itself: it starts with the operator's
 * least-privileged identity, syncs its caches, stops cleanly on SIGTERM;
 * a broken kubeconfig or a bad flag stops it at once with a message that
 * says what to fix.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

static void test_syncs_with_operator_rbac_and_stops_on_sigterm(void **state)
{
	(void)state;
	const char *kc = getenv("SOP_OPERATOR_KUBECONFIG");
	assert_non_null(kc);
	struct daemon d;
	const char *args[] = {"--kubeconfig", kc, "--log-format", "json", NULL};
	daemon_start(&d, args, NULL);
	if (!daemon_wait_log(&d, "all caches synced", 20000)) {
		char *log = daemon_log(&d);
		kill(d.pid, SIGKILL);
		fail_msg("operator did not sync within 20 s; log:\n%s", log);
	}
	double t = it_now_ms();
	kill(d.pid, SIGTERM);
	int rc = daemon_wait_exit(&d, 5000);
	printf("# stopped %.0f ms after SIGTERM, exit %d\n", it_now_ms() - t, rc);
	assert_int_equal(rc, 0);
	char *log = daemon_log(&d);
	/* JSON logs: every line is an object with a level; the token never appears. */
	assert_non_null(strstr(log, "\"level\":\"info\""));
	assert_non_null(strstr(log, "\"msg\":\"stopped\""));
	struct kube_config cfg = {0};
	char *err = NULL;
	assert_int_equal(kubeconfig_load(kc, NULL, &cfg, &err), 0);
	assert_null(strstr(log, cfg.token));
	kube_config_release(&cfg);
	free(log);
	daemon_cleanup(&d);
}

static void test_broken_kubeconfig_names_the_field(void **state)
{
	(void)state;
	char path[] = "/tmp/it-badkc-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
			   "clusters: [{name: k, cluster: {}}]\n"
			   "users: [{name: u, user: {token: abc}}]\n"
			   "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct daemon d;
	const char *args[] = {"--kubeconfig", path, NULL};
	daemon_start(&d, args, NULL);
	int rc = daemon_wait_exit(&d, 5000);
	assert_int_equal(rc, 1);
	char *log = daemon_log(&d);
	if (!strstr(log, "server"))
		fail_msg("message does not name the missing field: %s", log);
	free(log);
	daemon_cleanup(&d);
	unlink(path);
}

static void test_bad_flag_is_refused(void **state)
{
	(void)state;
	struct daemon d;
	const char *args[] = {"--workers", "zero", NULL};
	daemon_start(&d, args, NULL);
	assert_int_equal(daemon_wait_exit(&d, 5000), 2);
	char *log = daemon_log(&d);
	assert_non_null(strstr(log, "--workers"));
	free(log);
	daemon_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syncs_with_operator_rbac_and_stops_on_sigterm),
		cmocka_unit_test(test_broken_kubeconfig_names_the_field),
		cmocka_unit_test(test_bad_flag_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
