#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/xalloc.h"

struct conn {
	int client_fd;
	int server_fd;
	struct conn *next;
};

struct tcp_proxy {
	int listen_fd;
	int port;
	struct sockaddr_in target;
	int wake[2];              /* writing wakes the acceptor to stop */
	pthread_t acceptor;
	pthread_mutex_t lock;
	pthread_cond_t idle;      /* signalled when a connection ends */
	struct conn *conns;
	bool blocked;
	int accepted;
};

struct pump_arg {
	struct tcp_proxy *p;
	struct conn *c;
};

static int write_all(int fd, const char *buf, ssize_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, buf, (size_t)n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= w;
	}
	return 0;
}

static void *pump(void *arg)
{
	struct pump_arg *pa = arg;
	struct tcp_proxy *p = pa->p;
	struct conn *c = pa->c;
	free(pa);
	char buf[16384];
	struct pollfd fds[2] = {{c->client_fd, POLLIN, 0}, {c->server_fd, POLLIN, 0}};
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		int from = -1;
		if (fds[0].revents)
			from = 0;
		else if (fds[1].revents)
			from = 1;
		if (from < 0)
			continue;
		ssize_t n = read(fds[from].fd, buf, sizeof(buf));
		if (n <= 0 || write_all(fds[1 - from].fd, buf, n) < 0)
			break;
	}
	pthread_mutex_lock(&p->lock);
	for (struct conn **pp = &p->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	close(c->client_fd);
	close(c->server_fd);
	free(c);
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void handle(struct tcp_proxy *p, int client_fd)
{
	pthread_mutex_lock(&p->lock);
	bool blocked = p->blocked;
	p->accepted++;
	pthread_mutex_unlock(&p->lock);
	int server_fd = blocked ? -1 : socket(AF_INET, SOCK_STREAM, 0);
	if (server_fd < 0 || connect(server_fd, (struct sockaddr *)&p->target, sizeof(p->target)) < 0) {
		if (server_fd >= 0)
			close(server_fd);
		close(client_fd);
		return;
	}
	struct conn *c = xcalloc(1, sizeof(*c));
	c->client_fd = client_fd;
	c->server_fd = server_fd;
	pthread_mutex_lock(&p->lock);
	c->next = p->conns;
	p->conns = c;
	pthread_mutex_unlock(&p->lock);
	struct pump_arg *pa = xmalloc(sizeof(*pa));
	pa->p = p;
	pa->c = c;
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, pump, pa))
		abort();
	pthread_attr_destroy(&attr);
}

static void *accept_loop(void *arg)
{
	struct tcp_proxy *p = arg;
	struct pollfd fds[2] = {{p->listen_fd, POLLIN, 0}, {p->wake[0], POLLIN, 0}};
	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (fds[0].revents & POLLIN) {
			int fd = accept(p->listen_fd, NULL, NULL);
			if (fd >= 0)
				handle(p, fd);
		}
	}
	return NULL;
}

struct tcp_proxy *tcp_proxy_start(const char *target_host, int target_port)
{
	struct tcp_proxy *p = xcalloc(1, sizeof(*p));
	p->target.sin_family = AF_INET;
	p->target.sin_port = htons((uint16_t)target_port);
	if (inet_pton(AF_INET, target_host, &p->target.sin_addr) != 1)
		goto fail;
	p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = {.sin_family = AF_INET};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(p->listen_fd, 64) < 0 ||
	    getsockname(p->listen_fd, (struct sockaddr *)&addr, &len) < 0 || pipe(p->wake) < 0)
		goto fail;
	p->port = ntohs(addr.sin_port);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->idle, NULL);
	if (pthread_create(&p->acceptor, NULL, accept_loop, p))
		abort();
	return p;
fail:
	if (p->listen_fd > 0)
		close(p->listen_fd);
	free(p);
	return NULL;
}

void tcp_proxy_cut(struct tcp_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	for (struct conn *c = p->conns; c; c = c->next) {
		shutdown(c->client_fd, SHUT_RDWR);
		shutdown(c->server_fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&p->lock);
}

void tcp_proxy_block(struct tcp_proxy *p, bool blocked)
{
	pthread_mutex_lock(&p->lock);
	p->blocked = blocked;
	pthread_mutex_unlock(&p->lock);
}

int tcp_proxy_port(const struct tcp_proxy *p)
{
	return p->port;
}

int tcp_proxy_accepted(struct tcp_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	int n = p->accepted;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void tcp_proxy_stop(struct tcp_proxy *p)
{
	if (!p)
		return;
	if (write(p->wake[1], "x", 1) != 1)
		abort();
	pthread_join(p->acceptor, NULL);
	tcp_proxy_cut(p);
	pthread_mutex_lock(&p->lock);
	while (p->conns)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
	close(p->listen_fd);
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->idle);
	free(p);
}
