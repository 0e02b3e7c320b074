/*
 * Helpers for the tests on the test bed's real node (local-node-0: a kubelet,
 * containerd and real file systems; scripts/local-cluster-node.sh). A test's
 * workload runs tests/realnode/workload.sh in localhost/testbed-tools:dev on
 * a volume of a real StorageClass and reports into a host directory that the
 * pods mount (the test and the node are one machine): manifests of its
 * volume at every start and stop, and df. Failures abort the test through
 * cmocka's fail_msg. Test-only; call from the test's thread.
 *
 * The workloads select RN_NODE_LABEL=real, which only local-node-0 carries:
 * the bed's second real node, local-node-1, is labelled real-1 (same taint),
 * so these tests never land there; its volumes come from class local-wffc
 * or a claim annotated volume.kubernetes.io/selected-node: local-node-1.
 */
#ifndef SOP_RN_REALNODE_H
#define SOP_RN_REALNODE_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/kube_client.h"
#include "daemon.h"

#define RN_NODE "local-node-0"
#define RN_NODE_LABEL "stateful-operator.io/testbed-node"
#define RN_TOOLS_IMAGE "localhost/testbed-tools:dev"
#define RN_OPERATOR_IMAGE "stateful-operator:dev"
#define RN_WAIT_MS 240000L

struct rn_test {
	struct kube_client *admin;
	char *ns;
	char report[64]; /* host directory the workload pods write their reports to */
	struct daemon d; /* the operator; d.pid 0 when none runs */
};

/* cmocka setup/teardown: namespace, report directory, the workload ConfigMap; all removed after. */
int rn_setup(void **state);
int rn_teardown(void **state);

/*
 * The API server's port (new string): a pod on the real node reaches it at
 * RN_API_HOST on that port (there is no kube-proxy: a deployed operator
 * sets KUBERNETES_SERVICE_HOST and _PORT to these).
 */
#define RN_API_HOST "10.250.0.1"
char *rn_api_port(void);

/* Where deploy/ and the chart install the operator, and the pod that holds its Lease (new string), or NULL. */
#define RN_OPERATOR_NS "stateful-operator-system"
char *rn_deployed_leader(struct rn_test *t);

/* Starts the operator (this build's binary) with --copy-image RN_OPERATOR_IMAGE. */
void rn_start_operator(struct rn_test *t);

/*
 * A StatefulSet of the workload on the real node: replicas, Parallel pod
 * management, one claim template "data" of size in class cls, data_mb of
 * random data written on first start. New object.
 */
json_t *rn_workload_set(const struct rn_test *t, const char *name, int replicas, const char *cls, const char *size,
			int data_mb);

/* kubectl annotate -n <test ns> <object> <annotations> (e.g. "statefulset/db k=v"); fails the test on error. */
void rn_annotate(struct rn_test *t, const char *object, const char *annotations);

/* The phase in the set's resize state (new string), or NULL when it has none. */
char *rn_resize_phase(struct rn_test *t, const char *set);

/* Creates the workload set sts (borrowed) and waits for its replicas (rn_wait_workload). */
void rn_create_workload(struct rn_test *t, json_t *sts, int replicas);

/* The PV the claim is bound to (new string), or NULL. */
char *rn_claim_volume(struct rn_test *t, const char *claim);

/*
 * The workload as a StatefulCluster (4 MB of data per member): claims
 * deleted with it and on scale-down, whenReplaced as given; a member not
 * Ready for 5 s is replaced, after a start-up grace as long as
 * rn_wait_workload waits (shorten it once the members are up). New object.
 */
json_t *rn_workload_cluster(const struct rn_test *t, const char *name, int replicas, const char *cls,
			    const char *size, const char *when_replaced);

/* The test bed still has the backing file of PV pv (its real volume). */
bool rn_backing_file_exists(const char *pv);

/* Lower-case hex SHA-256 of text (what sha256sum prints). */
void rn_sha256_hex(const char *text, char out[65]);

/* Prints pods, claims, volumes, Events and the operator's log tail to stderr (before a failure). */
void rn_dump_state(const struct rn_test *t);

/* Waits until every replica of set runs, is Ready and has written its start report. */
void rn_wait_workload(struct rn_test *t, const char *set, int replicas);

/* The UID of pod name (new string), or NULL when there is none. */
char *rn_pod_uid(struct rn_test *t, const char *name);

/* The report "<uid>.<what>" (start, stop, df) as a new string, or NULL when not written. */
char *rn_report(const struct rn_test *t, const char *uid, const char *what);
/* Waits for it; fails the test after timeout_ms. */
char *rn_wait_report(const struct rn_test *t, const char *uid, const char *what, long timeout_ms);

/* The size in bytes of the file system in a df report. */
int64_t rn_df_bytes(const char *df);

/* Fails the test with the first differing lines when the two manifests differ. */
void rn_assert_same_tree(const char *before, const char *after, const char *what);

/*
 * A workload set of replicas (16 MB each on 64Mi of local-fixed, a class
 * that cannot expand) asked to grow to 128Mi: a resize by copy. old_uid[k]
 * (new strings) the pods' UIDs before it.
 */
void rn_start_copy_resize(struct rn_test *t, const char *set, int replicas, char **old_uid);

/*
 * After a resize by copy of set (replicas pods, set-<k>): each replica's
 * tree when its new pod started equals the one its old pod (old_uid[k])
 * left, and df shows more than min_bytes. what names the occasion in a
 * failure. Frees old_uid[k].
 */
void rn_assert_copied_intact(struct rn_test *t, const char *set, int replicas, char **old_uid, int64_t min_bytes,
			     const char *what);

/* The resize of set is over: no resize state on it and no saved copy. */
bool rn_resize_over(struct rn_test *t, const char *set);
/*
 * Waits for the operator to take the resize up (resize-status set, or its
 * ResizeStarted Event), then for it to be over; stops sampler (may be
 * NULL) either way, before failing the test.
 */
struct rn_sampler;
void rn_wait_resize(struct rn_test *t, const char *set, long timeout_ms, struct rn_sampler *sampler);

/* Samples the set's replicas every 100 ms: replica-seconds not Ready, most down at once. */
struct rn_sampler {
	const char *ns, *set;
	int replicas;
	atomic_bool stop;
	double not_ready_s; /* integral of (replicas not Ready) over time */
	int max_down;
	pthread_t thread;
};
void rn_sampler_start(struct rn_sampler *s, const char *ns, const char *set, int replicas);
void rn_sampler_stop(struct rn_sampler *s);

#endif
