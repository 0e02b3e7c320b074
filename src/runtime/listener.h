/*
 * The listening socket of a --*-bind-address flag (see http_server.h for
 * the forms): parsing, resolving, binding. Used by http_server.c.
 */
#ifndef SOP_RUNTIME_LISTENER_H
#define SOP_RUNTIME_LISTENER_H

/*
 * A listening socket (non-blocking, close-on-exec, SO_REUSEADDR) for addr
 * ("host:port", "[v6]:port" or ":port" for every interface), or -1 with
 * *err (new string) naming the address and the reason.
 */
int listener_open(const char *addr, char **err);

/* The port fd is bound to; 0 when it cannot be read. */
int listener_port(int fd);

#endif
