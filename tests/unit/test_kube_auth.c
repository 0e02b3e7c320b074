/*
 * Unit tests for kube_auth.c: what a token file may hold, and how an exec
 * plugin's credential is shared between threads (the plugin may take up
 * to 60 s, so it must not hold up requests that have a usable token).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/kube_client.h"
#include "client/kube_client_internal.h"
#include "util/clock.h"
#include "scratch_dir.h"
#include "util/xalloc.h"

#define V1 "client.authentication.k8s.io/v1"

static char *tmpdir; /* scratch directory; removed at the end */

static char *write_file(const char *name, const char *content, mode_t mode)
{
	return scratch_file_write(tmpdir, name, content, mode);
}

static int group_setup(void **state)
{
	(void)state;
	tmpdir = scratch_dir_make("test_kube_auth");
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

/* A client that never connects (nothing listens on port 1); cfg fields are taken over. */
static struct kube_client *client_with(struct kube_config *cfg)
{
	cfg->server = xstrdup("http://127.0.0.1:1");
	char *err = NULL;
	struct kube_client *c = kube_client_new(cfg, NULL, &err);
	if (!c)
		fail_msg("kube_client_new: %s", err);
	return c;
}

/* ------------------------------------------------------------------ */
/* Token files                                                         */
/* ------------------------------------------------------------------ */

static void test_token_file_trailing_newline(void **state)
{
	(void)state;
	struct kube_config cfg = {0};
	cfg.token_file = write_file("token-ok", "abc.def\n", 0600);
	struct kube_client *c = client_with(&cfg);
	struct request_auth a;
	char *err = NULL;
	assert_int_equal(kube__get_auth(c, false, &a, &err), 0);
	assert_string_equal(a.bearer, "abc.def");
	kube__request_auth_release(&a);
	kube_client_free(c);
}

/* A token file of 64 KiB is read; one byte more is refused, naming the file and the cap. */
static void test_token_file_size_cap(void **state)
{
	(void)state;
	size_t cap = 64u << 10;
	char *at_cap = scratch_file_sized(tmpdir, "token-at-cap", "", 'a', cap);
	char *over = scratch_file_sized(tmpdir, "token-over-cap", "", 'a', cap + 1);

	struct kube_config cfg = {0};
	cfg.token_file = at_cap;
	struct kube_client *c = client_with(&cfg);
	struct request_auth a;
	char *err = NULL;
	if (kube__get_auth(c, false, &a, &err) != 0)
		fail_msg("a 64 KiB token: %s", err);
	assert_int_equal(strlen(a.bearer), cap);
	kube__request_auth_release(&a);
	kube_client_free(c);

	cfg = (struct kube_config){0};
	cfg.token_file = xstrdup(over);
	c = client_with(&cfg);
	assert_int_equal(kube__get_auth(c, false, &a, &err), -1);
	assert_null(a.bearer);
	char *want = xasprintf("token file %s is larger than 65536 bytes", over);
	assert_string_equal(err, want);
	free(want);
	free(err);
	kube_client_free(c);
	free(over);
}

/* A line break inside the token would put a header of its own on every request. */
static void test_token_file_line_break_refused(void **state)
{
	(void)state;
	static const char *bad[] = {"abc\r\nX-Evil: 1\n", "abc\nX-Evil: 1", "ab\x01" "c\n", "a\tb"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kube_config cfg = {0};
		char *name = xasprintf("token-bad%zu", i);
		char *path = write_file(name, bad[i], 0600);
		cfg.token_file = xstrdup(path);
		struct kube_client *c = client_with(&cfg);
		struct request_auth a;
		char *err = NULL;
		assert_int_equal(kube__get_auth(c, false, &a, &err), -1);
		assert_null(a.bearer);
		char *want = xasprintf("token file %s contains a line break or control character", path);
		assert_string_equal(err, want);
		free(want);
		free(err);
		/* And no request goes out with it. */
		struct kube_error kerr;
		assert_int_equal(kube_get(c, &KUBE_CONFIGMAPS, "ns", "x", NULL, &kerr), KUBE_EAUTH);
		assert_non_null(strstr(kerr.message, "contains a line break"));
		kube_client_free(c);
		free(path);
		free(name);
	}
}

/* ------------------------------------------------------------------ */
/* Exec plugins                                                        */
/* ------------------------------------------------------------------ */

/*
 * A plugin that counts its runs in tmpdir/<name>.count; run 1 returns a
 * token expiring first_exp seconds from now, later runs take slow
 * seconds and return one valid for an hour. exit_code != 0 fails every
 * run after slow seconds.
 */
static char *counting_plugin(const char *name, int first_exp, int slow, int exit_code)
{
	char *body = xasprintf(
		"#!/bin/sh\n"
		"f=%s/%s.count\n"
		"n=$(cat \"$f\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$f\"\n"
		"if [ %d -ne 0 ]; then sleep %d; exit %d; fi\n"
		"if [ $n -eq 1 ]; then left=%d; else sleep %d; left=3600; fi\n"
		"exp=$(date -u -d \"@$(( $(date +%%s) + left ))\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
		"printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
		"\"status\":{\"token\":\"t%%s\",\"expirationTimestamp\":\"%%s\"}}' $n $exp\n",
		tmpdir, name, exit_code, slow, exit_code, first_exp, slow);
	char *p = write_file(name, body, 0700);
	free(body);
	return p;
}

static int runs_of(const char *name)
{
	char *path = xasprintf("%s/%s.count", tmpdir, name);
	FILE *f = fopen(path, "r");
	free(path);
	int n = 0;
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static struct kube_client *exec_client(char *plugin_path)
{
	struct kube_config cfg = {0};
	cfg.exec = xcalloc(1, sizeof(*cfg.exec));
	cfg.exec->command = plugin_path;
	cfg.exec->api_version = xstrdup(V1);
	return client_with(&cfg);
}

/* Returns the bearer (new string) and how long the call took in *ms. */
static char *bearer_timed(struct kube_client *c, bool refresh, double *ms)
{
	struct request_auth a;
	char *err = NULL;
	double t = clock_mono_ms();
	if (kube__get_auth(c, refresh, &a, &err) != 0)
		fail_msg("kube__get_auth: %s", err);
	*ms = clock_mono_ms() - t;
	char *b = xstrdup(a.bearer);
	kube__request_auth_release(&a);
	return b;
}

/*
 * A credential close to expiry is renewed in the background while it is
 * still handed out: the Lease renewal (one thread on its own client)
 * is never held up by a slow plugin while it has a valid token.
 */
static void test_renewal_ahead_of_expiry_does_not_block(void **state)
{
	(void)state;
	struct kube_client *c = exec_client(counting_plugin("ahead", 8, 3, 0));
	double ms;
	char *b = bearer_timed(c, false, &ms);
	assert_string_equal(b, "t1");
	free(b);
	/* t1 expires in 8 s, inside the 10 s renewal window; the renewal takes 3 s. */
	for (int i = 0; i < 3; i++) {
		b = bearer_timed(c, false, &ms);
		assert_string_equal(b, "t1");
		if (ms >= 1000)
			fail_msg("call %d waited %.0f ms for the plugin", i, ms);
		free(b);
	}
	/* The renewal lands within its 3 s (10 s allowed on a loaded machine). */
	for (int i = 0; i < 100; i++) {
		b = bearer_timed(c, false, &ms);
		bool renewed = !strcmp(b, "t2");
		free(b);
		if (renewed)
			break;
		if (i == 99)
			fail_msg("the renewal did not land within 10 s");
		clock_sleep_ms(100);
	}
	assert_int_equal(runs_of("ahead"), 2); /* one background run, not one per call */
	kube_client_free(c);
}

struct waiter {
	struct kube_client *c;
	bool refresh;
	int rc;
	char *bearer;
	char *err;
};

static void *wait_auth(void *arg)
{
	struct waiter *w = arg;
	struct request_auth a;
	w->rc = kube__get_auth(w->c, w->refresh, &a, &w->err);
	if (w->rc == 0) {
		w->bearer = xstrdup(a.bearer);
		kube__request_auth_release(&a);
	}
	return NULL;
}

static void run_waiters(struct kube_client *c, struct waiter *w, int n, bool refresh)
{
	pthread_t t[8];
	for (int i = 0; i < n; i++) {
		w[i] = (struct waiter){.c = c, .refresh = refresh};
		assert_int_equal(pthread_create(&t[i], NULL, wait_auth, &w[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* Threads with no usable credential wait for one run and share it. */
static void test_one_run_for_all_waiters(void **state)
{
	(void)state;
	struct kube_client *c = exec_client(counting_plugin("shared", 3600, 0, 0));
	struct waiter w[4];
	run_waiters(c, w, 4, false);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(w[i].rc, 0);
		assert_string_equal(w[i].bearer, "t1");
		free(w[i].bearer);
	}
	assert_int_equal(runs_of("shared"), 1);
	kube_client_free(c);
}

/* A failing plugin is run once for the threads waiting on it, not once per thread. */
static void test_failure_is_shared(void **state)
{
	(void)state;
	char *p = counting_plugin("failing", 0, 1, 3);
	struct kube_client *c = exec_client(xstrdup(p));
	struct waiter w[3];
	run_waiters(c, w, 3, false);
	char *want = xasprintf("exec plugin \"%s\" exited with status 3", p);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(w[i].rc, -1);
		assert_string_equal(w[i].err, want);
		free(w[i].err);
	}
	assert_int_equal(runs_of("failing"), 1);
	free(want);
	free(p);
	kube_client_free(c);
}

/* After a 401 the credential is fetched anew, even though the cached one has not expired. */
static void test_refresh_runs_the_plugin(void **state)
{
	(void)state;
	struct kube_client *c = exec_client(counting_plugin("refresh", 3600, 0, 0));
	double ms;
	char *b = bearer_timed(c, false, &ms);
	assert_string_equal(b, "t1");
	free(b);
	b = bearer_timed(c, true, &ms);
	assert_string_equal(b, "t2");
	free(b);
	b = bearer_timed(c, false, &ms);
	assert_string_equal(b, "t2");
	free(b);
	assert_int_equal(runs_of("refresh"), 2);
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_file_trailing_newline),
		cmocka_unit_test(test_token_file_line_break_refused),
		cmocka_unit_test(test_token_file_size_cap),
		cmocka_unit_test(test_renewal_ahead_of_expiry_does_not_block),
		cmocka_unit_test(test_one_run_for_all_waiters),
		cmocka_unit_test(test_failure_is_shared),
		cmocka_unit_test(test_refresh_runs_the_plugin),
	};
	return cmocka_run_group_tests_name("kube_auth", tests, group_setup, group_teardown);
}
