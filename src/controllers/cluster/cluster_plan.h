/*
 * The StatefulCluster planner (SPEC section "cluster"): what the cluster
 * shows in, the one next step out. Pure: no I/O, the clock is an input.
 *
 * A StatefulCluster is a StatefulSet without ordinal sequencing whose
 * failed members are replaced by new identities:
 *
 *   identity  <name>-<n>, n from a counter that only grows; claims
 *             <template>-<name>-<n>; hostname = pod name, subdomain =
 *             spec.serviceName.
 *   state     annotation stateful-operator.io/cluster-state on the
 *             StatefulCluster (metadata survives a status wipe):
 *               {"next": n, "members": [ids...], "released": {"id": "Scaled"|"Replaced"},
 *                "currentRevision": the revision below the partition}
 *             Rebuilt from the pods and claims when missing: members = the
 *             identities of the pods it controls that are not being
 *             deleted (failed ones are then replaced as usual), next = one
 *             past the highest identity any pod or claim shows (or
 *             status.nextIdentity, if higher).
 *   members   start and stop in parallel. A member whose pod is missing
 *             gets it (again, same identity and claims); a failed member
 *             (pod Failed or evicted; node NotReady or gone for
 *             nodeLostAfterSeconds; not Ready for unhealthyAfterSeconds
 *             counted from when it stopped being Ready, never before
 *             startupGraceSeconds after it started) is replaced by a new
 *             identity with new claims; its old claims follow whenReplaced.
 *   scaling   up: new identities; down: members not Ready first, then the
 *             newest; their claims follow whenScaled. Members named in
 *             spec.removeMembers go whatever replicas says (their claims
 *             follow whenScaled); a name never handed out refuses the spec.
 *   requests  annotation stateful-operator.io/replace-members names members
 *             to rebuild: each is replaced as a failed one is, at most
 *             maxUnavailable members down; a value naming anything but
 *             members is refused and removed.
 *   updates   ControllerRevisions <name>-<hash> of spec.template, pruned to
 *             revisionHistoryLimit (revisions in use are kept). RollingUpdate:
 *             members ranked by identity; those ranked below partition keep
 *             the current revision, the others are deleted and re-created
 *             at the update revision, at most maxUnavailable members
 *             unavailable at any time. OnDelete: a pod is re-created at the
 *             update revision only after the user deleted it.
 *   deletion  claims carry an owner reference to the StatefulCluster when
 *             whenDeleted is Delete, so the garbage collector takes them.
 *
 * Every action is one API call; the reconciler performs it and asks again.
 *
 * Where: cluster_plan.c reads the spec, the members and the state and
 * picks the step in order; cluster_members.c replaces failed members,
 * scales, releases former members and starts members; cluster_requests.c
 * removes and replaces the members the user names; cluster_update.c
 * keeps the revisions and rolls the update; cluster_status.c computes the
 * status; cluster_state.c is what every step writes with (patches, the
 * state changed, who goes first); cluster_objects.c builds the pods,
 * claims and revisions (their names: claim_names.c). No file calls back
 * into one that calls it.
 */
#ifndef SOP_CLUSTER_PLAN_H
#define SOP_CLUSTER_PLAN_H

#include <jansson.h>

#include "controllers/contract.h"
#include "runtime/action.h"

#define CLUSTER_DEFAULT_NODE_LOST_S 300
#define CLUSTER_DEFAULT_UNHEALTHY_S 600
#define CLUSTER_DEFAULT_STARTUP_GRACE_S 600
#define CLUSTER_DEFAULT_HISTORY 10

struct cluster_inputs {
	const json_t *cluster;   /* the StatefulCluster, or NULL when it is gone */
	const json_t *pods;      /* array: the pods of its namespace */
	const json_t *pvcs;      /* array: the claims of its namespace */
	const json_t *revisions; /* array: the ControllerRevisions of its namespace */
	const json_t *nodes;     /* array of Nodes, or NULL when they cannot be read (namespace scope) */
	long long now_ms;        /* wall clock, milliseconds since the epoch */
	const char *create_error; /* the last pod/claim creation the API server refused, or NULL (ReplicaFailure) */
	/*
	 * UIDs of pods the controller deleted whose deletion its cache may not
	 * show yet (array of strings, or NULL): counted as going, so a rolling
	 * update never takes down more than maxUnavailable on a stale cache.
	 */
	const json_t *deleted_uids;
};

/*
 * Decides the one next step for in (borrowed) into a, which it
 * action_init's first; what a then holds is the caller's (action_release).
 * Each step keeps the name logs and SOP_TEST_CRASH_AFTER know (action_name:
 * "ReplaceMember", "CreatePod"...). SetState and UpdateStatus are merge
 * patches of the StatefulCluster, with its resourceVersion as precondition:
 * of the state annotation (a->state: the state written, which the
 * controller seals), and of the status subresource. A 404 or 409 answer to
 * any step means the cluster moved on (ACTION_STALE_*).
 */
void cluster_plan(const struct cluster_inputs *in, struct action *a);

/* The label selector as a string for status.selector ("a=b,c in (d,e)"); new string, NULL when malformed. */
char *cluster_selector_string(const json_t *selector);

#endif
