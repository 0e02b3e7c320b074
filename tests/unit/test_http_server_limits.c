/*
 * The HTTP server against slow and greedy clients (src/runtime/http_server.c):
 * a hundred connections that trickle their headers or stream an endless
 * chunked body must not keep /healthz from answering, and are cut once the
 * request time or size limit passes. Everything on 127.0.0.1; every wait
 * is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/http_server.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#define SLOW_CLIENTS 100
/* /post takes bodies up to POST_BODY; the server holds POST_BODIES_HELD of them at once. */
#define POST_BODY (1u << 20)
#define POST_BODIES_HELD 3
#define POSTERS 8

static int healthz(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)req;
	(void)content_type;
	*body = xstrdup("ok\n");
	return 200;
}


/* A /metrics of 2 MiB: far more than a connection's 16 KiB of memory. */
static int big(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)req;
	(void)content_type;
	size_t len = 2u << 20;
	*body = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++)
		(*body)[i] = (char)('a' + i % 26);
	(*body)[len] = '\0';
	return 200;
}

/* POST /post: the body's length. */
static int post(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)content_type;
	size_t len = 0;
	http_request_body(req, &len);
	*body = xasprintf("got %zu\n", len);
	return 200;
}

/* A connection to 127.0.0.1:port from 127.0.0.<from> (0: any), so clients can come from several addresses. */
static int connect_from(int port, int from)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (from) {
		struct sockaddr_in src = {.sin_family = AF_INET};
		src.sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + (uint32_t)from);
		assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int connect_local(int port)
{
	return connect_from(port, 0);
}

/* Sends all of s; false once the server has closed the connection. */
static bool send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {fd, POLLOUT, 0};
			if (poll(&p, 1, 1000) <= 0)
				return true; /* the server is not reading: still open */
			continue;
		}
		if (n <= 0)
			return false;
		s += n;
		len -= (size_t)n;
	}
	return true;
}

/* True when the server has closed fd (EOF or reset), reading and dropping any answer. */
static bool closed_by_server(int fd)
{
	char buf[4096];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			return true;
		if (n < 0)
			return errno != EAGAIN && errno != EWOULDBLOCK;
	}
}

/*
 * GET /healthz on a new connection; returns the milliseconds until a
 * complete 200 answer, or -1 when none came within limit_ms.
 */
static double healthz_ms(int port, long limit_ms)
{
	double start = clock_mono_ms();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n";
	char buf[1024];
	size_t got = 0, sent = 0;
	double result = -1;
	while (clock_mono_ms() - start < (double)limit_ms) {
		struct pollfd p = {fd, (short)(sent < sizeof(req) - 1 ? POLLOUT : POLLIN), 0};
		if (poll(&p, 1, 20) <= 0)
			continue;
		if (sent < sizeof(req) - 1) {
			ssize_t n = send(fd, req + sent, sizeof(req) - 1 - sent, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			sent += (size_t)n;
			continue;
		}
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\nok\n")) {
			if (strncmp(buf, "HTTP/1.1 200", 12) == 0)
				result = clock_mono_ms() - start;
			break;
		}
	}
	close(fd);
	return result;
}

/* Probes /healthz every 100 ms for ms; each must answer within 1 s. */
static void probe_for(int port, long ms)
{
	double until = clock_mono_ms() + (double)ms;
	int n = 0;
	while (clock_mono_ms() < until) {
		double took = healthz_ms(port, 1000);
		if (took < 0)
			fail_msg("/healthz did not answer within 1 s (probe %d)", n);
		n++;
		clock_sleep_ms(100);
	}
}

/* The slow clients: each sends its opening, then one more byte (or chunk) every 200 ms. */
struct trickle {
	int fd[SLOW_CLIENTS];
	double opened[SLOW_CLIENTS];
	double closed[SLOW_CLIENTS]; /* when the server closed it; 0 = still open */
	const char *drip;            /* what to send each round */
	atomic_bool stop;
	pthread_t thread;
};

static void *trickle_main(void *arg)
{
	struct trickle *t = arg;
	while (!atomic_load(&t->stop)) {
		for (int i = 0; i < SLOW_CLIENTS; i++) {
			if (t->closed[i] != 0)
				continue;
			if (closed_by_server(t->fd[i]) || !send_all(t->fd[i], t->drip, strlen(t->drip)))
				t->closed[i] = clock_mono_ms();
		}
		clock_sleep_ms(200);
	}
	return NULL;
}

/* Each test's server and slow clients; the teardown stops them even when the test failed. */
struct fixture {
	struct http_server *server;
	int port;
	struct trickle *trickle;
};

static void trickle_start(struct fixture *fx, const char *opening, const char *drip)
{
	struct trickle *t = xcalloc(1, sizeof(*t));
	int port = fx->port;
	fx->trickle = t;
	t->drip = drip;
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		/* From 127.0.0.2 on, as many per address as the server allows; the probes come from 127.0.0.1. */
		t->fd[i] = connect_from(port, 2 + i / HTTP_SERVER_MAX_CONNECTIONS_PER_IP);
		t->opened[i] = clock_mono_ms();
		assert_true(send_all(t->fd[i], opening, strlen(opening)));
	}
	assert_int_equal(pthread_create(&t->thread, NULL, trickle_main, t), 0);
}

/* Waits up to ms for the server to close every slow client; returns how many it closed. */
static int trickle_wait_closed(struct trickle *t, long ms)
{
	double until = clock_mono_ms() + (double)ms;
	int n = 0;
	while (clock_mono_ms() < until) {
		n = 0;
		for (int i = 0; i < SLOW_CLIENTS; i++)
			n += t->closed[i] != 0;
		if (n == SLOW_CLIENTS)
			break;
		clock_sleep_ms(50);
	}
	return n;
}

static void trickle_stop(struct fixture *fx)
{
	struct trickle *t = fx->trickle;
	if (!t)
		return;
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
	for (int i = 0; i < SLOW_CLIENTS; i++)
		if (t->fd[i] > 0)
			close(t->fd[i]);
	FREE_AND_NULL(fx->trickle);
}

static int fixture_setup(void **state)
{
	struct fixture *fx = xcalloc(1, sizeof(*fx));
	char *err = NULL;
	fx->server = http_server_start("127.0.0.1:0", &err);
	if (!fx->server) {
		print_error("start: %s\n", err);
		free(err);
		free(fx);
		return -1;
	}
	fx->port = http_server_port(fx->server);
	http_server_handle(fx->server, "/healthz", healthz, NULL);
	http_server_handle(fx->server, "/big", big, NULL);
	http_server_handle_post(fx->server, "/post", post, NULL, POST_BODY);
	http_server_limit_bodies(fx->server, POST_BODIES_HELD * (POST_BODY + 1));
	*state = fx;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *fx = *state;
	trickle_stop(fx);
	http_server_stop(fx->server);
	free(fx);
	return 0;
}

/*
 * A request must arrive whole within 5 s: the slow clients are cut then,
 * not before 4 s (the limit is per request, not an idle timeout the drip
 * keeps resetting), and well before 10 s.
 */
static void expect_cut_in_time(struct trickle *t)
{
	int closed = trickle_wait_closed(t, 9000);
	if (closed != SLOW_CLIENTS)
		fail_msg("%d of %d slow clients still connected after 9 s", SLOW_CLIENTS - closed, SLOW_CLIENTS);
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		double after = t->closed[i] - t->opened[i];
		if (after < 4000 || after > 8000)
			fail_msg("slow client %d cut after %.0f ms, want about 5000", i, after);
	}
}

static void test_trickled_headers(void **state)
{
	struct fixture *fx = *state;
	trickle_start(fx, "GET /healthz HTTP/1.1\r\nHost: x\r\n", "X");
	probe_for(fx->port, 3000);
	expect_cut_in_time(fx->trickle);
	trickle_stop(fx);
	assert_true(healthz_ms(fx->port, 1000) >= 0);
}

static void test_endless_chunked_body(void **state)
{
	struct fixture *fx = *state;
	trickle_start(fx, "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		      "1\r\nx\r\n");
	probe_for(fx->port, 3000);
	expect_cut_in_time(fx->trickle);
	trickle_stop(fx);
	assert_true(healthz_ms(fx->port, 1000) >= 0);
}

/* A body streamed fast is cut at its size limit, long before the time limit. */
static void test_large_body_is_cut(void **state)
{
	struct fixture *fx = *state;
	int fd = connect_local(fx->port);
	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
	assert_true(send_all(fd, head, sizeof(head) - 1));
	char chunk[4096 + 16];
	int n = snprintf(chunk, sizeof(chunk), "1000\r\n");
	memset(chunk + n, 'b', 4096);
	memcpy(chunk + n + 4096, "\r\n", 2);
	double start = clock_mono_ms();
	size_t sent = 0;
	bool open = true;
	while (open && clock_mono_ms() - start < 3000 && sent < (64u << 20)) {
		open = send_all(fd, chunk, (size_t)n + 4096 + 2) && !closed_by_server(fd);
		sent += 4096;
	}
	if (open) {
		close(fd);
		fail_msg("still open after %zu body bytes in %.0f ms", sent, clock_mono_ms() - start);
	}
	close(fd);
	assert_true(sent <= (4u << 20));
}

/* Request heads are limited in size: 8 KiB of headers pass, 20 KiB are refused. */
static void test_header_size_limit(void **state)
{
	struct fixture *fx = *state;
	int port = fx->port;
	for (int big = 0; big <= 1; big++) {
		size_t pad = big ? 20u << 10 : 8u << 10;
		char *req = xmalloc(pad + 128);
		int n = snprintf(req, pad + 128, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ");
		memset(req + n, 'p', pad);
		memcpy(req + (size_t)n + pad, "\r\n\r\n", 5);
		int fd = connect_local(port);
		struct timeval tv = {5, 0};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		send_all(fd, req, strlen(req));
		char buf[256] = "";
		ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
		buf[got > 0 ? got : 0] = '\0';
		close(fd);
		free(req);
		bool refused = got <= 0 || strncmp(buf, "HTTP/1.1 4", 10) == 0;
		if (refused != (bool)big)
			fail_msg("%zu bytes of headers: answer \"%.20s\"", pad, buf);
	}
}

/* The memory limit is on request heads: a large response still goes out whole. */
static void test_large_response(void **state)
{
	struct fixture *fx = *state;
	int fd = connect_local(fx->port);
	static const char req[] = "GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_true(send_all(fd, req, sizeof(req) - 1));
	size_t cap = (2u << 20) + 4096, got = 0;
	char *buf = xmalloc(cap + 1);
	ssize_t n;
	while (got < cap && (n = recv(fd, buf + got, cap - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	const char *end = strstr(buf, "\r\n\r\n");
	bool whole = strncmp(buf, "HTTP/1.1 200", 12) == 0 && end && got - (size_t)(end + 4 - buf) == (2u << 20) &&
		     buf[got - 1] == (char)('a' + ((2u << 20) - 1) % 26);
	free(buf);
	assert_true(whole);
}

/* One address cannot hold every connection: past its share, new ones are closed at once. */
static void test_per_address_limit(void **state)
{
	struct fixture *fx = *state;
	int port = fx->port;
	int fds[HTTP_SERVER_MAX_CONNECTIONS_PER_IP];
	for (int i = 0; i < HTTP_SERVER_MAX_CONNECTIONS_PER_IP; i++)
		fds[i] = connect_local(port);
	clock_sleep_ms(300); /* let the server accept them all */
	int extra = connect_local(port);
	struct pollfd p = {extra, POLLIN, 0};
	bool cut = poll(&p, 1, 2000) == 1 && closed_by_server(extra);
	close(extra);
	for (int i = 0; i < HTTP_SERVER_MAX_CONNECTIONS_PER_IP; i++)
		close(fds[i]);
	assert_true(cut);
	clock_sleep_ms(300);
	assert_true(healthz_ms(port, 1000) >= 0);
}

/* The status line's code of the answer on fd within ms, or 0 when none came (the connection still open or closed). */
static int answer_code(int fd, long ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char buf[64] = "";
	if (poll(&p, 1, (int)ms) != 1)
		return 0;
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	buf[n > 0 ? n : 0] = '\0';
	return n > 12 && !strncmp(buf, "HTTP/1.1 ", 9) ? atoi(buf + 9) : 0;
}

/*
 * Bodies arrive side by side and each is held whole until answered: POSTERS
 * clients each send all but the last byte of a body of the largest size
 * and keep the connection open. The server takes POST_BODIES_HELD of them
 * and answers the others 503 at once, unread, but still takes a small
 * body; a client that goes away gives its room back.
 */
static void test_bodies_held_at_once(void **state)
{
	struct fixture *fx = *state;
	char *head = xasprintf("POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\n\r\n", POST_BODY);
	char *body = xmalloc(POST_BODY);
	memset(body, 'b', POST_BODY);
	int fds[POSTERS], refused = 0, held = 0;
	for (int i = 0; i < POSTERS; i++) {
		fds[i] = connect_local(fx->port);
		assert_true(send_all(fds[i], head, strlen(head)));
		send_all(fds[i], body, POST_BODY - 1); /* a refused one is closed mid-body */
	}
	for (int i = 0; i < POSTERS; i++) {
		int code = answer_code(fds[i], 1000);
		refused += code == 503;
		held += code == 0 && !closed_by_server(fds[i]);
	}
	assert_true(healthz_ms(fx->port, 1000) >= 0);
	if (refused != POSTERS - POST_BODIES_HELD || held != POST_BODIES_HELD)
		fail_msg("%d bodies of %u bytes held, %d refused; want %d held, the rest refused", held, POST_BODY,
			 refused, POST_BODIES_HELD);
	/* A small body is taken all the same: large ones cannot keep it out. */
	int small = connect_local(fx->port);
	static const char small_post[] = "POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nsmall";
	assert_true(send_all(small, small_post, sizeof(small_post) - 1));
	assert_int_equal(answer_code(small, 5000), 200);
	close(small);
	/* The held ones finish and are answered; their room is free again. */
	for (int i = 0; i < POSTERS; i++) {
		if (closed_by_server(fds[i]))
			continue;
		assert_true(send_all(fds[i], "b", 1));
		assert_int_equal(answer_code(fds[i], 5000), 200);
	}
	for (int i = 0; i < POSTERS; i++)
		close(fds[i]);
	int fd = connect_local(fx->port);
	assert_true(send_all(fd, head, strlen(head)) && send_all(fd, body, POST_BODY));
	assert_int_equal(answer_code(fd, 5000), 200);
	close(fd);
	free(body);
	free(head);
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
		cmocka_unit_test_setup_teardown(test_trickled_headers, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_endless_chunked_body, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_large_body_is_cut, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_header_size_limit, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_large_response, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_per_address_limit, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_bodies_held_at_once, fixture_setup, fixture_teardown),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
