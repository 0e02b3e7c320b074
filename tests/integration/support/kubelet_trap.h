/*
 * A listener that passes for a kubelet (issue 27, finding 2): HTTPS on an
 * address of the test's choosing with a serving certificate the operator
 * accepts, asking every client for a certificate (any is taken, so one
 * that is sent is seen), answering GET /stats/summary with an empty
 * summary, and keeping whatever credential reached it: the Authorization
 * header and whether a client certificate was presented. Test-only.
 */
#ifndef SOP_IT_KUBELET_TRAP_H
#define SOP_IT_KUBELET_TRAP_H

#include <stdbool.h>

struct kubelet_trap;

/* Listens on address (an IPv4 address, e.g. "127.0.0.9"), on a port the kernel picks; cert and key are PEM. */
struct kubelet_trap *kubelet_trap_start(const char *address, const char *cert_pem, const char *key_pem);
int kubelet_trap_port(const struct kubelet_trap *t);

struct kubelet_trap_seen {
	int requests;         /* request heads read */
	char *authorization;  /* the last Authorization header's value, or NULL (new string) */
	bool client_cert;     /* some connection presented a client certificate */
};

/* What reached the trap since its start (fills *seen; release with kubelet_trap_seen_release). */
void kubelet_trap_seen(struct kubelet_trap *t, struct kubelet_trap_seen *seen);
void kubelet_trap_seen_release(struct kubelet_trap_seen *seen);
void kubelet_trap_stop(struct kubelet_trap *t);

#endif
