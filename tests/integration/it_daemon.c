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

#include "itest.h"
#include "util/xalloc.h"

#ifndef SOP_OPERATOR_BINARY
#define SOP_OPERATOR_BINARY "stateful-operator"
#endif

struct daemon {
	pid_t pid;
	char log[64];
};

/* Starts the operator with args (NULL-terminated), its stderr into a log file. */
static void daemon_start(struct daemon *d, const char *const *args)
{
	snprintf(d->log, sizeof(d->log), "/tmp/it-daemon-XXXXXX");
	int fd = mkstemp(d->log);
	assert_true(fd >= 0);
	const char *argv[16] = {SOP_OPERATOR_BINARY};
	int n = 1;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	d->pid = fork();
	assert_true(d->pid >= 0);
	if (d->pid == 0) {
		dup2(fd, STDERR_FILENO);
		dup2(fd, STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd);
}

static char *read_log(const struct daemon *d)
{
	FILE *f = fopen(d->log, "r");
	if (!f)
		return xstrdup("");
	char *buf = xcalloc(1, 1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

struct log_wait {
	const struct daemon *d;
	const char *needle;
};

static bool log_has(void *ctx)
{
	struct log_wait *w = ctx;
	char *log = read_log(w->d);
	bool found = strstr(log, w->needle) != NULL;
	free(log);
	return found;
}

/* Waits for the process to exit within timeout_ms; returns its exit status or -1. */
static int daemon_wait(struct daemon *d, long timeout_ms)
{
	double until = it_now_ms() + (double)timeout_ms;
	int status;
	while (it_now_ms() < until) {
		pid_t r = waitpid(d->pid, &status, WNOHANG);
		if (r == d->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		it_sleep_ms(20);
	}
	kill(d->pid, SIGKILL);
	waitpid(d->pid, &status, 0);
	return -1;
}

static void test_syncs_with_operator_rbac_and_stops_on_sigterm(void **state)
{
	(void)state;
	const char *kc = getenv("SOP_OPERATOR_KUBECONFIG");
	assert_non_null(kc);
	struct daemon d;
	const char *args[] = {"--kubeconfig", kc, "--log-format", "json", NULL};
	daemon_start(&d, args);
	struct log_wait w = {&d, "all caches synced"};
	if (!it_wait(log_has, &w, 20000)) {
		char *log = read_log(&d);
		kill(d.pid, SIGKILL);
		fail_msg("operator did not sync within 20 s; log:\n%s", log);
	}
	double t = it_now_ms();
	kill(d.pid, SIGTERM);
	int rc = daemon_wait(&d, 5000);
	printf("# stopped %.0f ms after SIGTERM, exit %d\n", it_now_ms() - t, rc);
	assert_int_equal(rc, 0);
	char *log = read_log(&d);
	/* JSON logs: every line is an object with a level; the token never appears. */
	assert_non_null(strstr(log, "\"level\":\"info\""));
	assert_non_null(strstr(log, "\"msg\":\"stopped\""));
	struct kube_config cfg = {0};
	char *err = NULL;
	assert_int_equal(kubeconfig_load(kc, NULL, &cfg, &err), 0);
	assert_null(strstr(log, cfg.token));
	kube_config_release(&cfg);
	free(log);
	unlink(d.log);
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
	daemon_start(&d, args);
	int rc = daemon_wait(&d, 5000);
	assert_int_equal(rc, 1);
	char *log = read_log(&d);
	if (!strstr(log, "server"))
		fail_msg("message does not name the missing field: %s", log);
	free(log);
	unlink(d.log);
	unlink(path);
}

static void test_bad_flag_is_refused(void **state)
{
	(void)state;
	struct daemon d;
	const char *args[] = {"--workers", "zero", NULL};
	daemon_start(&d, args);
	assert_int_equal(daemon_wait(&d, 5000), 2);
	char *log = read_log(&d);
	assert_non_null(strstr(log, "--workers"));
	free(log);
	unlink(d.log);
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
