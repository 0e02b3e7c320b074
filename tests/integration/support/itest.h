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
/*
 * The operator's identity in namespace scope: deploy/rbac/namespace's Role
 * applied in ns, bound to a ServiceAccount stateful-operator of ns; a
 * kubeconfig for it (context namespace ns) written in dir. Its path (new
 * string).
 */
char *it_namespaced_identity(const char *ns, const char *dir);
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

/*
 * Runs a shell command; *out is its standard output (new string, as is),
 * and it returns its exit status (128+signal when killed), whatever it is.
 */
int it_sh_capture(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like it_wait, polling every interval_ms (for conditions that cost several API calls). */
bool it_wait_every(bool (*cond)(void *ctx), void *ctx, long timeout_ms, long interval_ms);

/* ---- objects ---- */

/* GET: a new reference, or NULL when it does not exist (any other error fails the test). */
json_t *it_get(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *name);
/* Every item of a LIST (label_selector may be NULL): a new array; an error fails the test. */
json_t *it_list(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *label_selector);
/* A JSON merge patch built like printf; an error fails the test. */
void it_merge_patch(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *name,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* metadata.annotations[key] / metadata.labels[key] of obj, or NULL. Borrowed. */
const char *it_annotation(const json_t *obj, const char *key);
const char *it_label(const json_t *obj, const char *key);
/* Sets metadata.annotations[key] = value on obj (a manifest being built). */
void it_set_annotation(json_t *obj, const char *key, const char *value);
bool it_has_finalizer(const json_t *obj, const char *finalizer);
/*
 * Deletes every object of r in ns and removes finalizer from each: a
 * teardown's way to let a namespace go once the operator that would have
 * removed the finalizer is stopped. Deleting first matters: the API server
 * refuses new finalizers on an object being deleted, so the next test's
 * operator cannot take the object on again.
 */
void it_delete_all_removing_finalizer(struct kube_client *c, const struct kube_resource *r, const char *ns,
				      const char *finalizer);
/* The Events in ns with reason about object (NULL: any), counting repeats (Event.count). */
int it_event_count(struct kube_client *c, const char *ns, const char *reason, const char *object);
/* The message of one such Event (new string), or NULL when there is none. */
char *it_event_message(struct kube_client *c, const char *ns, const char *reason, const char *object);
/*
 * Waits up to timeout_ms for at least one such Event. An Event is posted
 * after the state it reports is written, so a test that saw the state must
 * wait for the Event rather than list once.
 */
bool it_wait_event(struct kube_client *c, const char *ns, const char *reason, const char *object, long timeout_ms);
/* Prints to stderr every Event in ns, then the requests in ns for which the API server failed a webhook open (audit log). */
void it_print_events_and_failed_open(struct kube_client *c, const char *ns);

/* ---- manifests for the test bed ---- */

/*
 * A StatefulSet name (selector and pod label app=name, containers that kwok
 * runs) with replicas, podManagementPolicy policy ("OrderedReady" or
 * "Parallel") and one volumeClaimTemplate of 1Mi in the default class for
 * each name in claims (comma-separated, e.g. "data,logs"). New object.
 */
json_t *it_statefulset(const char *name, int replicas, const char *policy, const char *claims);
/*
 * A Pod template as JSON text (metadata + spec; new string): label app=app,
 * one container mounting each volume named in mounts (comma-separated, may
 * be NULL), and the test bed's annotations for kwok: the pod ends with
 * outcome ("succeed" or "fail"; NULL: it runs forever) after delay (Go
 * duration, NULL: at once) with message as its termination message (may be
 * NULL).
 */
char *it_testbed_pod_template(const char *app, const char *outcome, const char *delay, const char *message,
			      const char *mounts);

/* ---- recording what the API server saw, in order ---- */

/*
 * Records every change to one resource type in a namespace as its watch
 * delivers it, from the moment it_recorder_start returns (a LIST, then a
 * background thread WATCHing from that point, resumed when the server ends
 * a watch). Each record is {"type": "ADDED"|"MODIFIED"|"DELETED", "rv":
 * resourceVersion as an integer, "at_ms": it_now_ms() on arrival, "object"};
 * the objects present at the start are recorded as ADDED. The test bed has
 * one etcd, whose revision every resourceVersion is, so records of different
 * recorders (pods and claims) can be ordered against each other by rv.
 */
struct it_recorder;
struct it_recorder *it_recorder_start(const struct kube_resource *r, const char *ns);
/* The records so far: a new array. */
json_t *it_recorder_records(struct it_recorder *rec);
/* Stops the recorder and frees it; returns all its records (new array). */
json_t *it_recorder_stop(struct it_recorder *rec);

/*
 * Each object's life in records (of one recorder), in order of first
 * appearance, one per UID: a new array of {"uid", "name", "first" and
 * "last": the object as first and last seen, "added_rv", "added_ms",
 * "deleting_rv" and "deleting_ms" (deletionTimestamp first seen, or
 * DELETED; 0 when never), "gone_rv" (DELETED; 0 when never)}. Only objects
 * labelled label_key=label_value count (label_key NULL: all; label_value
 * NULL: any value).
 */
json_t *it_lives(const json_t *records, const char *label_key, const char *label_value);
/* The first life named name in lives (borrowed), or NULL. */
const json_t *it_life_named(const json_t *lives, const char *name);
/* The rv of the first record of the object uid whose field (dotted path) equals value; 0 when none. */
long long it_first_rv_where(const json_t *records, const char *uid, const char *path, const char *value);
/* The most objects (labelled as in it_lives) alive at once: from being added until their deletion begins. */
int it_most_alive(const json_t *records, const char *label_key, const char *label_value);

#endif
