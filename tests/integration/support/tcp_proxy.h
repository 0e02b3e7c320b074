/*
 * A TCP proxy on 127.0.0.1 in front of the real API server, for faults the
 * server cannot make on demand: cutting every open connection mid-stream
 * (a watch cut) and refusing new ones for a while (a network outage).
 * TLS passes through untouched. Test-only.
 */
#ifndef SOP_TCP_PROXY_H
#define SOP_TCP_PROXY_H

#include <stdbool.h>

struct tcp_proxy;

/* Forwards 127.0.0.1:<port> to target_host:target_port; NULL on failure. */
struct tcp_proxy *tcp_proxy_start(const char *target_host, int target_port);
void tcp_proxy_stop(struct tcp_proxy *p);
int tcp_proxy_port(const struct tcp_proxy *p);
/* Closes every open connection (both sides). */
void tcp_proxy_cut(struct tcp_proxy *p);
/* While blocked, new connections are closed at once. */
void tcp_proxy_block(struct tcp_proxy *p, bool blocked);
/* Connections accepted so far. */
int tcp_proxy_accepted(struct tcp_proxy *p);

#endif
