/*
 * An HTTPS proxy in front of the real API server that fails requests the
 * way real clusters do (fault_plan.h): 429 with Retry-After, 500/503/504,
 * a connection reset before forwarding or after it (the write happened,
 * the client saw an error), latency, a watch cut in the middle of an event.
 * It terminates TLS with a certificate for 127.0.0.1 signed by the test
 * bed's CA (so a kubeconfig that trusts the test bed trusts it), forwards
 * each request on its own connection (Connection: close) with the client's
 * own Authorization header, and keeps the evidence a test asserts on: the
 * faults it injected, and every write the client repeated after an
 * unknown outcome without a precondition that makes the repeat harmless.
 * Test-only.
 */
#ifndef SOP_IT_FAULT_PROXY_H
#define SOP_IT_FAULT_PROXY_H

#include <jansson.h>

#include "fault_plan.h"

struct fault_proxy;

/*
 * Listens on 127.0.0.1 (a free port) and forwards to
 * https://127.0.0.1:upstream_port, whose certificate ca_cert_file signs;
 * ca_key_file signs the proxy's own. NULL on failure, *err (may be NULL)
 * a new message.
 */
struct fault_proxy *fault_proxy_start(const char *ca_cert_file, const char *ca_key_file, int upstream_port,
				      const struct fault_plan *plan, char **err);
/* Closes every connection and frees p. */
void fault_proxy_stop(struct fault_proxy *p);
int fault_proxy_port(const struct fault_proxy *p);
/* Changes the share of requests that get a fault from now on. */
void fault_proxy_set_percent(struct fault_proxy *p, int percent);
/*
 * Requests seen, and faults injected by kind (counts[FAULT_NONE]: served
 * untouched). A watch cut counts once the stream reached the cut; one that
 * ended before counts as untouched.
 */
long fault_proxy_counts(struct fault_proxy *p, long counts[FAULT_KINDS]);
/* Faults decided for requests other than watches (fault_surely_injected's input). */
long fault_proxy_non_watch_faults(struct fault_proxy *p);
/*
 * The writes repeated after an unknown outcome (a reset after forwarding)
 * that repeat_rule.h does not find harmless: no precondition in the
 * object's own metadata, a DELETE's preconditions or a JSON-patch test,
 * not a create by name (which the server refuses twice), an Event nor a
 * dry run. ["METHOD path", ...], new reference.
 */
json_t *fault_proxy_unsafe_repeats(struct fault_proxy *p);

#endif
