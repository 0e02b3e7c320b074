/*
 * The operator's HTTP endpoints (/metrics, /healthz, /readyz, and over
 * HTTPS the admission webhook) over libmicrohttpd: a server that maps exact
 * paths to handlers.
 *
 * - GET and HEAD routes (http_server_handle), and POST routes
 *   (http_server_handle_post) whose body, up to the route's limit, the
 *   handler reads whole (past it: 413 when the Content-Length says so,
 *   else the connection is closed). Any other
 *   method on a known path gets 405 with "Allow: GET, HEAD" (or "POST");
 *   an unknown path gets 404 (whatever the method).
 *   Paths match exactly, without the query string ("/readyz?verbose" is
 *   "/readyz"; handlers read the query with http_request_query()).
 * - A GET or HEAD body is discarded (up to 64 KiB, past which the
 *   connection is closed); a method the path does not serve is answered at
 *   once and its connection closed unread.
 * - One request per connection: every response says "Connection: close"
 *   and the server closes it, so no client ever reuses a connection the
 *   server is cutting at that moment (a reset the API server would take
 *   for a failed webhook).
 * - HTTPS (http_server_start_tls): TLS 1.2 and 1.3, the certificate
 *   replaceable while serving (http_server_set_certificate).
 * - Bounded, so slow or greedy clients cannot take the server from a probe:
 *   each request (head and body) must arrive whole within
 *   HTTP_SERVER_REQUEST_TIMEOUT_S of the connection opening, and its
 *   response be taken within
 *   HTTP_SERVER_RESPONSE_TIMEOUT_S, or the connection is closed (a client
 *   trickling bytes gains nothing); request heads up to about 12 KiB (16
 *   KiB of memory per connection); at most HTTP_SERVER_MAX_CONNECTIONS at
 *   once, HTTP_SERVER_MAX_CONNECTIONS_PER_IP of them from one address, so
 *   one client cannot hold them all; POST bodies held at once over every
 *   connection up to http_server_limit_bodies(). Each server (listener) has
 *   its own connections, threads and limits: /healthz on its own port
 *   shares nothing with /metrics or the webhook.
 *
 * Threads: requests are served by HTTP_SERVER_THREADS threads of
 * libmicrohttpd's internal thread pool (event-driven, so idle or slow
 * clients cost no thread, and a slow handler, such as a large /metrics
 * render, does not hold up a probe arriving at the same time), or as many
 * as http_server_start_tls_pool() asks. Handlers therefore run on those
 * threads, that many at once, and must be thread-safe. A connection stays
 * with the thread that took it: a request waits while that thread runs
 * another handler. http_server_handle() may be called
 * from any thread at any time; http_server_stop() needs the other calls on
 * that server to have returned.
 */
#ifndef SOP_RUNTIME_HTTP_SERVER_H
#define SOP_RUNTIME_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_SERVER_THREADS 2
#define HTTP_SERVER_SMALL_BODY (64u << 10) /* see http_server_limit_bodies() */
#define HTTP_SERVER_MAX_CONNECTIONS 256
/* A kubelet probes from one address with one connection at a time: 16 is plenty, and a slow client needs 16 addresses to fill a listener. */
#define HTTP_SERVER_MAX_CONNECTIONS_PER_IP 16
#define HTTP_SERVER_REQUEST_TIMEOUT_S 5
#define HTTP_SERVER_RESPONSE_TIMEOUT_S 10

struct http_server;
struct http_request;

/*
 * A handler answers one request: it returns the HTTP status (100..599;
 * anything else is sent as 500), may set *content_type (borrowed, copied
 * when the handler returns; default "text/plain; charset=utf-8") and may set
 * *body to a new string the server frees (default empty). ctx is the
 * pointer given to http_server_handle(). For HEAD the body is computed but
 * not sent (its length is).
 */
typedef int (*http_handler_fn)(void *ctx, const struct http_request *req, const char **content_type,
			       char **body);

/*
 * Starts a server on bind_address, the value of a --*-bind-address flag:
 *   ":8080"           all interfaces (IPv6 and IPv4 when the host has IPv6,
 *                     else IPv4 only)
 *   "127.0.0.1:8080"  one IPv4 address
 *   "[::1]:8080"      one IPv6 address
 *   "localhost:8080"  a host name, resolved; the first address that binds
 *   "0"               disabled
 * Port 0 asks the kernel for a free port (see http_server_port()).
 *
 * Returns a new server (stop and free it with http_server_stop()), or NULL
 * with *err set to a new string naming the address and the reason (bad
 * syntax, unknown host, bind failure such as "Address already in use").
 * "0" returns a non-NULL disabled server that listens nowhere, so callers
 * need no special case: handlers can be registered, nothing is served, and
 * http_server_port() is 0. NULL is returned only on error.
 */
struct http_server *http_server_start(const char *bind_address, char **err)
	__attribute__((warn_unused_result));

/*
 * Like http_server_start, speaking TLS with cert_pem (the chain, leaf
 * first) and key_pem (PEM; copied).
 */
struct http_server *http_server_start_tls(const char *bind_address, const char *cert_pem, const char *key_pem,
					  char **err) __attribute__((warn_unused_result));
/* Like http_server_start_tls, with threads (at least 1) in its pool. */
struct http_server *http_server_start_tls_pool(const char *bind_address, const char *cert_pem, const char *key_pem,
					       unsigned threads, char **err) __attribute__((warn_unused_result));

/*
 * Serves new connections of an HTTPS server with a new certificate and key
 * (copied); connections already open finish with the old one. Returns 0,
 * or -1 with *err (new string) when the pair is refused: the old one is
 * then still served. Not concurrently with itself or http_server_stop().
 */
int http_server_set_certificate(struct http_server *s, const char *cert_pem, const char *key_pem, char **err);

/* The port the server listens on; 0 when disabled. */
int http_server_port(const struct http_server *s);

/* False for a server started with "0". */
bool http_server_enabled(const struct http_server *s);

/*
 * Serves path (borrowed, copied; must start with '/') with fn; a second call
 * for the same path replaces the handler. ctx is borrowed and must stay
 * valid until http_server_stop() returns.
 */
void http_server_handle(struct http_server *s, const char *path, http_handler_fn fn, void *ctx);
/* Serves POST on path with fn, which reads the body (at most max_body bytes) with http_request_body(). */
void http_server_handle_post(struct http_server *s, const char *path, http_handler_fn fn, void *ctx,
			     size_t max_body);
/*
 * The most bytes of POST bodies larger than HTTP_SERVER_SMALL_BODY the
 * server holds at once, over every connection (bodies arrive side by side,
 * and each is held whole until its handler has answered); 0, the default:
 * only each route's limit. A request whose declared Content-Length does not
 * fit gets 503 at once, its body unread; a chunked one that outgrows the
 * room has its connection closed. Small bodies are never refused for room
 * (the connection limits bound them: 16 MiB at most), so large ones cannot
 * keep them out.
 */
void http_server_limit_bodies(struct http_server *s, size_t bytes);

/*
 * Stops listening, waits for the requests in progress to finish and frees
 * the server. NULL is a no-op.
 */
void http_server_stop(struct http_server *s);

/* The request's method ("GET", "HEAD" or "POST") and path (without query). Borrowed. */
const char *http_request_method(const struct http_request *req);
const char *http_request_path(const struct http_request *req);

/*
 * The value of query argument key (e.g. "verbose" in "/readyz?verbose"),
 * decoded; "" for a key without value, NULL when absent. Borrowed, valid
 * while the handler runs.
 */
const char *http_request_query(const struct http_request *req, const char *key);

/* A POST's body, NUL-terminated (its length in *len, may be NULL); NULL for GET and HEAD. Borrowed. */
const char *http_request_body(const struct http_request *req, size_t *len);

#endif
