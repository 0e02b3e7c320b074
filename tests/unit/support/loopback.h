/*
 * Scripted servers on loopback for the client-side unit tests (the client,
 * the informer): a listening socket on 127.0.0.1 and a client pointed at it.
 * Failures end the test through cmocka.
 */
#ifndef SOP_TEST_LOOPBACK_H
#define SOP_TEST_LOOPBACK_H

#include <stddef.h>

#include "client/kube_client.h"

/* A TCP socket listening on 127.0.0.1, on a port the kernel picks (in *port). */
int loopback_listen(int backlog, int *port);

/* A client for http://127.0.0.1:port with a bearer token and options o. */
struct kube_client *loopback_client(int port, const struct kube_client_options *o);

/*
 * A server on 127.0.0.1 that answers every request (one per connection)
 * with the same answer, or with the next answer of a script (the last one
 * repeats), and keeps the head of the last request (request line and
 * headers) and the line and body of the first 16 for the test to check.
 */
struct canned_server;

struct canned_answer {
	const char *status; /* "403 Forbidden" */
	const char *body;
};

/* content_type and body are borrowed until the stop. */
struct canned_server *canned_server_start(const char *status, const char *content_type, const char *body);
/* answers (n > 0) and content_type are borrowed until the stop. */
struct canned_server *canned_server_start_script(const struct canned_answer *answers, int n,
						 const char *content_type);
int canned_server_port(const struct canned_server *s);
/* From now on each answer waits ms after the request is read (a slow server). */
void canned_server_delay(struct canned_server *s, int ms);
/* How many requests were answered; the last one's head is copied into head (NUL-terminated). */
int canned_server_last(struct canned_server *s, char *head, size_t size);
/*
 * How many requests were answered; *line and *body (new strings; NULL
 * when there was no request i, from 0) are request i's request line and
 * body ("" for none).
 */
int canned_server_request(struct canned_server *s, int i, char **line, char **body);
void canned_server_stop(struct canned_server *s);

#endif
