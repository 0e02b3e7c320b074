#include "daemon.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"
#include "operator_secrets.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

#ifndef SOP_OPERATOR_BINARY
#define SOP_OPERATOR_BINARY "stateful-operator"
#endif

void daemon_start(struct daemon *d, const char *const *args, const char *const *env)
{
	snprintf(d->log, sizeof(d->log), "/tmp/it-daemon-XXXXXX");
	int fd = mkstemp(d->log);
	assert_true(fd >= 0);
	const char *argv[32] = {SOP_OPERATOR_BINARY};
	int n = 1;
	const char *sa = getenv("SOP_OPERATOR_KUBECONFIG");
	bool as_operator = false;
	for (; args && args[n - 1] && n < 31; n++) {
		argv[n] = args[n - 1];
		as_operator = as_operator || (sa && !strcmp(args[n - 1], sa));
	}
	argv[n] = NULL;
	/* As its ServiceAccount it may fill its Secrets but not create them. */
	if (as_operator)
		it_operator_secrets_once();
	d->pid = fork();
	assert_true(d->pid >= 0);
	if (d->pid == 0) {
		dup2(fd, STDERR_FILENO);
		dup2(fd, STDOUT_FILENO);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd);
}

void daemon_start_operator(struct daemon *d, const char *const *env, bool wait_sync)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address",
			      "0", "--health-probe-bind-address", "0", NULL};
	daemon_start(d, args, env);
	/* Signals are blocked once main runs; a SIGTERM before then would just kill it. */
	if (wait_sync && !daemon_wait_log(d, "all caches synced", 20000))
		fail_msg("operator did not start");
}

struct daemon daemon_start_operator_crashing(const char *step)
{
	struct daemon d;
	char env[96];
	snprintf(env, sizeof(env), "SOP_TEST_CRASH_AFTER=%s", step ? step : "");
	const char *envs[] = {env, NULL};
	daemon_start_operator(&d, envs, step == NULL);
	return d;
}

void daemon_stop_operator(struct daemon *d)
{
	daemon_signal(d, SIGTERM);
	assert_int_equal(daemon_wait_exit(d, 10000), 0);
	daemon_cleanup(d);
}

char *daemon_log(const struct daemon *d)
{
	FILE *f = fopen(d->log, "r");
	if (!f)
		return xstrdup("");
	struct strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (strbuf_add(&sb, buf, n) < 0)
			break;
	fclose(f);
	return strbuf_detach(&sb);
}

struct log_wait {
	const struct daemon *d;
	const char *needle;
};

static bool log_has(void *ctx)
{
	struct log_wait *w = ctx;
	char *log = daemon_log(w->d);
	bool found = strstr(log, w->needle) != NULL;
	free(log);
	return found;
}

bool daemon_wait_log(const struct daemon *d, const char *needle, long timeout_ms)
{
	struct log_wait w = {d, needle};
	return it_wait(log_has, &w, timeout_ms);
}

int daemon_wait_exit(struct daemon *d, long timeout_ms)
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

bool daemon_running(struct daemon *d, int *exit_code)
{
	int status;
	if (waitpid(d->pid, &status, WNOHANG) != d->pid)
		return true;
	*exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return false;
}

void daemon_signal(const struct daemon *d, int sig)
{
	kill(d->pid, sig);
}

void daemon_cleanup(struct daemon *d)
{
	if (!getenv("SOP_IT_KEEP_LOGS"))
		unlink(d->log);
}

static size_t collect(char *data, size_t size, size_t nmemb, void *userp)
{
	struct strbuf *sb = userp;
	return strbuf_add(sb, data, size * nmemb) < 0 ? 0 : size * nmemb;
}

long http_get(int port, const char *path, char **body)
{
	CURL *h = curl_easy_init();
	char *url = xasprintf("http://127.0.0.1:%d%s", port, path);
	struct strbuf sb = STRBUF_INIT;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	long code = 0;
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	free(url);
	if (body)
		*body = strbuf_detach(&sb);
	else
		strbuf_release(&sb);
	return code;
}

bool daemon_run_operator_until_crash(const char *step, long timeout_ms, char **log)
{
	struct daemon d = daemon_start_operator_crashing(step);
	int rc = daemon_wait_exit(&d, timeout_ms);
	bool crashed = rc == 128 + SIGKILL;
	*log = crashed ? NULL : daemon_log(&d); /* daemon_wait_exit killed one that never got there */
	daemon_cleanup(&d);
	return crashed;
}
