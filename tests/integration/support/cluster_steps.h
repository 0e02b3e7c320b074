/*
 * Steps the StatefulCluster integration tests share (it_cluster.c and
 * it_cluster_faults.c): a per-test fixture holding the namespace, the
 * recorders, the operator and any Node the test made, with a teardown that
 * removes them whatever happened; StatefulCluster manifests whose pods kwok
 * runs; waits on the operator's progress; what pods, claims and status must
 * look like. Failures abort the test through cmocka's fail_msg. Test-only;
 * call from the test's thread.
 *
 * Test bed annotations (scripts/local-cluster's kwok stages) a template or a
 * running pod may carry: CL_READY_AFTER (Go duration: Running at once, Ready
 * only then) and CL_OUTCOME "fail" (the pod Fails).
 */
#ifndef SOP_IT_CLUSTER_STEPS_H
#define SOP_IT_CLUSTER_STEPS_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

/* How long one step may take, and how often the waits ask the API server. */
#define CL_WAIT_MS 90000L
#define CL_POLL_MS 200L

#define CL_READY_AFTER "testbed.stateful-operator.io/ready-after"
#define CL_OUTCOME "testbed.stateful-operator.io/outcome"
/* The label (and NoSchedule taint) of the Nodes a test makes: only its own pods go there. */
#define CL_POOL "stateful-operator.io/it-pool"

#define CL_MAX_NODES 4

/* One test's world. cl_setup makes it, cl_teardown frees all it holds. */
struct cl_test {
	struct kube_client *admin;
	char *ns;                                              /* the test's namespace; NULL until made */
	struct it_recorder *pods, *pvcs, *clusters;            /* running recorders, or NULL */
	json_t *pod_records, *pvc_records, *cluster_records;   /* what they recorded, once stopped */
	struct daemon d;                                       /* the operator; d.pid is 0 when none runs */
	char *nodes[CL_MAX_NODES];                             /* Nodes the test made (deleted at teardown) */
	int nnodes;
};

/* s is not NULL and equals want. */
bool cl_str_is(const char *s, const char *want);

/* ---- the fixture ---- */

/* cmocka setup: *state becomes a new struct cl_test with an admin client. Returns 0. */
int cl_setup(void **state);
/*
 * cmocka teardown, whatever the test did: kills an operator left running,
 * stops the recorders, force-deletes the namespace's pods when the test made
 * Nodes (pods on a lost node have no kubelet to confirm their deletion),
 * deletes the namespace and the Nodes, then frees the fixture. Returns 0.
 */
int cl_teardown(void **state);

/* A cmocka test entry with the fixture above; needs <cmocka.h>. */
#define cl_unit_test(f) cmocka_unit_test_setup_teardown(f, cl_setup, cl_teardown)

/* Creates the test's namespace prefix-<random> (t->ns). */
void cl_namespace_new(struct cl_test *t, const char *prefix);
/* Records t->ns's pods, claims and StatefulClusters (t->pods, t->pvcs, t->clusters). */
void cl_record(struct cl_test *t);
/* Stops the recorders started: their records in t->pod_records, t->pvc_records, t->cluster_records. */
void cl_stop_recording(struct cl_test *t);

/* Starts an operator whose caches have synced (t->d). */
void cl_operator_start(struct cl_test *t);
/* Stops t's operator: asserts that it exits 0 within 10 s. */
void cl_operator_stop(struct cl_test *t);

/* Shows what the cluster holds in ns (StatefulClusters, pods, claims, revisions, Events) on stderr. */
void cl_show_namespace(const char *ns);
/*
 * Fails the test with a printf-built message and t's operator log, after
 * showing t's namespace. A macro so that cmocka names the caller's line;
 * needs <cmocka.h>.
 */
#define cl_fail_with_log(t, ...)                                        \
	do {                                                            \
		cl_show_namespace((t)->ns);                             \
		char *log_ = daemon_log(&(t)->d);                       \
		char *what_ = xasprintf(__VA_ARGS__);                   \
		fail_msg("%s; operator log:\n%s", what_, log_);         \
	} while (0)
/* it_wait_every(cond, ctx, CL_WAIT_MS, CL_POLL_MS), failing the test with the log and what when it times out. */
#define cl_wait_or_fail(t, cond, ctx, ...)                                          \
	do {                                                                        \
		if (!it_wait_every((cond), (ctx), CL_WAIT_MS, CL_POLL_MS))          \
			cl_fail_with_log((t), __VA_ARGS__);                         \
	} while (0)

/* ---- manifests ---- */

/*
 * StatefulCluster name: replicas, selector app=<name> (the template's label
 * too), serviceName name, one container kwok runs mounting each claim, one
 * volumeClaimTemplate of 1Mi in the default class for each name in claims
 * (comma-separated, may be NULL). New object.
 */
json_t *cl_manifest(const char *name, int replicas, const char *claims);
/*
 * Sets obj's field at a dotted path (e.g. "spec.replacement.nodeLostAfterSeconds"),
 * making the objects on the way. Steals value.
 */
void cl_set(json_t *obj, const char *path, json_t *value);
/* Sets spec.template.metadata.annotations[key] = value. */
void cl_template_annotate(json_t *stc, const char *key, const char *value);

/* ---- the StatefulCluster ---- */

/* Creates stc (borrowed) in t->ns; an error fails the test. */
void cl_create(struct cl_test *t, const json_t *stc);
/* GET: a new reference, or NULL when it does not exist. */
json_t *cl_get(struct cl_test *t, const char *name);
/* A JSON merge patch built like printf; returns the resourceVersion it made (an etcd revision). */
long long cl_patch(struct cl_test *t, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The integer at a dotted path of obj (e.g. "status.readyReplicas"), or -1 when there is none. */
long long cl_int_at(const json_t *obj, const char *path);
/* The identities of status.members, in order, comma-separated (new string; "" when none). */
char *cl_member_list(const json_t *stc);

/*
 * Waits until the StatefulCluster name has settled at replicas members: the
 * status of its current generation counts replicas pods, all Ready,
 * available and at the update revision (which is then the current one), and
 * its pods are just those, Ready and at that revision. When ids is not NULL
 * ("x-0,x-2,x-3"), the members and pods are exactly those identities. Fails
 * the test with the log after CL_WAIT_MS. Returns the StatefulCluster as it
 * then was (new reference).
 */
json_t *cl_wait_settled(struct cl_test *t, const char *name, int replicas, const char *ids);

/* ---- pods and claims ---- */

/* True when pod is Ready and not being deleted. */
bool cl_pod_ready(const json_t *pod);
/* The pods labelled as members of cluster name, being deleted or not: a new array. */
json_t *cl_member_pods(struct cl_test *t, const char *name);
/* Makes the running pod Fail (kwok's outcome stage reacts to the annotation). */
void cl_fail_pod(struct cl_test *t, const char *pod);
/* Deletes the pod as a user would (its default grace period). */
void cl_delete_pod(struct cl_test *t, const char *pod);
/* The claim's UID now (new string), or NULL when it is gone. */
char *cl_claim_uid(struct cl_test *t, const char *claim);
/* Asserts the claim is there, is the object uid and is not being deleted. */
void cl_expect_claim_kept(struct cl_test *t, const char *claim, const char *uid);
/* Waits until the claim is gone (not merely being deleted); fails the test with the log after CL_WAIT_MS. */
void cl_wait_claim_gone(struct cl_test *t, const char *claim);

/*
 * Checks every pod of cluster stc (as GET returned it) against what users
 * rely on: named by a member identity, hostname = its name, subdomain =
 * serviceName, the controller owner reference to stc, the selector's labels,
 * the cluster and member labels, controller-revision-hash = the revision
 * named in status, and each volumeClaimTemplate mounted from claim
 * <template>-<pod name>.
 */
void cl_expect_member_pods(struct cl_test *t, const json_t *stc);

/* ---- what the recorders saw ---- */

/* Pod name -> how many pods of that name (distinct UIDs) records show, for cluster name: a new object. */
json_t *cl_names_seen(const json_t *records, const char *name);
/* The rv and arrival time (it_now_ms) of the first record showing object uid Ready; false when never. */
bool cl_first_ready(const json_t *records, const char *uid, long long *rv, double *at_ms);
/* The Events about object with reason: asserts there is at least one and each has type. */
void cl_expect_events(struct cl_test *t, const char *reason, const char *object, const char *type);

/* ---- nodes the test owns ---- */

/*
 * Creates a kwok Node <t->ns>-<suffix> labelled and tainted (NoSchedule)
 * CL_POOL=pool, and waits until it is Ready with no other taint. Returns its
 * name (owned by t: deleted and freed at teardown).
 */
const char *cl_node_create(struct cl_test *t, const char *suffix, const char *pool);
/*
 * Loses node: cordoned, no longer kwok's (it reacts to the node no more),
 * and its Ready condition False from now on (status subresource).
 */
void cl_node_lose(struct cl_test *t, const char *node);

#endif
