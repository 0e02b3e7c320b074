/*
 * The operator's HTTP endpoints (/metrics, /healthz, /readyz) over
 * libmicrohttpd: a read-only server that maps exact paths to handlers.
 *
 * - GET and HEAD only: any other method on a known path gets 405 with
 *   "Allow: GET, HEAD"; an unknown path gets 404 (whatever the method).
 *   Paths match exactly, without the query string ("/readyz?verbose" is
 *   "/readyz"; handlers read the query with http_request_query()).
 * - Request bodies are never used: a GET or HEAD body is discarded (up to
 *   64 KiB, past which the connection is closed); any other method is
 *   answered at once and its connection closed unread.
 * - Bounded, so slow or greedy clients cannot take the server from a probe:
 *   each request (head and body) must arrive whole within
 *   HTTP_SERVER_REQUEST_TIMEOUT_S of the connection opening or of the
 *   previous response, and each response be taken within
 *   HTTP_SERVER_RESPONSE_TIMEOUT_S, or the connection is closed (a client
 *   trickling bytes gains nothing); request heads up to about 12 KiB (16
 *   KiB of memory per connection); at most HTTP_SERVER_MAX_CONNECTIONS at
 *   once, HTTP_SERVER_MAX_CONNECTIONS_PER_IP of them from one address, so
 *   one client cannot hold them all. Each server (listener) has its own
 *   connections, threads and limits: /healthz on its own port shares
 *   nothing with /metrics.
 *
 * Threads: requests are served by two threads of libmicrohttpd's internal
 * thread pool (event-driven, so idle or slow clients cost no thread, and a
 * slow handler, such as a large /metrics render, does not hold up a probe
 * arriving at the same time). Handlers therefore run on those threads, up to
 * two at once, and must be thread-safe. http_server_handle() may be called
 * from any thread at any time; http_server_stop() needs the other calls on
 * that server to have returned.
 */
#ifndef SOP_RUNTIME_HTTP_SERVER_H
#define SOP_RUNTIME_HTTP_SERVER_H

#include <stdbool.h>

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

/*
 * Stops listening, waits for the requests in progress to finish and frees
 * the server. NULL is a no-op.
 */
void http_server_stop(struct http_server *s);

/* The request's method ("GET" or "HEAD") and path (without query). Borrowed. */
const char *http_request_method(const struct http_request *req);
const char *http_request_path(const struct http_request *req);

/*
 * The value of query argument key (e.g. "verbose" in "/readyz?verbose"),
 * decoded; "" for a key without value, NULL when absent. Borrowed, valid
 * while the handler runs.
 */
const char *http_request_query(const struct http_request *req, const char *key);

#endif
