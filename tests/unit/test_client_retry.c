/*
 * The client's retry policy, against a scripted HTTP server (the real API
 * server cannot answer 429 or 503, or cut a connection, on demand): 429
 * and 5xx are retried with backoff and Retry-After is honoured within
 * caps; 409 and other 4xx are not retried; a write that may have reached
 * the server is repeated only when a precondition makes that harmless;
 * after the last attempt the API's Status reaches the caller. Also the
 * response cap and the low-speed limit (requests only, never watches).
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
#include "client/kube_client_internal.h"
#include "client/watch_decoder.h"
#include "util/clock.h"
#include "loopback.h"
#include "util/xalloc.h"
#include "client/kube_object.h"
#include "runtime/action.h"

/*
 * A scripted HTTP/1.1 server on 127.0.0.1 with keep-alive, one thread per
 * connection. Each request takes the next step of the script (the last
 * one repeats): an answer (with Retry-After when the step gives one), 409
 * AlreadyExists, a cut (the request is read, then the connection closed unanswered: the
 * client cannot tell whether it was acted on), a stall, a body of a
 * given size, a watch stream that idles between two events, a watch
 * event of a given size, or a LIST whose one item nests a given depth.
 */
enum step_kind { ANSWER, EXISTS, CUT, STALL, BIG, WATCH_IDLE, WATCH_BIG, LIST_DEEP };

struct step {
	enum step_kind kind;
	int code;
	int retry_after; /* seconds; -1 = no header */
	size_t size;     /* BIG: the body, {"d":"aaa..."}; WATCH_BIG: the event, without its newline;
			    LIST_DEEP: the item's depth, {"d":[[...]]} */
};

#define MAX_CONNS 32

struct fake {
	int listen_fd;
	int port;
	pthread_t thread;
	struct step steps[8];
	int nsteps;
	atomic_int served;      /* requests read */
	atomic_int connections; /* connections accepted */
	atomic_bool stop;
	pthread_mutex_t lock;
	char last_request_line[512];
	char methods[16][16];   /* method of each request, in order */
	pthread_t conns[MAX_CONNS];
	int nconns;
	struct kube_client *client;
};

struct conn {
	struct fake *f;
	int fd;
};

/* Waits until fd is readable or the server stops. */
static bool wait_readable(struct fake *f, int fd)
{
	while (!atomic_load(&f->stop)) {
		struct pollfd p = {fd, POLLIN, 0};
		int r = poll(&p, 1, 50);
		if (r > 0)
			return true;
	}
	return false;
}

/* Reads one request (head and Content-Length body) into req; false at EOF or stop. */
static bool read_request(struct fake *f, int fd, char *req, size_t size)
{
	size_t got = 0;
	while (got < size - 1) {
		if (!wait_readable(f, fd))
			return false;
		ssize_t n = read(fd, req + got, size - 1 - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
		req[got] = '\0';
		char *end = strstr(req, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(req, "Content-Length:");
		size_t body = cl && cl < end ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
		if (got >= (size_t)(end + 4 - req) + body)
			return true;
	}
	return true;
}

static bool send_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
		if (n <= 0)
			return false;
		data += n;
		len -= (size_t)n;
	}
	return true;
}

/* Sends n bytes of c. */
static bool send_filler(int fd, char c, size_t n)
{
	static char chunk[65536];
	memset(chunk, c, sizeof(chunk));
	for (size_t k; n; n -= k) {
		k = n < sizeof(chunk) ? n : sizeof(chunk);
		if (!send_all(fd, chunk, k))
			return false;
	}
	return true;
}

/*
 * n bytes (n >= 2) of array items: strings of up to 1,000 'x', comma
 * separated. Text that costs about its size once parsed, within the parse
 * budget (one string of megabytes would cost three times its length).
 */
static bool send_strings(int fd, size_t n)
{
	char *buf = xmalloc(n);
	memset(buf, 'x', n);
	for (size_t i = 0; i < n; i += 1003) {
		buf[i] = '"';
		size_t end = i + 1001 < n - 1 ? i + 1001 : n - 1; /* the closing quote */
		if (n - end - 1 < 3 && end < n - 1) /* no room for another item: this one runs to the end */
			end = n - 1;
		buf[end] = '"';
		if (end + 1 < n)
			buf[end + 1] = ',';
		if (end == n - 1)
			break;
	}
	bool ok = send_all(fd, buf, n);
	free(buf);
	return ok;
}

static void idle_ms(struct fake *f, long ms)
{
	for (long t = 0; t < ms && !atomic_load(&f->stop); t += 10)
		clock_sleep_ms(10);
}

/* Answers one request per step; returns false when the connection is to be closed. */
static bool serve_step(struct fake *f, int fd, const struct step *st)
{
	char head[512];
	switch (st->kind) {
	case CUT:
		return false;
	case STALL: {
		/* A head and a little of the body, then nothing until the client gives up. */
		const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				"Content-Length: 1000\r\n\r\n{\"kind\":";
		if (!send_all(fd, h, strlen(h)))
			return false;
		char b;
		while (wait_readable(f, fd) && read(fd, &b, 1) > 0)
			;
		return false;
	}
	case BIG: {
		int hn = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				  "Content-Length: %zu\r\n\r\n{\"d\":\"", st->size);
		(void)(send_all(fd, head, (size_t)hn) && send_filler(fd, 'a', st->size - 8) &&
		       send_all(fd, "\"}", 2));
		return false;
	}
	case WATCH_BIG: {
		static const char ev_head[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\"},"
					      "\"data\":[";
		static const char ev_tail[] = "]}}\n";
		const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
		(void)(send_all(fd, h, strlen(h)) && send_all(fd, ev_head, strlen(ev_head)) &&
		       send_strings(fd, st->size - strlen(ev_head) - (strlen(ev_tail) - 1)) &&
		       send_all(fd, ev_tail, strlen(ev_tail)));
		return false;
	}
	case WATCH_IDLE: {
		const char *ev = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\","
				 "\"metadata\":{\"name\":\"a\"}}}\n";
		const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				"Transfer-Encoding: chunked\r\n\r\n";
		char chunk[256];
		int cn = snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n", strlen(ev), ev);
		if (!send_all(fd, h, strlen(h)) || !send_all(fd, chunk, (size_t)cn))
			return false;
		idle_ms(f, 2500);
		if (!send_all(fd, chunk, (size_t)cn))
			return false;
		send_all(fd, "0\r\n\r\n", 5);
		return true;
	}
	case LIST_DEEP: {
		static const char list_head[] = "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"d\":";
		static const char list_tail[] = "}]}";
		size_t arrays = st->size - 1; /* the item object is a level */
		int hn = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				  "Content-Length: %zu\r\n\r\n", strlen(list_head) + 2 * arrays + strlen(list_tail));
		return send_all(fd, head, (size_t)hn) && send_all(fd, list_head, strlen(list_head)) &&
		       send_filler(fd, '[', arrays) && send_filler(fd, ']', arrays) &&
		       send_all(fd, list_tail, strlen(list_tail));
	}
	case ANSWER:
	case EXISTS:
		break;
	}
	int code = st->code;
	char body[256];
	if (code >= 200 && code < 300)
		snprintf(body, sizeof(body), "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
	else
		snprintf(body, sizeof(body),
			 "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"%s\","
			 "\"message\":\"scripted %d\",\"code\":%d}",
			 st->kind == EXISTS ? "AlreadyExists"
			 : code == 429	    ? "TooManyRequests"
			 : code == 409	    ? "Conflict"
					    : "InternalError",
			 code, code);
	char retry[64] = "";
	if (st->retry_after >= 0)
		snprintf(retry, sizeof(retry), "Retry-After: %d\r\n", st->retry_after);
	int hn = snprintf(head, sizeof(head),
			  "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
			  code, retry, strlen(body));
	return send_all(fd, head, (size_t)hn) && send_all(fd, body, strlen(body));
}

static void *conn_run(void *arg)
{
	struct conn *cn = arg;
	struct fake *f = cn->f;
	char req[8192];
	while (read_request(f, cn->fd, req, sizeof(req))) {
		int i = atomic_fetch_add(&f->served, 1);
		pthread_mutex_lock(&f->lock);
		size_t line = strcspn(req, "\r\n");
		snprintf(f->last_request_line, sizeof(f->last_request_line), "%.*s", (int)line, req);
		if (i < 16)
			snprintf(f->methods[i], sizeof(f->methods[i]), "%.*s", (int)strcspn(req, " "), req);
		pthread_mutex_unlock(&f->lock);
		if (!serve_step(f, cn->fd, &f->steps[i < f->nsteps ? i : f->nsteps - 1]))
			break;
	}
	close(cn->fd);
	free(cn);
	return NULL;
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
		atomic_fetch_add(&f->connections, 1);
		struct conn *cn = xmalloc(sizeof(*cn));
		cn->f = f;
		cn->fd = fd;
		assert_true(f->nconns < MAX_CONNS);
		if (pthread_create(&f->conns[f->nconns], NULL, conn_run, cn) != 0)
			abort();
		f->nconns++;
	}
	return NULL;
}

static void fake_start_steps(struct fake *f, const struct step *steps, int n,
			     const struct kube_client_options *o)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->steps, steps, sizeof(*steps) * (size_t)n);
	f->nsteps = n;
	pthread_mutex_init(&f->lock, NULL);
	f->listen_fd = loopback_listen(16, &f->port);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_run, f), 0);

	f->client = loopback_client(f->port, o);
}

/* Answers only: codes and retry_after have n entries. */
static void fake_start(struct fake *f, const int *codes, const int *retry_after, int n, bool dry_run)
{
	struct step steps[8];
	for (int i = 0; i < n; i++)
		steps[i] = (struct step){ANSWER, codes[i], retry_after ? retry_after[i] : -1, 0};
	struct kube_client_options o = {.max_retries = 3, .dry_run = dry_run};
	fake_start_steps(f, steps, n, &o);
}

static void fake_stop(struct fake *f)
{
	kube_client_free(f->client);
	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	for (int i = 0; i < f->nconns; i++)
		pthread_join(f->conns[i], NULL);
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

static struct fake *start_cut(struct fake *f, enum step_kind first, int then_code)
{
	struct step steps[] = {{first, 0, -1, 0}, {ANSWER, then_code, -1, 0}};
	struct kube_client_options o = {.max_retries = 3};
	fake_start_steps(f, steps, 2, &o);
	return f;
}

static json_t *configmap(void)
{
	return json_pack("{s:{s:s}}", "metadata", "name", "x");
}

/* A POST cut after the server read it may have created the object: it is not sent again. */
static void test_cut_post_is_not_retried(void **state)
{
	(void)state;
	struct fake f;
	struct kube_error err;
	json_t *cm = configmap();
	start_cut(&f, CUT, 201);
	assert_int_equal(kube_create(f.client, &KUBE_CONFIGMAPS, "ns", cm, NULL, &err), KUBE_ETRANSPORT);
	assert_int_equal(err.code, 0);
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);

	/* A 5xx may come after the write was done (a timeout): not retried either. */
	fake_start(&f, (int[]){503, 201}, NULL, 2, false);
	assert_int_equal(kube_create(f.client, &KUBE_CONFIGMAPS, "ns", cm, NULL, &err), KUBE_EHTTP);
	assert_int_equal(err.code, 503);
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);

	/* 429 means the request was turned away unhandled: retried. */
	fake_start(&f, (int[]){429, 201}, NULL, 2, false);
	assert_int_equal(kube_create(f.client, &KUBE_CONFIGMAPS, "ns", cm, NULL, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 2);
	fake_stop(&f);

	/* In dry-run mode nothing is stored, so a repeat is harmless. */
	struct step steps[] = {{CUT, 0, -1, 0}, {ANSWER, 201, -1, 0}};
	struct kube_client_options o = {.max_retries = 3, .dry_run = true};
	fake_start_steps(&f, steps, 2, &o);
	assert_int_equal(kube_create(f.client, &KUBE_CONFIGMAPS, "ns", cm, NULL, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 2);
	fake_stop(&f);
	json_decref(cm);
}

/* Reads, and writes a precondition makes safe to repeat, are retried after a cut. */
static void test_cut_guarded_requests_are_retried(void **state)
{
	(void)state;
	struct fake f;
	struct kube_error err;

	start_cut(&f, CUT, 200);
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 2);
	fake_stop(&f);

	struct kube_delete_options by_uid = {.precondition_uid = "5a1e"};
	start_cut(&f, CUT, 200);
	assert_int_equal(kube_delete(f.client, &KUBE_PODS, "ns", "p", &by_uid, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 2);
	assert_string_equal(f.methods[1], "DELETE");
	fake_stop(&f);

	/* By name only: a repeat could delete a new object of that name. */
	start_cut(&f, CUT, 200);
	assert_int_equal(kube_delete(f.client, &KUBE_PODS, "ns", "p", NULL, &err), KUBE_ETRANSPORT);
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);

	json_t *guarded = json_pack("{s:{s:s}, s:{s:i}}", "metadata", "resourceVersion", "42",
				    "spec", "replicas", 3);
	start_cut(&f, CUT, 200);
	assert_int_equal(kube_patch(f.client, &KUBE_STATEFULSETS, "ns", "s", NULL, KUBE_PATCH_MERGE,
				    guarded, NULL, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 2);
	fake_stop(&f);
	json_decref(guarded);

	json_t *bare = json_pack("{s:{s:i}}", "spec", "replicas", 3);
	start_cut(&f, CUT, 200);
	assert_int_equal(kube_patch(f.client, &KUBE_STATEFULSETS, "ns", "s", NULL, KUBE_PATCH_MERGE,
				    bare, NULL, &err), KUBE_ETRANSPORT);
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);
	json_decref(bare);

	json_t *tested = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:i}]", "op", "test", "path",
				   "/metadata/resourceVersion", "value", "42", "op", "add", "path",
				   "/spec/replicas", "value", 3);
	start_cut(&f, CUT, 200);
	assert_int_equal(kube_patch(f.client, &KUBE_STATEFULSETS, "ns", "s", NULL, KUBE_PATCH_JSON,
				    tested, NULL, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 2);
	fake_stop(&f);
	json_decref(tested);
}

/*
 * libcurl itself resends a request once when a kept-alive connection
 * closes before any answer; a POST must not ride on one.
 */
static void test_post_not_resent_on_a_kept_alive_connection(void **state)
{
	(void)state;
	struct fake f;
	struct kube_error err;
	struct step steps[] = {{ANSWER, 200, -1, 0}, {CUT, 0, -1, 0}, {ANSWER, 201, -1, 0}};
	struct kube_client_options o = {.max_retries = 3};
	fake_start_steps(&f, steps, 3, &o);
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	json_t *cm = configmap();
	assert_int_equal(kube_create(f.client, &KUBE_CONFIGMAPS, "ns", cm, NULL, &err), KUBE_ETRANSPORT);
	json_decref(cm);
	assert_int_equal(atomic_load(&f.served), 2);
	assert_string_equal(f.methods[1], "POST");
	/* Reads keep using the kept-alive connection. */
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.connections), 2);
	fake_stop(&f);
}

/*
 * An Event's name is its recorder's alone: its POST may ride a kept-alive
 * connection, and AlreadyExists after a resend is its own first send.
 */
static void test_named_create_rides_a_kept_alive_connection(void **state)
{
	(void)state;
	struct fake f;
	struct kube_error err;
	struct step steps[] = {{ANSWER, 200, -1, 0}, {ANSWER, 201, -1, 0}, {CUT, 0, -1, 0}, {EXISTS, 409, -1, 0}};
	struct kube_client_options o = {.max_retries = 3};
	fake_start_steps(&f, steps, 4, &o);
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	json_t *ev = json_pack("{s:{s:s}}", "metadata", "name", "web.17f0c2a9b3d4e5f6");
	assert_int_equal(kube_create_named(f.client, &KUBE_EVENTS, "ns", ev, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.connections), 1); /* no new connection for the POST */
	/* Cut after the server read it, sent again, found there: done. */
	assert_int_equal(kube_create_named(f.client, &KUBE_EVENTS, "ns", ev, &err), KUBE_OK);
	assert_int_equal(atomic_load(&f.served), 4);
	assert_string_equal(f.methods[3], "POST");
	fake_stop(&f);
	/* A plain create would not be sent again (test_cut_post_is_not_retried): a second object. */
	json_decref(ev);
}

static void test_repeat_is_harmless(void **state)
{
	(void)state;
	static const struct {
		const char *method, *ct, *body;
		bool want;
	} cases[] = {
		{"GET", NULL, NULL, true},
		{"PUT", "application/json", "{\"metadata\":{}}", true},
		{"POST", "application/json", "{\"metadata\":{\"resourceVersion\":\"1\"}}", false},
		{"DELETE", "application/json", "{\"kind\":\"DeleteOptions\"}", false},
		{"DELETE", NULL, NULL, false},
		{"DELETE", "application/json", "{\"preconditions\":{\"uid\":\"u\"}}", true},
		{"DELETE", "application/json", "{\"preconditions\":{\"resourceVersion\":\"7\"}}", true},
		{"DELETE", "application/json", "{\"preconditions\":{\"uid\":\"\"}}", false},
		{"PATCH", "application/merge-patch+json", "{\"spec\":{}}", false},
		{"PATCH", "application/merge-patch+json", "{\"metadata\":{\"resourceVersion\":\"7\"}}", true},
		{"PATCH", "application/merge-patch+json", "{\"metadata\":{\"uid\":\"u\"}}", true},
		{"PATCH", "application/merge-patch+json", "not json", false},
		{"PATCH", "application/json-patch+json", "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":1}]", false},
		{"PATCH", "application/json-patch+json",
		 "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"7\"},"
		 "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":1}]", true},
		/* A test of a field the patch does not change does not stop a second append. */
		{"PATCH", "application/json-patch+json",
		 "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"u\"},"
		 "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":1}]", false},
		{"PATCH", "application/json-patch+json",
		 "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"u\"},"
		 "{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}]", true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case %zu: %s %s\n", i, cases[i].method, cases[i].body ? cases[i].body : "");
		assert_int_equal(kube__repeat_is_harmless(cases[i].method, cases[i].ct, cases[i].body),
				 cases[i].want);
	}
}

/* Retry-After: 60 five times would hold the request 5 minutes; 5 s a wait and 15 s in all. */
static void test_retry_after_is_capped(void **state)
{
	(void)state;
	struct fake f;
	struct step steps[] = {{ANSWER, 429, 60, 0}};
	struct kube_client_options o = {.max_retries = 5};
	fake_start_steps(&f, steps, 1, &o);
	struct kube_error err;
	double t = clock_mono_ms();
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_EHTTP);
	double took = clock_mono_ms() - t;
	assert_int_equal(err.code, 429);
	assert_int_equal(atomic_load(&f.served), 4); /* waits of 5 s, three times */
	assert_true(took >= 15000);
	assert_true(took < 17000);
	fake_stop(&f);
}

/* A transfer that stalls is given up after low_speed_seconds, well before the request timeout. */
static void test_stalled_transfer_ends(void **state)
{
	(void)state;
	struct fake f;
	struct step steps[] = {{STALL, 0, -1, 0}};
	struct kube_client_options o = {.max_retries = -1, .request_timeout_ms = 20000,
					.low_speed_seconds = 1};
	fake_start_steps(&f, steps, 1, &o);
	struct kube_error err;
	double t = clock_mono_ms();
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_ETRANSPORT);
	double took = clock_mono_ms() - t;
	assert_true(took < 5000);
	fake_stop(&f);
}

static int count_event(void *ctx, const char *type, json_t *object)
{
	(void)type;
	(void)object;
	(*(int *)ctx)++;
	return 0;
}

/* A watch is idle most of its life: the low-speed limit must not end it. */
static void test_idle_watch_is_not_a_stall(void **state)
{
	(void)state;
	struct fake f;
	struct step steps[] = {{ANSWER, 200, -1, 0}, {WATCH_IDLE, 0, -1, 0}};
	struct kube_client_options o = {.max_retries = -1, .low_speed_seconds = 1};
	fake_start_steps(&f, steps, 2, &o);
	/* A request first: the watch reuses the handle that carried it. */
	struct kube_error err;
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", NULL, &err), KUBE_OK);
	int events = 0;
	struct kube_watch_options wo = {.timeout_seconds = 30};
	assert_int_equal(kube_watch(f.client, &KUBE_CONFIGMAPS, "ns", &wo, count_event, &events, NULL,
				    &err), KUBE_OK);
	assert_int_equal(events, 2);
	fake_stop(&f);
}

/* An answer of exactly the cap is read; one byte more is refused once, not downloaded again by retries. */
static void test_response_cap(void **state)
{
	(void)state;
	assert_int_equal(KUBE_RESPONSE_MAX, 16u << 20);
	struct fake f;
	struct step steps[] = {{BIG, 0, -1, KUBE_RESPONSE_MAX}};
	struct kube_client_options o = {.max_retries = 3};
	fake_start_steps(&f, steps, 1, &o);
	struct kube_error err;
	json_t *out = NULL;
	/*
	 * Taken whole by the buffer, then refused by the parse budget before it
	 * is parsed: a string of 16 MiB costs three times that to read
	 * (KUBE_OBJECT_MAX_PARSED).
	 */
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", &out, &err), KUBE_ETOOLARGE);
	assert_null(out);
	assert_string_equal(err.message, "GET /api/v1/namespaces/ns/configmaps/x: answer refused: JSON error: too large: "
					 "a string or value so long that reading it takes more than 16777216 bytes of "
					 "memory, the budget for an object from the API server; write a smaller document");
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);

	steps[0].size = KUBE_RESPONSE_MAX + 1;
	fake_start_steps(&f, steps, 1, &o);
	out = NULL;
	assert_int_equal(kube_get(f.client, &KUBE_CONFIGMAPS, "ns", "x", &out, &err), KUBE_ETOOLARGE);
	assert_null(out);
	assert_int_equal(err.code, 200);
	assert_string_equal(err.message, "GET /api/v1/namespaces/ns/configmaps/x: answer larger than 16 MiB");
	assert_int_equal(atomic_load(&f.served), 1);
	fake_stop(&f);
}

/* A watch event of exactly the frame cap is delivered; one byte more ends the watch with the cap named. */
static void test_watch_frame_cap(void **state)
{
	(void)state;
	struct fake f;
	struct step steps[] = {{WATCH_BIG, 0, -1, WATCH_EVENT_MAX}};
	struct kube_client_options o = {.max_retries = -1};
	fake_start_steps(&f, steps, 1, &o);
	struct kube_error err;
	int events = 0;
	struct kube_watch_options wo = {.timeout_seconds = 30};
	assert_int_equal(kube_watch(f.client, &KUBE_CONFIGMAPS, "ns", &wo, count_event, &events, NULL, &err),
			 KUBE_OK);
	assert_int_equal(events, 1);
	fake_stop(&f);

	steps[0].size = WATCH_EVENT_MAX + 1;
	fake_start_steps(&f, steps, 1, &o);
	events = 0;
	assert_int_equal(kube_watch(f.client, &KUBE_CONFIGMAPS, "ns", &wo, count_event, &events, NULL, &err),
			 KUBE_EDECODE);
	assert_int_equal(events, 0);
	assert_string_equal(err.message, "watch configmaps: watch event larger than 10485760 bytes");
	fake_stop(&f);
}

static void count_item(void *ctx, json_t *item)
{
	(void)item;
	(*(int *)ctx)++;
}

/*
 * A LIST item nested 63 levels (DOC_MAX_DEPTH less the watch event's
 * wrapper) is read; one level more fails the page with the limit named,
 * not a crash (the informer passes on_oversize: it leaves such an item out).
 */
static void test_list_item_depth(void **state)
{
	(void)state;
	struct fake f;
	struct step steps[] = {{LIST_DEEP, 0, -1, DOC_MAX_DEPTH - 1}};
	struct kube_client_options o = {.max_retries = -1};
	fake_start_steps(&f, steps, 1, &o);
	struct kube_error err;
	struct kube_list_options lo = {.limit = 100};
	char *cont = NULL, *rv = NULL;
	int items = 0;
	assert_int_equal(kube_list_page_each(f.client, &KUBE_CONFIGMAPS, "ns", &lo, count_item, &items, &cont, &rv,
					     &err), KUBE_OK);
	assert_int_equal(items, 1);
	assert_string_equal(rv, "1");
	free(cont);
	free(rv);
	fake_stop(&f);

	steps[0].size = DOC_MAX_DEPTH;
	fake_start_steps(&f, steps, 1, &o);
	items = 0;
	assert_int_equal(kube_list_page_each(f.client, &KUBE_CONFIGMAPS, "ns", &lo, count_item, &items, &cont, &rv,
					     &err), KUBE_EDECODE);
	assert_int_equal(items, 0);
	assert_null(cont);
	assert_null(rv);
	if (!strstr(err.message, "LIST configmaps: answer is not a List (an item is refused: JSON error at line 1, column ") ||
	    !strstr(err.message, ": too large: objects and arrays nested deeper than 63 levels"))
		fail_msg("message: %s", err.message);
	fake_stop(&f);
}

/* kube_list_all asks for pages, so every answer stays under the cap. */
static void test_list_all_pages(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, (int[]){200}, NULL, 1, false);
	struct kube_error err;
	json_t *items = NULL;
	/* The scripted answer has no items: a decode error, but the request is what counts here. */
	assert_int_equal(kube_list_all(f.client, &KUBE_PODS, "ns", NULL, 0, &items, NULL, &err),
			 KUBE_EDECODE);
	assert_string_equal(f.last_request_line, "GET /api/v1/namespaces/ns/pods?limit=100 HTTP/1.1");
	fake_stop(&f);
}

/* A password in the server URL is refused (curl would send it) and never quoted. */
/*
 * A step whose write was cut is done when a fresh read shows it (its Event
 * and counts are then recorded), and failed when the read does not.
 */
static void test_cut_step_is_done_when_a_read_shows_it(void **state)
{
	(void)state;
	/* The scripted GET answers {"kind":"ConfigMap","metadata":{"name":"x"}}. */
	static const struct {
		const char *patch;
		struct step steps[3];
		int requests;
		int result;
	} cases[] = {
		/* Cut, then the read shows it: done. */
		{"{\"metadata\":{\"name\":\"x\"}}", {{CUT, 0, -1, 0}, {ANSWER, 200, -1, 0}}, 2, 0},
		/* Cut, and the read does not show it: the cut's error. */
		{"{\"metadata\":{\"annotations\":{\"s\":\"1\"}}}", {{CUT, 0, -1, 0}, {ANSWER, 200, -1, 0}}, 2,
		 KUBE_ETRANSPORT},
		/* Guarded: cut, the repeat meets its own change (409), the read shows it: done. */
		{"{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}",
		 {{CUT, 0, -1, 0}, {ANSWER, 409, -1, 0}, {ANSWER, 200, -1, 0}}, 3, 0},
		/* Guarded, a plain 409 (a stale decision): no read, the conflict stands. */
		{"{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}",
		 {{ANSWER, 409, -1, 0}, {ANSWER, 200, -1, 0}}, 1, KUBE_EHTTP},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f;
		struct kube_client_options o = {.max_retries = 3};
		fake_start_steps(&f, cases[i].steps, cases[i].requests, &o);
		struct action a;
		action_init(&a);
		action_patch(&a, "Step", &KUBE_CONFIGMAPS, "x", json_loads(cases[i].patch, 0, NULL));
		struct kube_error err;
		bool stale = false;
		assert_int_equal(action_perform(f.client, "ns", &a, &stale, &err), cases[i].result);
		assert_int_equal(atomic_load(&f.served), cases[i].requests);
		pthread_mutex_lock(&f.lock);
		assert_string_equal(f.methods[0], "PATCH");
		if (cases[i].requests > 1)
			assert_string_equal(f.methods[cases[i].requests - 1], "GET");
		pthread_mutex_unlock(&f.lock);
		assert_false(stale);
		action_release(&a);
		fake_stop(&f);
	}

	/* A named create the planner takes a 409 for done: done once the object exists. */
	struct fake f;
	struct step steps[] = {{ANSWER, 503, -1, 0}, {ANSWER, 200, -1, 0}};
	struct kube_client_options o = {.max_retries = 3};
	fake_start_steps(&f, steps, 2, &o);
	struct action a;
	action_init(&a);
	action_create(&a, "Save", &KUBE_CONFIGMAPS, json_loads("{\"metadata\":{\"name\":\"x\"}}", 0, NULL));
	a.answers = ACTION_OK_409;
	struct kube_error err;
	bool stale = false;
	assert_int_equal(action_perform(f.client, "ns", &a, &stale, &err), 0);
	assert_int_equal(atomic_load(&f.served), 2);
	action_release(&a);
	fake_stop(&f);
}

static void test_server_userinfo_refused(void **state)
{
	(void)state;
	static const char *cases[][2] = {
		{"http://admin:s3cr3t@127.0.0.1:1", "server URL http://***@127.0.0.1:1 carries a user name or password"},
		{"ftp://admin:s3cr3t@h", "server URL ftp://***@h: scheme must be https (or http)"},
	};
	for (size_t i = 0; i < 2; i++) {
		struct kube_config cfg = {0};
		cfg.server = xstrdup(cases[i][0]);
		char *err = NULL;
		assert_null(kube_client_new(&cfg, NULL, &err));
		assert_string_equal(err, cases[i][1]);
		free(err);
	}
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
		cmocka_unit_test(test_cut_post_is_not_retried),
		cmocka_unit_test(test_cut_guarded_requests_are_retried),
		cmocka_unit_test(test_post_not_resent_on_a_kept_alive_connection),
		cmocka_unit_test(test_named_create_rides_a_kept_alive_connection),
		cmocka_unit_test(test_repeat_is_harmless),
		cmocka_unit_test(test_retry_after_is_capped),
		cmocka_unit_test(test_stalled_transfer_ends),
		cmocka_unit_test(test_idle_watch_is_not_a_stall),
		cmocka_unit_test(test_response_cap),
		cmocka_unit_test(test_watch_frame_cap),
		cmocka_unit_test(test_list_item_depth),
		cmocka_unit_test(test_list_all_pages),
		cmocka_unit_test(test_cut_step_is_done_when_a_read_shows_it),
		cmocka_unit_test(test_server_userinfo_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
