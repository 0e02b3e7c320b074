/*
 * Unit tests for the HTTP endpoint server (src/runtime/http_server.c).
 *
 * Servers listen on 127.0.0.1 with an ephemeral port and are driven with
 * libcurl (and, where the exact bytes on the wire matter, a raw socket).
 * Waits have generous timeouts so a slow or valgrinded run passes and a
 * broken server fails instead of hanging.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/http_server.h"
#include "util/xalloc.h"

/* ---- a small client ---- */

struct reply {
	long status;
	char body[8192];
	size_t len;
	char content_type[128];
	char allow[128];
	bool connection_close;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;

	if (r->len + len >= sizeof(r->body))
		return 0;
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

static void copy_header_value(char *dst, size_t cap, const char *v, size_t len)
{
	while (len && (v[len - 1] == '\r' || v[len - 1] == '\n'))
		len--;
	while (len && *v == ' ') {
		v++;
		len--;
	}
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;

	if (len > 6 && strncasecmp(data, "Allow:", 6) == 0)
		copy_header_value(r->allow, sizeof(r->allow), data + 6, len - 6);
	if (len > 11 && strncasecmp(data, "Connection:", 11) == 0 && strstr(data, "close"))
		r->connection_close = true;
	return len;
}

/*
 * method "GET", "HEAD", "POST" or any other; body (may be NULL) is sent
 * with any method but HEAD.
 * curl may be NULL (a handle just for this request) or a handle to reuse
 * (keep-alive). Returns the curl result.
 */
static CURLcode fetch_with(CURL *curl, const char *method, int port, const char *path, const char *body,
			   struct reply *r)
{
	char url[256];
	bool own = curl == NULL;
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	if (own)
		curl = curl_easy_init();
	else
		curl_easy_reset(curl);
	assert_non_null(curl);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	} else if (body || strcmp(method, "POST") == 0) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	}
	rc = curl_easy_perform(curl);
	if (rc == CURLE_OK) {
		char *ct = NULL;
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
		if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
			snprintf(r->content_type, sizeof(r->content_type), "%s", ct);
	}
	if (own)
		curl_easy_cleanup(curl);
	return rc;
}

static void fetch(const char *method, int port, const char *path, const char *body, struct reply *r)
{
	CURLcode rc = fetch_with(NULL, method, port, path, body, r);

	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
}

/* ---- handlers ---- */

static int hello(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)req;
	*content_type = "text/plain; version=0.0.4; charset=utf-8";
	*body = xstrdup("hello\n");
	return 200;
}

static int echo_query(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	const char *verbose = http_request_query(req, "verbose");
	const char *x = http_request_query(req, "x");

	(void)ctx;
	(void)content_type; /* the default */
	*body = xasprintf("%s %s verbose=%s x=%s", http_request_method(req), http_request_path(req),
			  verbose ? (*verbose ? verbose : "(empty)") : "(absent)", x ? x : "(absent)");
	return 200;
}

static int no_body(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)req;
	(void)content_type;
	(void)body;
	return 503;
}

static int bad_status(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)req;
	(void)content_type;
	*body = xstrdup("this body is dropped");
	return 42;
}

static int counted(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	atomic_int *n = ctx;

	(void)req;
	(void)content_type;
	*body = xasprintf("%d", atomic_fetch_add(n, 1) + 1);
	return 200;
}

/* "POST <length> <first and last byte>": the body arrived whole. */
static int echo_body(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)content_type;
	size_t len = 0;
	const char *data = http_request_body(req, &len);
	assert_non_null(data);
	assert_int_equal(strlen(data), len); /* NUL-terminated, no NUL inside for these tests */
	*body = xasprintf("%s %zu %c%c", http_request_method(req), len, len ? data[0] : '-',
			  len ? data[len - 1] : '-');
	return 200;
}

static struct http_server *start_local(void)
{
	char *err = NULL;
	struct http_server *s = http_server_start("127.0.0.1:0", &err);

	if (!s)
		fail_msg("start: %s", err);
	assert_null(err);
	assert_true(http_server_enabled(s));
	assert_true(http_server_port(s) > 0);
	return s;
}

/* ---- tests ---- */

static void test_get_handler(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct reply r;

	http_server_handle(s, "/hello", hello, NULL);
	http_server_handle(s, "/q", echo_query, NULL);
	fetch("GET", http_server_port(s), "/hello", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "hello\n");
	assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");

	/* The query is not part of the path; handlers read it. */
	fetch("GET", http_server_port(s), "/q?verbose&x=a%20b", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "GET /q verbose=(empty) x=a b");
	assert_string_equal(r.content_type, "text/plain; charset=utf-8");
	fetch("GET", http_server_port(s), "/q?verbose=1", NULL, &r);
	assert_string_equal(r.body, "GET /q verbose=1 x=(absent)");
	fetch("GET", http_server_port(s), "/q", NULL, &r);
	assert_string_equal(r.body, "GET /q verbose=(absent) x=(absent)");

	/* A GET that carries a body: the body is discarded unread (up to 64 KiB). */
	char *big = xmalloc(60000);
	memset(big, 'b', 59999);
	big[59999] = '\0';
	fetch("GET", http_server_port(s), "/hello", big, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "hello\n");
	free(big);
	http_server_stop(s);
}

static void test_post_routes(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct reply r;
	int port = http_server_port(s);

	http_server_handle_post(s, "/review", echo_body, NULL, 200000);
	http_server_handle(s, "/hello", hello, NULL);
	char *body = xmalloc(300001);
	memset(body, 'x', 300000);
	body[0] = '{';
	body[99999] = '}';
	body[100000] = '\0';
	/* A body of 100,000 bytes arrives whole, twice on one kept-alive connection. */
	CURL *curl = curl_easy_init();
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fetch_with(curl, "POST", port, "/review", body, &r), CURLE_OK);
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, "POST 100000 {}");
	}
	curl_easy_cleanup(curl);
	fetch("POST", port, "/review", "", &r);
	assert_string_equal(r.body, "POST 0 --");
	/* Past the route's limit: 413, the handler never runs. */
	body[100000] = 'x';
	body[300000] = '\0';
	fetch("POST", port, "/review", body, &r);
	assert_int_equal(r.status, 413);
	free(body);
	/* Methods: a POST route serves POST only, a GET route no POST. */
	fetch("GET", port, "/review", NULL, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "POST");
	fetch("POST", port, "/hello", "x", &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "GET, HEAD");
	fetch("GET", port, "/hello", NULL, &r);
	assert_int_equal(r.status, 200);
	http_server_stop(s);
}

static void test_head(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct reply r;

	http_server_handle(s, "/hello", hello, NULL);
	fetch("HEAD", http_server_port(s), "/hello", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);

	/* On the wire: headers with the GET's Content-Length, and no body. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_server_port(s))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	const char *req = "HEAD /hello HTTP/1.0\r\n\r\n";
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	assert_true(strncmp(buf, "HTTP/1.0 200", 12) == 0 || strncmp(buf, "HTTP/1.1 200", 12) == 0);
	assert_non_null(strcasestr(buf, "Content-Length: 6\r\n"));
	const char *end = strstr(buf, "\r\n\r\n");
	assert_non_null(end);
	assert_string_equal(end, "\r\n\r\n");
	http_server_stop(s);
}

static void test_not_found(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct reply r;

	http_server_handle(s, "/hello", hello, NULL);
	fetch("GET", http_server_port(s), "/nope", NULL, &r);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body, "404 page not found\n");
	fetch("GET", http_server_port(s), "/hello/", NULL, &r);
	assert_int_equal(r.status, 404);
	fetch("GET", http_server_port(s), "/", NULL, &r);
	assert_int_equal(r.status, 404);
	fetch("POST", http_server_port(s), "/nope", "x=1", &r);
	assert_int_equal(r.status, 404);
	http_server_stop(s);
}

static void test_method_not_allowed(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct reply r;
	static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};

	http_server_handle(s, "/hello", hello, NULL);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		fetch(methods[i], http_server_port(s), "/hello", "some=body", &r);
		assert_int_equal(r.status, 405);
		assert_string_equal(r.allow, "GET, HEAD");
		assert_string_equal(r.body, "405 method not allowed\n");
	}
	/* A large body that the server never reads (curl sends Expect: 100-continue). */
	char *big = xmalloc(200000);
	memset(big, 'a', 199999);
	big[199999] = '\0';
	fetch("POST", http_server_port(s), "/hello", big, &r);
	assert_int_equal(r.status, 405);
	free(big);
	/* The server is still fine afterwards. */
	fetch("GET", http_server_port(s), "/hello", NULL, &r);
	assert_int_equal(r.status, 200);
	http_server_stop(s);
}

static void test_handler_results(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct reply r;

	http_server_handle(s, "/empty", no_body, NULL);
	http_server_handle(s, "/bad", bad_status, NULL);
	fetch("GET", http_server_port(s), "/empty", NULL, &r);
	assert_int_equal(r.status, 503);
	assert_int_equal(r.len, 0);
	assert_string_equal(r.content_type, "text/plain; charset=utf-8");
	fetch("GET", http_server_port(s), "/bad", NULL, &r);
	assert_int_equal(r.status, 500);
	assert_string_equal(r.body, "500 internal server error\n");

	/* Registering a path again replaces its handler. */
	http_server_handle(s, "/bad", hello, NULL);
	fetch("GET", http_server_port(s), "/bad", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "hello\n");
	http_server_stop(s);
}

/*
 * Every response closes its connection, so a client that would keep it
 * never sends a request on a connection the server is cutting (the API
 * server's webhook client took that reset for a failed webhook). A client
 * holding a connection open does not hold up stop.
 */
static void test_one_request_per_connection_and_stop_with_open_connection(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	atomic_int n = 0;
	struct reply r;
	CURL *curl = curl_easy_init();

	http_server_handle(s, "/n", counted, &n);
	for (int i = 1; i <= 3; i++) {
		assert_int_equal(fetch_with(curl, "GET", http_server_port(s), "/n", NULL, &r), CURLE_OK);
		assert_int_equal(r.status, 200);
		assert_int_equal(atoi(r.body), i);
		assert_true(r.connection_close);
		long conns = -1;
		curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &conns);
		assert_int_equal(conns, 1); /* a new connection each time: the last one was closed */
	}

	/* A client that opened a connection and sent nothing: stop must not wait for it. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_server_port(s))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	http_server_stop(s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	close(fd);
	curl_easy_cleanup(curl);
}

/* ---- concurrency ---- */

#define CLIENTS 4
#define REQUESTS 40

struct client {
	int port;
	int ok;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	CURL *curl = curl_easy_init();
	struct reply r;

	for (int i = 0; i < REQUESTS; i++)
		if (fetch_with(curl, "GET", c->port, "/n", NULL, &r) == CURLE_OK && r.status == 200)
			c->ok++;
	curl_easy_cleanup(curl);
	return NULL;
}

static void test_concurrent_clients(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	atomic_int n = 0;
	struct client c[CLIENTS];
	pthread_t th[CLIENTS];

	http_server_handle(s, "/n", counted, &n);
	for (int i = 0; i < CLIENTS; i++) {
		c[i] = (struct client){http_server_port(s), 0};
		assert_int_equal(pthread_create(&th[i], NULL, client_main, &c[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(c[i].ok, REQUESTS);
	}
	assert_int_equal(atomic_load(&n), CLIENTS * REQUESTS);
	http_server_stop(s);
}

/* A handler blocked in one pool thread does not hold up a probe. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool entered, released;
};

static int blocking(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	struct gate *g = ctx;

	(void)req;
	(void)content_type;
	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cv);
	while (!g->released)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	*body = xstrdup("slow");
	return 200;
}

struct slow_get {
	int port;
	struct reply r;
};

static void *slow_get_main(void *arg)
{
	struct slow_get *sg = arg;

	fetch_with(NULL, "GET", sg->port, "/slow", NULL, &sg->r);
	return NULL;
}

static void test_slow_handler_does_not_block_probe(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};
	struct slow_get sg = {.port = http_server_port(s)};
	pthread_t th;
	struct reply r;

	http_server_handle(s, "/slow", blocking, &g);
	http_server_handle(s, "/healthz", hello, NULL);
	assert_int_equal(pthread_create(&th, NULL, slow_get_main, &sg), 0);
	pthread_mutex_lock(&g.mu);
	while (!g.entered)
		pthread_cond_wait(&g.cv, &g.mu);
	pthread_mutex_unlock(&g.mu);

	fetch("GET", http_server_port(s), "/healthz", NULL, &r);
	assert_int_equal(r.status, 200);

	pthread_mutex_lock(&g.mu);
	g.released = true;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	pthread_join(th, NULL);
	assert_int_equal(sg.r.status, 200);
	assert_string_equal(sg.r.body, "slow");
	http_server_stop(s);
}

/* ---- bind addresses ---- */

static void expect_bad_address(const char *addr, const char *why)
{
	char *err = NULL;
	struct http_server *s = http_server_start(addr, &err);

	if (s)
		fail_msg("\"%s\" was accepted", addr);
	assert_non_null(err);
	char quoted[128];
	snprintf(quoted, sizeof(quoted), "\"%s\"", addr);
	if (!strstr(err, quoted) || !strstr(err, why))
		fail_msg("\"%s\": error \"%s\" lacks %s or \"%s\"", addr, err, quoted, why);
	free(err);
}

static void test_bad_bind_addresses(void **state)
{
	(void)state;
	expect_bad_address("", "empty");
	expect_bad_address("8080", "missing port");
	expect_bad_address("127.0.0.1", "missing port");
	expect_bad_address("127.0.0.1:", "missing port");
	expect_bad_address(":", "missing port");
	expect_bad_address(":99999", "0 to 65535");
	expect_bad_address(":65536", "0 to 65535");
	expect_bad_address(":123456", "0 to 65535");
	expect_bad_address(":80x", "0 to 65535");
	expect_bad_address(":-1", "0 to 65535");
	expect_bad_address(":+80", "0 to 65535");
	expect_bad_address("::1:8080", "brackets");
	expect_bad_address("[::1", "missing ']'");
	expect_bad_address("[::1]8080", "missing port");
	expect_bad_address("[::1]:", "missing port");
	expect_bad_address("[]:8080", "empty IPv6");
	expect_bad_address("[127.0.0.1]:8080", "not an IPv6 address");
	expect_bad_address("[zz::1]:8080", "not an IPv6 address");
}

static void test_address_in_use(void **state)
{
	(void)state;
	struct http_server *s = start_local();
	char addr[64], *err = NULL;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", http_server_port(s));
	assert_null(http_server_start(addr, &err));
	assert_non_null(err);
	assert_non_null(strstr(err, addr));
	assert_non_null(strstr(err, "Address already in use"));
	free(err);
	http_server_stop(s);
}

static void test_disabled(void **state)
{
	(void)state;
	char *err = (char *)"garbage";
	struct http_server *s = http_server_start("0", &err);

	assert_non_null(s);
	assert_null(err);
	assert_false(http_server_enabled(s));
	assert_int_equal(http_server_port(s), 0);
	http_server_handle(s, "/hello", hello, NULL); /* accepted, never served */
	http_server_stop(s);
	http_server_stop(NULL);
}

static void test_other_address_forms(void **state)
{
	(void)state;
	static const char *const addrs[] = {":0", "0.0.0.0:0", "localhost:0", "[::1]:0", "[::]:0"};
	struct reply r;

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		char *err = NULL;
		struct http_server *s = http_server_start(addrs[i], &err);
		if (!s) {
			/* Hosts without IPv6 (some containers) cannot bind ::1. */
			if (addrs[i][0] == '[' && (strstr(err, "Cannot assign") || strstr(err, "not supported"))) {
				print_message("skipping %s: %s\n", addrs[i], err);
				free(err);
				continue;
			}
			fail_msg("%s: %s", addrs[i], err);
		}
		assert_true(http_server_port(s) > 0);
		http_server_handle(s, "/hello", hello, NULL);
		if (strcmp(addrs[i], "[::1]:0") != 0) {
			/* Every form but ::1 serves IPv4 loopback (:: is dual-stack). */
			fetch("GET", http_server_port(s), "/hello", NULL, &r);
			assert_int_equal(r.status, 200);
		}
		http_server_stop(s);
	}
}

/* ---- nothing left behind ---- */

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * A joined thread can stay listed in /proc/self/task for a moment: the
 * kernel wakes pthread_join before it removes the task. So the count is
 * read until it holds still (want < 0) or reaches want, for at most 2 s;
 * a leaked thread or descriptor stays, and still fails the test.
 */
static int settled_count(const char *path, int want)
{
	int n = count_dir(path);

	for (int waited_ms = 0, still = 0; waited_ms < 2000 && n != want && still < 3; waited_ms += 20) {
		usleep(20 * 1000);
		int m = count_dir(path);
		still = m == n ? still + 1 : 0;
		if (want >= 0)
			still = 0;
		n = m;
	}
	return n;
}

static void test_stop_releases_everything(void **state)
{
	(void)state;
	struct reply r;
	int fds = -1, threads = -1;

	/* Round 0 warms up lazy one-time state (libcurl, libmicrohttpd). */
	for (int i = 0; i < 4; i++) {
		if (i == 1) {
			fds = settled_count("/proc/self/fd", -1);
			threads = settled_count("/proc/self/task", -1);
		}
		struct http_server *s = start_local();
		http_server_handle(s, "/hello", hello, NULL);
		fetch("GET", http_server_port(s), "/hello", NULL, &r);
		assert_int_equal(r.status, 200);
		http_server_stop(s);
	}
	assert_int_equal(settled_count("/proc/self/fd", fds), fds);
	assert_int_equal(settled_count("/proc/self/task", threads), threads);
	/* (valgrind --leak-check=full checks the memory.) */
}

static int setup(void **state)
{
	(void)state;
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_handler),
		cmocka_unit_test(test_post_routes),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_method_not_allowed),
		cmocka_unit_test(test_handler_results),
		cmocka_unit_test(test_one_request_per_connection_and_stop_with_open_connection),
		cmocka_unit_test(test_concurrent_clients),
		cmocka_unit_test(test_slow_handler_does_not_block_probe),
		cmocka_unit_test(test_bad_bind_addresses),
		cmocka_unit_test(test_address_in_use),
		cmocka_unit_test(test_disabled),
		cmocka_unit_test(test_other_address_forms),
		cmocka_unit_test(test_stop_releases_everything),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
