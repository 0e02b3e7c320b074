#include "runtime/http_server.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/xalloc.h"

#define HTTP_THREADS 2
#define HTTP_MAX_CONNECTIONS 64
#define HTTP_IDLE_TIMEOUT_S 10
#define HTTP_LISTEN_BACKLOG 64
#define DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"

struct route {
	char *path;
	http_handler_fn fn;
	void *ctx;
};

struct http_server {
	struct MHD_Daemon *daemon; /* NULL when disabled */
	int port;
	pthread_rwlock_t lock; /* guards routes */
	struct route *routes;
	size_t nroutes, routes_cap;
};

struct http_request {
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
};

/* ---- the bind address ---- */

/*
 * Splits "host:port", "[v6]:port" or ":port" into *host (new string, ""
 * for all interfaces) and *port. On error returns -1 and sets *why
 * (static text).
 */
static int split_address(const char *addr, char **host, char port[6], bool *bracketed, const char **why)
{
	const char *colon, *host_start = addr, *host_end;

	*bracketed = false;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close) {
			*why = "missing ']' after the IPv6 address";
			return -1;
		}
		if (close == addr + 1) {
			*why = "empty IPv6 address in []";
			return -1;
		}
		if (close[1] != ':') {
			*why = "missing port after ']' (e.g. \"[::1]:8080\")";
			return -1;
		}
		*bracketed = true;
		host_start = addr + 1;
		host_end = close;
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon) {
			*why = "missing port (e.g. \":8080\" for all interfaces, \"127.0.0.1:8080\", or \"0\" to disable)";
			return -1;
		}
		if (memchr(addr, ':', (size_t)(colon - addr))) {
			*why = "an IPv6 address needs brackets (e.g. \"[::1]:8080\")";
			return -1;
		}
		host_end = colon;
	}

	const char *p = colon + 1;
	size_t n = strlen(p);
	if (n == 0) {
		*why = "missing port after ':'";
		return -1;
	}
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || i >= 5) {
			*why = "the port must be a number from 0 to 65535";
			return -1;
		}
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v > 65535) {
		*why = "the port must be a number from 0 to 65535";
		return -1;
	}
	snprintf(port, 6, "%lu", v);
	*host = xstrndup(host_start, (size_t)(host_end - host_start));
	return 0;
}

/* A listening socket for sa, or -1 with errno set. */
static int listen_on(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int on = 1, off = 0, saved;

	if (fd < 0)
		return -1;
	/* Restarts must not wait for TIME_WAIT connections of the old process. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		goto fail;
	/* "[::]:port" (and ":port") serve IPv4 too, as Go's net.Listen does. */
	if (sa->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0)
		goto fail;
	if (bind(fd, sa, len) < 0 || listen(fd, HTTP_LISTEN_BACKLOG) < 0)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

/* A listening socket for addr, or -1 with *err set. */
static int open_listener(const char *addr, char **err)
{
	char *host = NULL;
	char port[6];
	bool bracketed;
	const char *why;
	int fd = -1;

	if (split_address(addr, &host, port, &bracketed, &why) < 0) {
		*err = xasprintf("invalid bind address \"%s\": %s", addr, why);
		goto out;
	}

	if (!*host) {
		/* All interfaces: IPv6 dual-stack, or IPv4 where the kernel has
		 * no IPv6 (some container runtimes switch it off). */
		struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
					    .sin6_port = htons((uint16_t)atoi(port))};
		struct sockaddr_in any4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
					   .sin_port = htons((uint16_t)atoi(port))};
		fd = listen_on((const struct sockaddr *)&any6, sizeof(any6));
		if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
			fd = listen_on((const struct sockaddr *)&any4, sizeof(any4));
		if (fd < 0)
			*err = xasprintf("cannot listen on \"%s\": %s", addr, strerror(errno));
		goto out;
	}

	struct addrinfo hints = {
		.ai_family = bracketed ? AF_INET6 : AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV | (bracketed ? AI_NUMERICHOST : 0),
	};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		*err = xasprintf("invalid bind address \"%s\": %s%s", addr,
				 bracketed ? "not an IPv6 address: " : "cannot resolve host: ",
				 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		goto out;
	}
	int last_errno = EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = listen_on(ai->ai_addr, ai->ai_addrlen);
		if (fd < 0)
			last_errno = errno;
	}
	freeaddrinfo(res);
	if (fd < 0)
		*err = xasprintf("cannot listen on \"%s\": %s", addr, strerror(last_errno));
out:
	free(host);
	return fd;
}

static int socket_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* ---- requests ---- */

const char *http_request_method(const struct http_request *req)
{
	return req->method;
}

const char *http_request_path(const struct http_request *req)
{
	return req->path;
}

const char *http_request_query(const struct http_request *req, const char *key)
{
	const char *value = NULL;
	size_t len = 0;

	if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &value, &len) != MHD_YES)
		return NULL;
	return value ? value : "";
}

static enum MHD_Result send_response(struct MHD_Connection *conn, unsigned int status, const char *content_type,
				     char *body, const char *allow)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (body)
		resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	else
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return MHD_NO; /* closes the connection */
	}
	/* From here on the response owns body. */
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				    content_type ? content_type : DEFAULT_CONTENT_TYPE) != MHD_YES ||
	    (allow && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES)) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static bool find_route(struct http_server *s, const char *path, http_handler_fn *fn, void **ctx)
{
	bool found = false;

	pthread_rwlock_rdlock(&s->lock);
	for (size_t i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].path, path) == 0) {
			*fn = s->routes[i].fn;
			*ctx = s->routes[i].ctx;
			found = true;
			break;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return found;
}

/*
 * MHD calls this once a request's headers are in (*con_cls still NULL),
 * then for each piece of a body, then once more when the request is
 * complete. A GET or HEAD is answered at that last call: a response queued
 * earlier makes MHD close the connection, which would defeat keep-alive for
 * scrapers and probes. Any other method is refused at the first call, so its
 * body is never read (MHD then closes the connection). The body of a GET is
 * discarded as it arrives.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	static char seen; /* *con_cls marker: the headers were handled */
	struct http_server *s = cls;
	http_handler_fn fn = NULL;
	void *ctx = NULL;

	(void)version;
	(void)upload_data;

	if (!*con_cls) {
		*con_cls = &seen;
		if (strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0)
			return MHD_YES;
		if (!find_route(s, url, &fn, &ctx))
			return send_response(conn, MHD_HTTP_NOT_FOUND, NULL, xstrdup("404 page not found\n"), NULL);
		return send_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, xstrdup("405 method not allowed\n"),
				     "GET, HEAD");
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!find_route(s, url, &fn, &ctx))
		return send_response(conn, MHD_HTTP_NOT_FOUND, NULL, xstrdup("404 page not found\n"), NULL);

	struct http_request req = {conn, method, url};
	const char *content_type = NULL;
	char *body = NULL;
	int status = fn(ctx, &req, &content_type, &body);
	if (status < 100 || status > 599) {
		log_error("http", "handler for %s returned status %d; answering 500", url, status);
		free(body);
		return send_response(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
				     xstrdup("500 internal server error\n"), NULL);
	}
	return send_response(conn, (unsigned int)status, content_type, body, NULL);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	log_warn("http", "%s", buf);
}

/* ---- server ---- */

static struct http_server *server_alloc(void)
{
	struct http_server *s = xcalloc(1, sizeof(*s));

	if (pthread_rwlock_init(&s->lock, NULL) != 0)
		abort();
	return s;
}

static void server_free(struct http_server *s)
{
	for (size_t i = 0; i < s->nroutes; i++)
		free(s->routes[i].path);
	free(s->routes);
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

struct http_server *http_server_start(const char *bind_address, char **err)
{
	struct http_server *s = NULL;
	int fd;

	*err = NULL;
	if (!bind_address || !*bind_address) {
		*err = xstrdup("invalid bind address \"\": empty (use \":8080\" for all interfaces or \"0\" to disable)");
		return NULL;
	}
	if (strcmp(bind_address, "0") == 0)
		return server_alloc();

	fd = open_listener(bind_address, err);
	if (fd < 0)
		return NULL;
	s = server_alloc();
	s->port = socket_port(fd);
	/*
	 * An internal thread pool (HTTP_THREADS, epoll): see the header. The
	 * limits keep a misbehaving client from holding threads or memory.
	 * MHD owns fd from here: MHD_stop_daemon() closes it, and so does a
	 * failed start (past option checking, which these constant options
	 * pass).
	 */
	s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0, NULL,
				     NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE,
				     (unsigned int)HTTP_THREADS, MHD_OPTION_CONNECTION_LIMIT,
				     (unsigned int)HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)HTTP_IDLE_TIMEOUT_S, MHD_OPTION_END);
	if (!s->daemon) {
		*err = xasprintf("cannot serve HTTP on \"%s\": libmicrohttpd failed to start (see the log)",
				 bind_address);
		server_free(s);
		return NULL;
	}
	return s;
}

int http_server_port(const struct http_server *s)
{
	return s->port;
}

bool http_server_enabled(const struct http_server *s)
{
	return s->daemon != NULL;
}

void http_server_handle(struct http_server *s, const char *path, http_handler_fn fn, void *ctx)
{
	if (!path || path[0] != '/' || !fn) {
		fprintf(stderr, "stateful-operator: http_server_handle: bad path or handler\n");
		abort();
	}
	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].path, path) == 0) {
			s->routes[i].fn = fn;
			s->routes[i].ctx = ctx;
			pthread_rwlock_unlock(&s->lock);
			return;
		}
	}
	s->routes = xgrow(s->routes, &s->routes_cap, s->nroutes + 1, sizeof(*s->routes));
	s->routes[s->nroutes++] = (struct route){xstrdup(path), fn, ctx};
	pthread_rwlock_unlock(&s->lock);
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	if (s->daemon)
		MHD_stop_daemon(s->daemon); /* joins the threads, closes the socket */
	s->daemon = NULL;
	server_free(s);
}
