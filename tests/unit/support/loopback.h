/*
 * Scripted servers on loopback for the client-side unit tests (the client,
 * the informer): a listening socket on 127.0.0.1 and a client pointed at it.
 * Failures end the test through cmocka.
 */
#ifndef SOP_TEST_LOOPBACK_H
#define SOP_TEST_LOOPBACK_H

#include "client/kube_client.h"

/* A TCP socket listening on 127.0.0.1, on a port the kernel picks (in *port). */
int loopback_listen(int backlog, int *port);

/* A client for http://127.0.0.1:port with a bearer token and options o. */
struct kube_client *loopback_client(int port, const struct kube_client_options *o);

#endif
