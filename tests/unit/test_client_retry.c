/*
 * The client's retry policy, against a scripted HTTP server (the real API
 * server cannot answer 429 or 503 on demand): 429 and 5xx are retried
 * with backoff and Retry-After is honoured; 409 and other 4xx are not
 * retried; after the last attempt the API's Status reaches the caller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/kube_client.h"
#include "util/clock.h"
#include "util/xalloc.h"

/*
 * A scripted HTTP/1.1 server on 127.0.0.1: one request per connection,
 * answered with the next status of the script (the last one repeats),
 * with a Retry-After header when the script gives one.
 */
struct fake {
	int listen_fd;
	int port;
	pthread_t thread;
	int codes[8];
	int retry_after[8]; /* seconds; -1 = no header */
	int ncodes;
	atomic_int served;
	atomic_bool stop;
	char last_request_line[512];
	pthread_mutex_t lock;
	struct kube_client *client;
};

static void serve_one(struct fake *f, int fd)
{
	char req[8192];
	size_t got = 0;
	/* Read the head, then a body of Content-Length, if any. */
	while (got < sizeof(req) - 1) {
		ssize_t n = read(fd, req + got, sizeof(req) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		char *end = strstr(req, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(req, "Content-Length:");
		size_t body = cl && cl < end ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
		if (got >= (size_t)(end + 4 - req) + body)
			break;
	}
	req[got] = '\0';
	pthread_mutex_lock(&f->lock);
	size_t line = strcspn(req, "\r\n");
	snprintf(f->last_request_line, sizeof(f->last_request_line), "%.*s", (int)line, req);
	pthread_mutex_unlock(&f->lock);

	int i = atomic_fetch_add(&f->served, 1);
	int k = i < f->ncodes ? i : f->ncodes - 1;
	int code = f->codes[k];
	char body[256];
	if (code == 200 || code == 201)
		snprintf(body, sizeof(body), "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
	else
		snprintf(body, sizeof(body),
			 "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"%s\","
			 "\"message\":\"scripted %d\",\"code\":%d}",
			 code == 429 ? "TooManyRequests" : code == 409 ? "Conflict" : "InternalError", code,
			 code);
	char retry[64] = "";
	if (f->retry_after[k] >= 0)
		snprintf(retry, sizeof(retry), "Retry-After: %d\r\n", f->retry_after[k]);
	char head[512];
	int hn = snprintf(head, sizeof(head),
			  "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n"
			  "Connection: close\r\n\r\n",
			  code, retry, strlen(body));
	if (write(fd, head, (size_t)hn) < 0 || write(fd, body, strlen(body)) < 0)
		return;
}

static void *fake_run(void *arg)
{
	struct fake *f = arg;
	while (!atomic_load(&f->stop)) {
		struct pollfd p = {f->listen_fd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept(f->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		serve_one(f, fd);
		close(fd);
	}
	return NULL;
}

/* codes and retry_after have n entries. */
static void fake_start(struct fake *f, const int *codes, const int *retry_after, int n, bool dry_run)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->codes, codes, sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++)
		f->retry_after[i] = retry_after ? retry_after[i] : -1;
	f->ncodes = n;
	pthread_mutex_init(&f->lock, NULL);
	f->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = {.sin_family = AF_INET};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(f->listen_fd, 16), 0);
	assert_int_equal(getsockname(f->listen_fd, (struct sockaddr *)&addr, &len), 0);
	f->port = ntohs(addr.sin_port);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_run, f), 0);

	struct kube_config cfg = {0};
	cfg.server = xasprintf("http://127.0.0.1:%d", f->port);
	cfg.token = xstrdup("t");
	struct kube_client_options o = {.max_retries = 3, .dry_run = dry_run};
	char *err = NULL;
	f->client = kube_client_new(&cfg, &o, &err);
	assert_non_null(f->client);
}

static void fake_stop(struct fake *f)
{
	kube_client_free(f->client);
	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	close(f->listen_fd);
	pthread_mutex_destroy(&f->lock);
}

static void test_503_then_ok_is_retried(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, (int[]){503, 500, 200}, NULL, 3, false);
	json_t *out = NULL;
	struct kube_error err;
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", &out, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 3);
	assert_string_equal(kube_obj_str(out, "metadata.name"), "x");
	json_decref(out);
	fake_stop(&f);
}

static void test_retry_after_is_honoured(void **state)
{
	(void)state;
	struct fake f;
	/* 429 with Retry-After: 2: the client waits the 2 s it was told, not its own 100 ms. */
	fake_start(&f, (int[]){429, 200}, (int[]){2, -1}, 2, false);
	struct kube_error err;
	double t = clock_mono_ms();
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	double took = clock_mono_ms() - t;
	assert_int_equal(atomic_load(&f.served), 2);
	assert_true(took >= 2000);
	assert_true(took < 4000);
	fake_stop(&f);

	/* Without Retry-After: the client's own backoff, 100 ms then 200 ms (plus jitter). */
	fake_start(&f, (int[]){429, 429, 200}, NULL, 3, false);
	t = clock_mono_ms();
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	took = clock_mono_ms() - t;
	assert_int_equal(atomic_load(&f.served), 3);
	assert_true(took >= 300);
	assert_true(took < 2000);
	fake_stop(&f);
}

static void test_gives_up_with_the_api_status(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, (int[]){500}, NULL, 1, false);
	struct kube_error err;
	int rc = kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 500);
	assert_string_equal(err.reason, "InternalError");
	assert_string_equal(err.message, "scripted 500");
	assert_int_equal(atomic_load(&f.served), 4); /* the first try and 3 retries */
	fake_stop(&f);
}

static void test_conflict_is_not_retried(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, (int[]){409, 200}, NULL, 2, false);
	struct kube_error err;
	int rc = kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 409);
	assert_string_equal(err.reason, "Conflict");
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);
}

static void test_transport_failure_is_reported(void **state)
{
	(void)state;
	struct kube_config cfg = {0};
	cfg.server = xstrdup("http://127.0.0.1:1"); /* nothing listens on port 1 */
	char *e = NULL;
	struct kube_client_options o = {.max_retries = 1};
	struct kube_client *c = kube_client_new(&cfg, &o, &e);
	assert_non_null(c);
	struct kube_error err;
	assert_int_equal(kube_get(c, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_ETRANSPORT);
	assert_int_equal(err.code, 0);
	assert_non_null(strstr(err.message, "GET /api/v1/namespaces/ns/configmaps/x"));
	kube_client_free(c);
}

static void test_dry_run_marks_mutations_only(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, (int[]){201, 200}, NULL, 2, true);
	struct kube_error err;
	json_t *cm = json_pack("{s:{s:s}}", "metadata", "name", "x");
	assert_int_equal(kube_create(f.client, &KUBE_CONFIGMAPS, "ns", cm, NULL, &err), KUBE_OK);
	assert_string_equal(f.last_request_line, "POST /api/v1/namespaces/ns/configmaps?dryRun=All HTTP/1.1");
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	/* Reads are real. */
	assert_string_equal(f.last_request_line, "GET /api/v1/namespaces/ns/configmaps/x HTTP/1.1");
	json_decref(cm);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_503_then_ok_is_retried),
		cmocka_unit_test(test_retry_after_is_honoured),
		cmocka_unit_test(test_gives_up_with_the_api_status),
		cmocka_unit_test(test_conflict_is_not_retried),
		cmocka_unit_test(test_transport_failure_is_reported),
		cmocka_unit_test(test_dry_run_marks_mutations_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
