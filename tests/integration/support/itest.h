/*
 * Helpers for integration tests against the local control plane
 * (scripts/local-cluster up; its env sets KUBECONFIG for the admin and
 * SOP_OPERATOR_KUBECONFIG for the operator's least-privileged identity).
 * Failures abort the test through cmocka's fail_msg.
 */
#ifndef SOP_ITEST_H
#define SOP_ITEST_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"

/* A client for the admin (KUBECONFIG) or the operator (SOP_OPERATOR_KUBECONFIG). */
struct kube_client *it_admin_client(void);
struct kube_client *it_operator_client(void);
/* A client from a kubeconfig path, with the server URL replaced when server is not NULL. */
struct kube_client *it_client_from(const char *kubeconfig, const char *server);

/* Creates a namespace named prefix-<random>; returns its name (new string). */
char *it_namespace_new(struct kube_client *admin, const char *prefix);
void it_namespace_delete(struct kube_client *admin, const char *ns);

/* Parses JSON text built like printf; aborts the test when it is not JSON. */
json_t *it_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Polls cond every 10 ms until it is true or timeout_ms passed. */
bool it_wait(bool (*cond)(void *ctx), void *ctx, long timeout_ms);
double it_now_ms(void);
void it_sleep_ms(long ms);

/* Runs a shell command (test glue, e.g. scripts/local-cluster); returns its exit status. */
int it_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Writes dir/name: a kubeconfig for server (NULL = the test bed's) with a
 * bearer token and the test bed's CA, context namespace ns (may be NULL).
 * Returns its path (new string).
 */
char *it_write_kubeconfig(const char *dir, const char *name, const char *server, const char *token,
			  const char *ns);
/* The operator's token (new string), from SOP_OPERATOR_KUBECONFIG. */
char *it_operator_token(void);

/* Events in ns matching a field selector (e.g. "reason=ResizeFailed"): a new array. */
json_t *it_events(struct kube_client *c, const char *ns, const char *field_selector);

/* Waits until ns has `pods` Ready pods and `claims` Bound PVCs, or fails the test after timeout_ms. */
void it_wait_ready_and_bound(struct kube_client *c, const char *ns, int pods, int claims, long timeout_ms);

/* The repository's top directory (for deploy/ and scripts/). */
const char *it_source_dir(void);

/* Runs a shell command and returns its standard output (new string, trailing newline cut), or fails the test. */
char *it_sh_output(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
