#include "runtime/http_server.h"

#include <microhttpd.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/listener.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#define HTTP_IDLE_TIMEOUT_S 10
/* Per connection: request head, response headers (headers up to about 12 KiB). */
#define HTTP_CONNECTION_MEMORY (16u << 10)
#define HTTP_MAX_BODY (64u << 10)
/* TLS records are up to 16 KiB: the connection's buffers need room for one beside the request head. */
#define HTTP_TLS_CONNECTION_MEMORY (64u << 10)
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define HTTP_REAP_INTERVAL_MS 250
#define DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"

struct route {
	char *path;
	http_handler_fn fn;
	void *ctx;
	size_t max_body; /* 0: GET and HEAD; else POST with a body up to this */
};

/* A POST's body as it arrives (the request's *con_cls). */
struct upload {
	http_handler_fn fn;
	void *ctx;
	size_t max;
	char *data;
	size_t len, cap;
	size_t declared; /* the Content-Length and a NUL: the buffer's size from the start; 0 when chunked */
	size_t reserved; /* counted in the server's bodies_held (see counted()) */
};

/*
 * A connection's deadline: the reaper shuts down a socket whose client has
 * not sent its whole request (or taken its whole response) in time, since
 * libmicrohttpd 0.9.75 only has an idle timeout, which a client sending a
 * byte now and then never meets.
 */
struct conn {
	int fd;            /* libmicrohttpd's socket: it calls NOTIFY_CLOSED before closing it */
	double deadline;   /* clock_mono_ms(); 0 while a handler runs */
	size_t body;       /* body bytes of the current request; the connection's thread only */
	bool cut;
	struct conn *prev, *next;
};

struct http_server {
	struct MHD_Daemon *daemon; /* NULL when disabled */
	int port;
	bool tls;
	unsigned threads;           /* of libmicrohttpd's pool */
	struct MHD_Daemon *retired; /* TLS: the daemon of the previous certificate, finishing its connections */
	char *cert_pem, *key_pem;   /* what daemon serves with (libmicrohttpd reads them at start) */
	char *retired_cert_pem, *retired_key_pem;
	pthread_rwlock_t lock; /* guards routes */
	struct route *routes;
	size_t nroutes, routes_cap;

	pthread_mutex_t conns_lock; /* guards conns, reaper_stop, the bodies held and the log limiter */
	pthread_cond_t conns_cond;
	struct conn *conns;
	bool reaper_started, reaper_stop;
	pthread_t reaper;
	size_t bodies_max;          /* the most POST body bytes held at once, over every connection; 0: no limit */
	size_t bodies_held;
	double log_window;          /* start of the current second of libmicrohttpd messages */
	unsigned log_count, log_dropped;
};

struct http_request {
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	const char *body; /* POST: the body, NUL-terminated; NULL otherwise */
	size_t body_len;
};

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
	/*
	 * From here on the response owns body. Every response closes its
	 * connection: a client that keeps it (the API server's webhook client
	 * does, for 90 s) and sends its next request just as the deadline cuts
	 * the idle connection gets a reset; the API server does not retry a
	 * POST, so the review fails open (failurePolicy Ignore) and the guard
	 * or the template change is skipped. A new TLS handshake per review
	 * costs about a millisecond.
	 */
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				    content_type ? content_type : DEFAULT_CONTENT_TYPE) != MHD_YES ||
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES ||
	    (allow && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES)) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static bool find_route(struct http_server *s, const char *path, struct route *out)
{
	bool found = false;

	pthread_rwlock_rdlock(&s->lock);
	for (size_t i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].path, path) == 0) {
			*out = s->routes[i];
			found = true;
			break;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return found;
}

static struct conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* seconds from now, or 0 for no deadline. */
static void conn_set_deadline(struct http_server *s, struct conn *c, unsigned seconds)
{
	if (!c)
		return;
	pthread_mutex_lock(&s->conns_lock);
	c->deadline = seconds ? clock_mono_ms() + seconds * 1000.0 : 0;
	pthread_mutex_unlock(&s->conns_lock);
}

/* Runs the handler for a request that is all in, and queues its answer. */
static enum MHD_Result answer(struct http_server *s, struct conn *c, http_handler_fn fn, void *ctx,
			      const struct http_request *req)
{
	const char *content_type = NULL;
	char *body = NULL;
	enum MHD_Result ret;

	/* The request is in: a slow handler is not the client's fault. */
	conn_set_deadline(s, c, 0);
	int status = fn(ctx, req, &content_type, &body);
	if (status < 100 || status > 599) {
		log_error("http", "handler for %s returned status %d; answering 500", req->path, status);
		free(body);
		ret = send_response(req->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
				    xstrdup("500 internal server error\n"), NULL);
	} else {
		ret = send_response(req->conn, (unsigned int)status, content_type, body, NULL);
	}
	conn_set_deadline(s, c, HTTP_SERVER_RESPONSE_TIMEOUT_S);
	return ret;
}

/* Counts n more bytes of bodies held; false, counting nothing, when that would pass the server's budget. */
static bool bodies_reserve(struct http_server *s, size_t n)
{
	pthread_mutex_lock(&s->conns_lock);
	bool ok = !s->bodies_max || (s->bodies_held <= s->bodies_max && n <= s->bodies_max - s->bodies_held);
	if (ok)
		s->bodies_held += n;
	pthread_mutex_unlock(&s->conns_lock);
	return ok;
}

static void bodies_release(struct http_server *s, size_t n)
{
	pthread_mutex_lock(&s->conns_lock);
	s->bodies_held -= n;
	pthread_mutex_unlock(&s->conns_lock);
}

/*
 * What a body buffer of cap bytes counts against the server's budget:
 * small ones nothing (the connection limit bounds them), so that large
 * bodies arriving side by side never keep a small request out.
 */
static size_t counted(size_t cap)
{
	return cap > HTTP_SERVER_SMALL_BODY + 1 ? cap : 0;
}

/*
 * Appends a piece of a POST body; false when past the route's limit or the
 * server's budget for bodies. The buffer has the declared size from the
 * start, else it doubles, each growth counted first.
 */
static bool upload_append(struct http_server *s, struct upload *u, const char *data, size_t n)
{
	if (n > u->max - u->len)
		return false;
	size_t need = u->len + n + 1;
	if (need > u->cap) {
		size_t cap = u->cap ? u->cap : 8;
		while (cap < need)
			cap *= 2;
		if (cap > u->max + 1)
			cap = u->max + 1;
		if (u->declared >= need)
			cap = u->declared;
		if (counted(cap) > u->reserved) {
			if (!bodies_reserve(s, counted(cap) - u->reserved))
				return false;
			u->reserved = counted(cap);
		}
		u->data = xrealloc(u->data, cap);
		u->cap = cap;
	}
	memcpy(u->data + u->len, data, n);
	u->len += n;
	u->data[u->len] = '\0';
	return true;
}

/* The Content-Length a request declares, or 0 when it has none (chunked). */
static unsigned long long declared_length(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return cl ? strtoull(cl, NULL, 10) : 0;
}

static char get_request; /* *con_cls of a GET or HEAD (or a refused request) whose headers were handled */

/*
 * MHD calls this once a request's headers are in (*con_cls still NULL),
 * then for each piece of a body, then once more when the request is
 * complete. A GET or HEAD is answered at that last call: a response queued
 * earlier makes MHD close the connection, which would defeat keep-alive for
 * scrapers and probes. A POST to a POST route collects its body (up to the
 * route's limit) and is answered at that last call too; one whose
 * Content-Length is past the limit gets 413 at once, one that goes past it
 * without saying so (chunked) has its connection closed. Any other request
 * is refused at the first call, so its body is never read (MHD then closes
 * the connection). The body of a GET is discarded as it arrives.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *s = cls;
	struct conn *c = conn_of(conn);
	struct route r = {0};

	(void)version;

	if (!*con_cls) {
		bool found = find_route(s, url, &r);
		bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
		bool post = found && r.max_body && strcmp(method, MHD_HTTP_METHOD_POST) == 0;
		unsigned long long declared = post ? declared_length(conn) : 0;
		bool too_large = post && declared > r.max_body;
		/* A declared body is counted whole before a byte of it is read. */
		size_t whole = declared ? (size_t)declared + 1 : 0;
		bool busy = post && !too_large && counted(whole) && !bodies_reserve(s, counted(whole));
		if (post && !too_large && !busy) {
			struct upload *u = xcalloc(1, sizeof(*u));
			*u = (struct upload){.fn = r.fn, .ctx = r.ctx, .max = r.max_body, .declared = whole,
					     .reserved = counted(whole)};
			*con_cls = u;
			return MHD_YES;
		}
		*con_cls = &get_request;
		if (get && !(found && r.max_body))
			return MHD_YES;
		conn_set_deadline(s, c, HTTP_SERVER_RESPONSE_TIMEOUT_S);
		if (busy)
			return send_response(conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
					     xstrdup("503 busy: the bodies of other requests fill the room for them; "
						     "retry\n"),
					     NULL);
		if (too_large)
			return send_response(conn, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
					     xasprintf("413 request body larger than %zu bytes\n", r.max_body), NULL);
		if (!found)
			return send_response(conn, MHD_HTTP_NOT_FOUND, NULL, xstrdup("404 page not found\n"), NULL);
		return send_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, xstrdup("405 method not allowed\n"),
				     r.max_body ? "POST" : "GET, HEAD");
	}
	if (*con_cls != &get_request) {
		struct upload *u = *con_cls;
		if (*upload_data_size) {
			/* Past the limit without a Content-Length that said so: no answer can be queued mid-body. */
			if (!upload_append(s, u, upload_data, *upload_data_size))
				return MHD_NO;
			*upload_data_size = 0;
			return MHD_YES;
		}
		struct http_request req = {conn, method, url, u->data ? u->data : "", u->len};
		return answer(s, c, u->fn, u->ctx, &req);
	}
	if (*upload_data_size) {
		/* Discarded, but not without end: past the limit the connection is closed. */
		if (c && (c->body += *upload_data_size) > HTTP_MAX_BODY)
			return MHD_NO;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!find_route(s, url, &r)) {
		conn_set_deadline(s, c, 0);
		enum MHD_Result ret =
			send_response(conn, MHD_HTTP_NOT_FOUND, NULL, xstrdup("404 page not found\n"), NULL);
		conn_set_deadline(s, c, HTTP_SERVER_RESPONSE_TIMEOUT_S);
		return ret;
	}
	struct http_request req = {conn, method, url, NULL, 0};
	return answer(s, c, r.fn, r.ctx, &req);
}

/* The request and its response are done: a fresh deadline until libmicrohttpd closes the connection. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct conn *c = conn_of(conn);

	(void)toe;
	if (*con_cls && *con_cls != &get_request) {
		struct upload *u = *con_cls;
		bodies_release(s, u->reserved);
		free(u->data);
		free(u);
	}
	*con_cls = NULL;
	if (c)
		c->body = 0;
	conn_set_deadline(s, c, HTTP_SERVER_REQUEST_TIMEOUT_S);
}

/* Tracks each connection for the reaper, from accept until libmicrohttpd is about to close it. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	struct conn *c = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		c = xcalloc(1, sizeof(*c));
		c->fd = ci ? ci->connect_fd : -1;
		c->deadline = clock_mono_ms() + HTTP_SERVER_REQUEST_TIMEOUT_S * 1000.0;
		pthread_mutex_lock(&s->conns_lock);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		pthread_cond_signal(&s->conns_cond);
		pthread_mutex_unlock(&s->conns_lock);
		*socket_context = c;
		return;
	}
	if (!c)
		return;
	pthread_mutex_lock(&s->conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&s->conns_lock);
	free(c);
	*socket_context = NULL;
}

/*
 * Shuts down the sockets past their deadline; libmicrohttpd then sees the
 * connection end and closes it. Under conns_lock, so a socket is never
 * touched after NOTIFY_CLOSED (which comes before libmicrohttpd's close).
 */
static void *reaper_main(void *arg)
{
	struct http_server *s = arg;

	pthread_mutex_lock(&s->conns_lock);
	while (!s->reaper_stop) {
		double now = clock_mono_ms();
		for (struct conn *c = s->conns; c; c = c->next) {
			if (c->deadline > 0 && now >= c->deadline && !c->cut && c->fd >= 0) {
				shutdown(c->fd, SHUT_RDWR);
				c->cut = true;
			}
		}
		if (s->conns) {
			struct timespec until = clock_mono_deadline(HTTP_REAP_INTERVAL_MS);
			pthread_cond_timedwait(&s->conns_cond, &s->conns_lock, &until);
		} else {
			pthread_cond_wait(&s->conns_cond, &s->conns_lock);
		}
	}
	pthread_mutex_unlock(&s->conns_lock);
	return NULL;
}

/*
 * libmicrohttpd's messages, at most 5 a second: a flood of connections must
 * not flood the log. The format attribute tells clang the format is MHD's.
 */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *s = cls;
	char buf[512];
	size_t n;
	unsigned dropped = 0;
	double now = clock_mono_ms();

	pthread_mutex_lock(&s->conns_lock);
	if (now - s->log_window >= 1000) {
		dropped = s->log_dropped;
		s->log_window = now;
		s->log_count = s->log_dropped = 0;
	}
	bool drop = ++s->log_count > 5;
	if (drop)
		s->log_dropped++;
	pthread_mutex_unlock(&s->conns_lock);
	if (drop)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (dropped)
		log_warn("http", "%s (%u more messages were dropped)", buf, dropped);
	else
		log_warn("http", "%s", buf);
}

/* ---- server ---- */

static struct http_server *server_alloc(void)
{
	struct http_server *s = xcalloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (pthread_rwlock_init(&s->lock, NULL) != 0 || pthread_mutex_init(&s->conns_lock, NULL) != 0 ||
	    pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&s->conns_cond, &ca) != 0)
		abort();
	pthread_condattr_destroy(&ca);
	return s;
}

static void reaper_stop(struct http_server *s)
{
	if (!s->reaper_started)
		return;
	pthread_mutex_lock(&s->conns_lock);
	s->reaper_stop = true;
	pthread_cond_signal(&s->conns_cond);
	pthread_mutex_unlock(&s->conns_lock);
	pthread_join(s->reaper, NULL);
	s->reaper_started = false;
}

static void server_free(struct http_server *s)
{
	reaper_stop(s);
	for (size_t i = 0; i < s->nroutes; i++)
		free(s->routes[i].path);
	free(s->routes);
	free(s->cert_pem);
	free(s->key_pem);
	pthread_rwlock_destroy(&s->lock);
	pthread_mutex_destroy(&s->conns_lock);
	pthread_cond_destroy(&s->conns_cond);
	free(s);
}

/*
 * A daemon serving the listening socket fd: an internal thread pool
 * (s->threads, epoll), see the header; the limits keep a misbehaving
 * client from holding threads or memory. With a certificate it speaks TLS
 * (1.2 and 1.3 only). MHD_USE_ITC makes MHD_quiesce_daemon() possible, so
 * a new certificate can take over the socket. MHD owns fd from here unless
 * quiesced: MHD_stop_daemon() closes it, and so does a failed start (past
 * option checking, which these constant options pass).
 */
static struct MHD_Daemon *start_daemon(struct http_server *s, int fd, const char *cert_pem, const char *key_pem)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG | MHD_USE_ITC;
	if (!cert_pem)
		return MHD_start_daemon(
			flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
			MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE, s->threads,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_SERVER_MAX_CONNECTIONS,
			MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)HTTP_SERVER_MAX_CONNECTIONS_PER_IP,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
			(unsigned int)HTTP_IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
			MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	return MHD_start_daemon(
		flags | MHD_USE_TLS, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE, s->threads,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_SERVER_MAX_CONNECTIONS,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)HTTP_SERVER_MAX_CONNECTIONS_PER_IP,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_TLS_CONNECTION_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)HTTP_IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
		MHD_OPTION_HTTPS_MEM_KEY, key_pem, MHD_OPTION_HTTPS_PRIORITIES, HTTP_TLS_PRIORITIES, MHD_OPTION_END);
}

static struct http_server *server_start(const char *bind_address, const char *cert_pem, const char *key_pem,
					unsigned threads, char **err)
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

	fd = listener_open(bind_address, err);
	if (fd < 0)
		return NULL;
	s = server_alloc();
	s->port = listener_port(fd);
	s->threads = threads;
	if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0) {
		*err = xasprintf("cannot serve HTTP on \"%s\": no thread", bind_address);
		close(fd);
		server_free(s);
		return NULL;
	}
	s->reaper_started = true;
	s->tls = cert_pem != NULL;
	s->cert_pem = cert_pem ? xstrdup(cert_pem) : NULL;
	s->key_pem = key_pem ? xstrdup(key_pem) : NULL;
	s->daemon = start_daemon(s, fd, s->cert_pem, s->key_pem);
	if (!s->daemon) {
		*err = xasprintf("cannot serve HTTP%s on \"%s\": libmicrohttpd failed to start (%s)",
				 s->tls ? "S" : "", bind_address,
				 s->tls ? "is the certificate and key a valid PEM pair? see the log" : "see the log");
		server_free(s);
		return NULL;
	}
	return s;
}

struct http_server *http_server_start(const char *bind_address, char **err)
{
	return server_start(bind_address, NULL, NULL, HTTP_SERVER_THREADS, err);
}

struct http_server *http_server_start_tls(const char *bind_address, const char *cert_pem, const char *key_pem,
					  char **err)
{
	return http_server_start_tls_pool(bind_address, cert_pem, key_pem, HTTP_SERVER_THREADS, err);
}

struct http_server *http_server_start_tls_pool(const char *bind_address, const char *cert_pem, const char *key_pem,
					       unsigned threads, char **err)
{
	if (!cert_pem || !key_pem || !threads) {
		*err = xstrdup(threads ? "HTTPS needs a certificate and a key" : "HTTPS needs at least one thread");
		return NULL;
	}
	return server_start(bind_address, cert_pem, key_pem, threads, err);
}

static void stop_retired(struct http_server *s)
{
	if (s->retired)
		MHD_stop_daemon(s->retired); /* quiesced: leaves the listening socket alone */
	s->retired = NULL;
	free(s->retired_cert_pem);
	free(s->retired_key_pem);
	s->retired_cert_pem = s->retired_key_pem = NULL;
}

/* Whether key_pem is the private key of the certificate in cert_pem (libmicrohttpd finds out only at start). */
static bool pem_pair_matches(const char *cert_pem, const char *key_pem)
{
	BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
	X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, (void *)"") : NULL;
	bool ok = cert && key && X509_check_private_key(cert, key) == 1;
	EVP_PKEY_free(key);
	X509_free(cert);
	BIO_free(kb);
	BIO_free(cb);
	ERR_clear_error();
	return ok;
}

int http_server_set_certificate(struct http_server *s, const char *cert_pem, const char *key_pem, char **err)
{
	*err = NULL;
	if (!s->daemon || !s->tls) {
		*err = xstrdup("not an HTTPS server");
		return -1;
	}
	if (!pem_pair_matches(cert_pem, key_pem)) {
		*err = xstrdup("the new certificate and key are not a PEM pair; still serving the old one");
		return -1;
	}
	/* The connections of the certificate before last have had a whole renewal period to finish. */
	stop_retired(s);
	MHD_socket fd = MHD_quiesce_daemon(s->daemon);
	if (fd == MHD_INVALID_SOCKET) {
		*err = xstrdup("libmicrohttpd could not hand over the listening socket");
		return -1;
	}
	/*
	 * Each daemon gets its own descriptor of the socket (a failed start
	 * may close the one it was given); the quiesced one is ours to close.
	 */
	char *cert = xstrdup(cert_pem), *key = xstrdup(key_pem);
	struct MHD_Daemon *fresh = start_daemon(s, dup(fd), cert, key);
	if (!fresh) {
		free(cert);
		free(key);
		*err = xstrdup("libmicrohttpd refused the new certificate and key (see the log); still serving the old "
			       "one");
		fresh = start_daemon(s, dup(fd), s->cert_pem, s->key_pem);
		if (!fresh)
			log_error("http", "HTTPS on port %d stopped: no daemon could take the socket over", s->port);
		close(fd);
		MHD_stop_daemon(s->daemon);
		s->daemon = fresh;
		return -1;
	}
	close(fd);
	/* The old daemon finishes the connections it has; the new one takes every new connection. */
	s->retired = s->daemon;
	s->retired_cert_pem = s->cert_pem;
	s->retired_key_pem = s->key_pem;
	s->daemon = fresh;
	s->cert_pem = cert;
	s->key_pem = key;
	return 0;
}

int http_server_port(const struct http_server *s)
{
	return s->port;
}

bool http_server_enabled(const struct http_server *s)
{
	return s->daemon != NULL;
}

static void add_route(struct http_server *s, const char *path, http_handler_fn fn, void *ctx, size_t max_body)
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
			s->routes[i].max_body = max_body;
			pthread_rwlock_unlock(&s->lock);
			return;
		}
	}
	s->routes = xgrow(s->routes, &s->routes_cap, s->nroutes + 1, sizeof(*s->routes));
	s->routes[s->nroutes++] = (struct route){xstrdup(path), fn, ctx, max_body};
	pthread_rwlock_unlock(&s->lock);
}

void http_server_limit_bodies(struct http_server *s, size_t bytes)
{
	pthread_mutex_lock(&s->conns_lock);
	s->bodies_max = bytes;
	pthread_mutex_unlock(&s->conns_lock);
}

void http_server_handle(struct http_server *s, const char *path, http_handler_fn fn, void *ctx)
{
	add_route(s, path, fn, ctx, 0);
}

void http_server_handle_post(struct http_server *s, const char *path, http_handler_fn fn, void *ctx,
			     size_t max_body)
{
	add_route(s, path, fn, ctx, max_body ? max_body : 1);
}

const char *http_request_body(const struct http_request *req, size_t *len)
{
	if (len)
		*len = req->body_len;
	return req->body;
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	stop_retired(s);
	if (s->daemon)
		MHD_stop_daemon(s->daemon); /* joins the threads, closes the sockets (NOTIFY_CLOSED each) */
	s->daemon = NULL;
	server_free(s);
}
