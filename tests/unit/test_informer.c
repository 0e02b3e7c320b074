/*
 * The informer's reconnect policy, against a scripted API server on
 * 127.0.0.1 (the real one cannot be made to fail a watch on demand): a
 * watch that ends without delivering anything (an ERROR event, an empty
 * 200) is retried with backoff, not at once; a watch that delivered events,
 * or stayed open a while, resets the backoff.
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
#include "runtime/informer.h"
#include "util/clock.h"
#include "util/log.h"
#include "loopback.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

enum watch_answer {
	ANSWER_ERROR_500, /* 200, then an ERROR event with code 500 */
	ANSWER_EMPTY,     /* 200 with an empty (chunked) body */
	ANSWER_EVENT,     /* 200, one ADDED event, end */
	ANSWER_QUIET,     /* 200, nothing for QUIET_MS, end */
	ANSWER_HUGE,      /* 200, p0 MODIFIED too large to parse, p9 ADDED, end */
};

#define QUIET_MS 5500
#define MAX_WATCHES 4096

struct fake {
	int listen_fd;
	int port;
	pthread_t thread;
	atomic_bool stop;
	enum watch_answer script[8]; /* the last one repeats */
	int nscript;
	atomic_int watches, lists;
	long big_above;          /* LIST pages asking for more than this many items get a 17 MiB answer (0: never) */
	bool huge_item;          /* the LIST has p0, huge (over the parse budget), p1 */
	long list_limits[16];    /* the limit of each LIST */
	double watch_at[MAX_WATCHES]; /* when each watch request arrived (ms, monotonic) */
	struct kube_client *client;
};

static void write_str(int fd, const char *s)
{
	size_t len = strlen(s);
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void write_chunk(int fd, const char *data)
{
	char head[32];
	snprintf(head, sizeof(head), "%zx\r\n", strlen(data));
	write_str(fd, head);
	write_str(fd, data);
	write_str(fd, "\r\n");
}

static const char WATCH_HEAD[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

/*
 * A pod whose tree would take about 24 MiB (100,000 "{}", 300 KB of text),
 * over KUBE_OBJECT_MAX_PARSED; its metadata after the rest. New string.
 */
static char *huge_pod(const char *name, const char *rv)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_appendf(&sb, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"spec\":{\"junk\":[");
	for (int i = 0; i < 100000; i++)
		strbuf_appendf(&sb, "%s{}", i ? "," : "");
	strbuf_appendf(&sb, "]},\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\","
			    "\"resourceVersion\":\"%s\"}}",
		       name, name, rv);
	return strbuf_detach(&sb);
}

static void answer_watch(struct fake *f, int fd)
{
	int i = atomic_load(&f->watches);
	if (i < MAX_WATCHES)
		f->watch_at[i] = clock_mono_ms();
	enum watch_answer a = f->script[i < f->nscript ? i : f->nscript - 1];
	atomic_fetch_add(&f->watches, 1);
	write_str(fd, WATCH_HEAD);
	switch (a) {
	case ANSWER_ERROR_500:
		write_chunk(fd, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
				"\"status\":\"Failure\",\"message\":\"etcd is unwell\","
				"\"reason\":\"InternalError\",\"code\":500}}\n");
		break;
	case ANSWER_EMPTY:
		break;
	case ANSWER_EVENT: {
		char ev[256];
		snprintf(ev, sizeof(ev),
			 "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
			 "{\"name\":\"p%d\",\"namespace\":\"default\",\"resourceVersion\":\"%d\"}}}\n",
			 i, 100 + i);
		write_chunk(fd, ev);
		break;
	}
	case ANSWER_HUGE: {
		char *pod = huge_pod("p0", "7");
		struct strbuf ev = STRBUF_INIT;
		strbuf_appendf(&ev, "{\"type\":\"MODIFIED\",\"object\":%s}\n", pod);
		strbuf_appendf(&ev, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
				    "{\"name\":\"p9\",\"namespace\":\"default\",\"resourceVersion\":\"8\"}}}\n");
		write_chunk(fd, ev.buf);
		strbuf_release(&ev);
		free(pod);
		break;
	}
	case ANSWER_QUIET: {
		double until = clock_mono_ms() + QUIET_MS;
		while (!atomic_load(&f->stop) && clock_mono_ms() < until)
			clock_sleep_ms(20);
		break;
	}
	}
	write_str(fd, "0\r\n\r\n");
}

static void serve_one(struct fake *f, int fd)
{
	char req[8192];
	size_t got = 0;
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(req) - 1) {
		ssize_t n = read(fd, req + got, sizeof(req) - 1 - got);
		if (n <= 0)
			return;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	size_t line = strcspn(req, "\r\n");
	req[line] = '\0';
	if (strstr(req, "watch=true")) {
		answer_watch(f, fd);
		return;
	}
	int nlist = atomic_fetch_add(&f->lists, 1);
	const char *lim = strstr(req, "limit=");
	long limit = lim ? atol(lim + 6) : 0;
	if (nlist < 16)
		f->list_limits[nlist] = limit;
	if ((f->big_above && limit > f->big_above)) {
		/* A page of large objects: more than the client accepts. */
		size_t big = (size_t)17 << 20;
		char head[256];
		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 big);
		write_str(fd, head);
		char *body = xmalloc(big + 1);
		memset(body, ' ', big);
		body[big] = '\0';
		write_str(fd, body);
		free(body);
		return;
	}
	struct strbuf list = STRBUF_INIT;
	strbuf_appendf(&list, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\"},"
			      "\"items\":[");
	if (f->huge_item) {
		char *huge = huge_pod("hh", "4");
		strbuf_appendf(&list, "{\"metadata\":{\"name\":\"p0\",\"namespace\":\"default\",\"resourceVersion\":\"2\"}},"
				      "%s,{\"metadata\":{\"name\":\"p1\",\"namespace\":\"default\",\"resourceVersion\":\"3\"}}",
			       huge);
		free(huge);
	}
	strbuf_appendf(&list, "]}");
	char head[256];
	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n",
		 list.len);
	write_str(fd, head);
	write_str(fd, list.buf);
	strbuf_release(&list);
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

static struct fake *fake_start(const enum watch_answer *script, int n)
{
	struct fake *f = xcalloc(1, sizeof(*f));
	memcpy(f->script, script, sizeof(*script) * (size_t)n);
	f->nscript = n;
	f->listen_fd = loopback_listen(64, &f->port);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_run, f), 0);

	struct kube_client_options o = {.max_retries = -1};
	f->client = loopback_client(f->port, &o);
	return f;
}

static void fake_stop(struct fake *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	close(f->listen_fd);
	kube_client_free(f->client);
	free(f);
}

static struct informer *informer_for(struct fake *f)
{
	struct informer_options o = {.resource = &KUBE_PODS};
	struct informer *inf = informer_new(f->client, &o);
	assert_int_equal(informer_start(inf), 0);
	return inf;
}

/* Waits until the server saw n watches, up to ms; returns whether it did. */
static bool wait_watches(struct fake *f, int n, long ms)
{
	double until = clock_mono_ms() + (double)ms;
	while (atomic_load(&f->watches) < n && clock_mono_ms() < until)
		clock_sleep_ms(10);
	return atomic_load(&f->watches) >= n;
}

/* A watch that keeps failing the same way is retried a handful of times in 2 s, not thousands. */
static void expect_backoff(enum watch_answer a)
{
	struct fake *f = fake_start(&a, 1);
	struct informer *inf = informer_for(f);
	assert_true(wait_watches(f, 1, 5000));
	double first = clock_mono_ms();
	while (clock_mono_ms() < first + 2000)
		clock_sleep_ms(20);
	informer_free(inf);
	int n = atomic_load(&f->watches);
	/* 0.8 s, then 1.6 s: three watches in the first 2.4 s. */
	if (n > 4)
		fail_msg("%d watches in 2 s", n);
	assert_true(n >= 2);
	assert_true(f->watch_at[1] - f->watch_at[0] >= 700);
	assert_int_equal(atomic_load(&f->lists), 1);
	fake_stop(f);
}

static void test_error_event_backs_off(void **state)
{
	(void)state;
	expect_backoff(ANSWER_ERROR_500);
}

static void test_empty_watch_backs_off(void **state)
{
	(void)state;
	expect_backoff(ANSWER_EMPTY);
}

/* Backoff grows while watches fail; one that delivered an event starts it over. */
static void test_events_reset_backoff(void **state)
{
	(void)state;
	static const enum watch_answer script[] = {ANSWER_ERROR_500, ANSWER_ERROR_500, ANSWER_EVENT,
						   ANSWER_ERROR_500, ANSWER_ERROR_500};
	struct fake *f = fake_start(script, 5);
	struct informer *inf = informer_for(f);
	assert_true(wait_watches(f, 5, 10000));
	informer_free(inf);
	const double *t = f->watch_at;
	/* 0 -> 1: 0.8 s; 1 -> 2: 1.6 s; 2 delivered an event: 3 at once; 3 -> 4: 0.8 s again. */
	assert_true(t[1] - t[0] >= 700 && t[1] - t[0] < 1300);
	assert_true(t[2] - t[1] >= 1500 && t[2] - t[1] < 2300);
	if (t[3] - t[2] >= 500)
		fail_msg("reconnect %.0f ms after a watch that delivered an event", t[3] - t[2]);
	if (t[4] - t[3] < 700 || t[4] - t[3] >= 1300)
		fail_msg("backoff %.0f ms after the reset, want 800", t[4] - t[3]);
	fake_stop(f);
}

/* A watch that stayed open several seconds (a quiet cluster) is healthy even without events. */
static void test_long_quiet_watch_resets_backoff(void **state)
{
	(void)state;
	static const enum watch_answer script[] = {ANSWER_EMPTY, ANSWER_EMPTY, ANSWER_QUIET, ANSWER_EMPTY};
	struct fake *f = fake_start(script, 4);
	struct informer *inf = informer_for(f);
	assert_true(wait_watches(f, 4, 15000));
	informer_free(inf);
	const double *t = f->watch_at;
	assert_true(t[1] - t[0] >= 700);
	assert_true(t[2] - t[1] >= 1500);
	double gap = t[3] - (t[2] + QUIET_MS);
	if (gap >= 500)
		fail_msg("reconnect %.0f ms after a quiet watch of %d ms", gap, QUIET_MS);
	fake_stop(f);
}

/*
 * A page of large objects over the client's cap (anyone who may create
 * objects can make one): the relist asks for fewer per page until one
 * fits, and the cache syncs, instead of failing forever.
 */
static void test_page_too_large_is_asked_in_smaller_pages(void **state)
{
	(void)state;
	static const enum watch_answer quiet[] = {ANSWER_QUIET};
	struct fake *f = fake_start(quiet, 1);
	f->big_above = 25;
	struct informer *inf = informer_for(f);
	assert_true(informer_wait_synced(inf, 10000));
	informer_free(inf);
	assert_int_equal(atomic_load(&f->lists), 3);
	assert_int_equal(f->list_limits[0], 100);
	assert_int_equal(f->list_limits[1], 50);
	assert_int_equal(f->list_limits[2], 25);
	fake_stop(f);
}

/* What on_refused was told. */
struct refusals {
	int n;
	char names[4][320], versions[4][130], why[256];
};

static void on_refused(void *ctx, const struct kube_resource *r, const struct kube_object_id *id, const char *why)
{
	struct refusals *rf = ctx;
	assert_ptr_equal(r, &KUBE_PODS);
	if (rf->n < 4) {
		snprintf(rf->names[rf->n], sizeof(rf->names[0]), "%s/%s", id->namespace, id->name);
		snprintf(rf->versions[rf->n], sizeof(rf->versions[0]), "%s/%s", id->uid, id->resource_version);
	}
	snprintf(rf->why, sizeof(rf->why), "%s", why);
	rf->n++;
}

static bool has(struct informer *inf, const char *key)
{
	json_t *o = store_get(informer_store(inf), key);
	json_decref(o);
	return o != NULL;
}

/*
 * An object over the parse budget (KUBE_OBJECT_MAX_PARSED; anyone who may
 * create one can make it): in a LIST it is left out and the cache syncs
 * with the rest; as a watch event it takes the object out of the cache (a
 * stale copy would mislead) and the watch goes on. Each is counted and
 * reported with its uid and resourceVersion, and the informer, its thread
 * and the process live on.
 */
static void test_object_over_the_parse_budget_is_left_out(void **state)
{
	(void)state;
	static const enum watch_answer script[] = {ANSWER_HUGE, ANSWER_QUIET};
	struct fake *f = fake_start(script, 2);
	f->huge_item = true;
	struct refusals rf = {0};
	struct informer_options o = {.resource = &KUBE_PODS, .on_refused = on_refused, .refused_ctx = &rf};
	struct informer *inf = informer_new(f->client, &o);
	assert_int_equal(informer_start(inf), 0);
	assert_true(informer_wait_synced(inf, 10000));
	assert_true(wait_watches(f, 2, 10000));
	informer_free(inf);

	assert_int_equal(rf.n, 2);
	assert_string_equal(rf.names[0], "default/hh");
	assert_string_equal(rf.versions[0], "uid-hh/4");
	assert_string_equal(rf.names[1], "default/p0");
	assert_string_equal(rf.versions[1], "uid-p0/7");
	if (!strstr(rf.why, "more than 16777216 bytes of memory, the budget for an object from the API server"))
		fail_msg("why: %s", rf.why);
	fake_stop(f);

	/* The cache, watched to the end: p0 taken out, p1 and p9 in, hh never. */
	f = fake_start(script, 2);
	f->huge_item = true;
	memset(&rf, 0, sizeof(rf));
	inf = informer_new(f->client, &o);
	assert_int_equal(informer_start(inf), 0);
	assert_true(informer_wait_synced(inf, 10000));
	assert_true(wait_watches(f, 2, 10000));
	assert_false(has(inf, "default/hh"));
	assert_false(has(inf, "default/p0"));
	assert_true(has(inf, "default/p1"));
	assert_true(has(inf, "default/p9"));
	/* Left out, not gone: a controller can tell (store_refused). */
	assert_true(store_refused(informer_store(inf), "default/hh"));
	assert_true(store_refused(informer_store(inf), "default/p0"));
	assert_false(store_refused(informer_store(inf), "default/p1"));
	struct informer_stats st;
	informer_get_stats(inf, &st);
	assert_int_equal(st.refused, 2);
	informer_free(inf);
	fake_stop(f);
}

static int setup(void **state)
{
	(void)state;
	log_setup(LOG_ERROR, LOG_FORMAT_TEXT);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_event_backs_off),
		cmocka_unit_test(test_page_too_large_is_asked_in_smaller_pages),
		cmocka_unit_test(test_empty_watch_backs_off),
		cmocka_unit_test(test_events_reset_backoff),
		cmocka_unit_test(test_long_quiet_watch_resets_backoff),
		cmocka_unit_test(test_object_over_the_parse_budget_is_left_out),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
