#include "loopback.h"

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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/kube_config.h"
#include "util/xalloc.h"

int loopback_listen(int backlog, int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in addr = {.sin_family = AF_INET};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	*port = ntohs(addr.sin_port);
	return fd;
}

struct kube_client *loopback_client(int port, const struct kube_client_options *o)
{
	struct kube_config cfg = {0};
	cfg.server = xasprintf("http://127.0.0.1:%d", port);
	cfg.token = xstrdup("t");
	char *err = NULL;
	struct kube_client *c = kube_client_new(&cfg, o, &err);
	if (!c)
		fail_msg("client: %s", err ? err : "?");
	return c;
}

#define KEPT_REQUESTS 16

struct canned_server {
	int listen_fd;
	int port;
	pthread_t thread;
	atomic_bool stop;
	const struct canned_answer *answers; /* borrowed */
	int nanswers;
	struct canned_answer one;
	const char *content_type;
	pthread_mutex_t lock;
	int served;
	atomic_int delay_ms;
	char last_head[8192];
	char *lines[KEPT_REQUESTS];  /* request lines, in order */
	char *bodies[KEPT_REQUESTS]; /* their bodies ("" for none) */
};

/*
 * Reads a request head (up to the blank line) into head; false when the
 * client went away. What came after the blank line (a body's start) stays
 * in head too.
 */
static bool read_head(int fd, char *head, size_t size, size_t *got_out)
{
	size_t got = 0;
	while (got < size - 1) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 5000) <= 0)
			return false;
		ssize_t n = read(fd, head + got, size - 1 - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	*got_out = got;
	return true;
}

/* The request's body (new string): what read_head read past the head, then the rest of Content-Length. */
static char *read_body(int fd, const char *head, size_t got)
{
	const char *end = strstr(head, "\r\n\r\n");
	const char *cl = strcasestr(head, "\r\nContent-Length:");
	if (!end || !cl || cl > end)
		return xstrdup("");
	size_t want = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
	size_t have = got - (size_t)(end + 4 - head);
	if (want > (1u << 20))
		want = 1u << 20;
	char *body = xcalloc(1, want + 1);
	memcpy(body, end + 4, have < want ? have : want);
	while (have < want) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = read(fd, body + have, want - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	return body;
}

static void canned_answer(struct canned_server *s, int fd)
{
	char head[sizeof(s->last_head)];
	size_t got = 0;
	if (!read_head(fd, head, sizeof(head), &got))
		return;
	char *body = read_body(fd, head, got);
	pthread_mutex_lock(&s->lock);
	memcpy(s->last_head, head, sizeof(head));
	const struct canned_answer *a = &s->answers[s->served < s->nanswers ? s->served : s->nanswers - 1];
	if (s->served < KEPT_REQUESTS) {
		s->lines[s->served] = xstrndup(head, strcspn(head, "\r\n"));
		s->bodies[s->served] = body;
		body = NULL;
	}
	s->served++;
	pthread_mutex_unlock(&s->lock);
	int delay = atomic_load(&s->delay_ms);
	if (delay > 0)
		poll(NULL, 0, delay);
	free(body);
	char *answer = xasprintf("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
				 "Connection: close\r\n\r\n%s",
				 a->status, s->content_type, strlen(a->body), a->body);
	for (size_t off = 0, len = strlen(answer); off < len;) {
		ssize_t n = send(fd, answer + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(answer);
}

static void *canned_run(void *arg)
{
	struct canned_server *s = arg;
	while (!atomic_load(&s->stop)) {
		struct pollfd p = {s->listen_fd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept(s->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		canned_answer(s, fd);
		close(fd);
	}
	return NULL;
}

/* Starts s (answers set): its socket and thread. */
static struct canned_server *canned_run_start(struct canned_server *s)
{
	pthread_mutex_init(&s->lock, NULL);
	s->listen_fd = loopback_listen(16, &s->port);
	assert_int_equal(pthread_create(&s->thread, NULL, canned_run, s), 0);
	return s;
}

struct canned_server *canned_server_start_script(const struct canned_answer *answers, int n,
						 const char *content_type)
{
	assert_true(n > 0);
	struct canned_server *s = xcalloc(1, sizeof(*s));
	s->answers = answers;
	s->nanswers = n;
	s->content_type = content_type;
	return canned_run_start(s);
}

struct canned_server *canned_server_start(const char *status, const char *content_type, const char *body)
{
	struct canned_server *s = xcalloc(1, sizeof(*s));
	s->one = (struct canned_answer){status, body};
	s->answers = &s->one;
	s->nanswers = 1;
	s->content_type = content_type;
	return canned_run_start(s);
}

int canned_server_port(const struct canned_server *s)
{
	return s->port;
}

void canned_server_delay(struct canned_server *s, int ms)
{
	atomic_store(&s->delay_ms, ms);
}

int canned_server_last(struct canned_server *s, char *head, size_t size)
{
	pthread_mutex_lock(&s->lock);
	snprintf(head, size, "%s", s->last_head);
	int served = s->served;
	pthread_mutex_unlock(&s->lock);
	return served;
}

int canned_server_request(struct canned_server *s, int i, char **line, char **body)
{
	pthread_mutex_lock(&s->lock);
	int served = s->served;
	if (i < served && i < KEPT_REQUESTS) {
		*line = xstrdup(s->lines[i]);
		*body = xstrdup(s->bodies[i]);
	} else {
		*line = NULL;
		*body = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	return served;
}

void canned_server_stop(struct canned_server *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	close(s->listen_fd);
	pthread_mutex_destroy(&s->lock);
	for (int i = 0; i < KEPT_REQUESTS; i++) {
		free(s->lines[i]);
		free(s->bodies[i]);
	}
	free(s);
}
