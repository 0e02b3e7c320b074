/*
 * What the StatefulCluster planner (cluster_plan.c) and its status
 * (cluster_status.c) share: the spec as read, the identities as the cluster
 * shows them, the plan under way. Private to src/controllers/cluster.
 */
#ifndef SOP_CLUSTER_PLAN_INTERNAL_H
#define SOP_CLUSTER_PLAN_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/cluster/cluster_plan.h"

/* The spec as read, defaults filled in. */
struct spec {
	long long replicas;
	const json_t *selector;
	const json_t *tmpl;
	const json_t *vcts;
	long long min_ready_ms;
	bool on_delete;
	long long max_unavailable;
	long long partition;
	long long history;
	const char *when_deleted, *when_scaled, *when_replaced;
	long long unhealthy_ms, node_lost_ms, grace_ms;
};

/* An identity n: its pod, its claims, whether it is a member and how it fares. */
struct identity {
	long n;
	char *name;            /* <cluster>-<n> (new string) */
	const json_t *pod;     /* controlled by the cluster, or NULL */
	const json_t *foreign; /* a pod of that name the cluster does not control */
	const json_t **claims; /* its claims (borrowed from the inputs), at most one per claim template */
	int nclaims;
	bool member;
	const char *released; /* "Scaled" / "Replaced" or NULL */
	/* members with a pod: */
	bool going;   /* being deleted (or deleted by us, the cache may not show it yet) */
	bool ready, available;
	bool node_lost; /* its node is gone or NotReady (even if not yet for long) */
	char *failure;  /* why it counts as failed (new string), or NULL */
	const char *revision;
	int rank; /* among the members by identity, from 0 */
};

/* One planning pass. */
struct plan {
	const struct cluster_inputs *in;
	const json_t *c;
	const char *ns, *name, *uid;
	struct spec s;
	json_t *state; /* the state as it should be read (new reference) */
	bool state_rebuilt;
	struct identity *ids;
	size_t nids, cap;
	long long due_ms; /* the nearest time something falls due */
	long foreign_max; /* the highest identity in a claim name that is not ours, or -1 */
	char hash[11];
	char *update_rev;        /* <name>-<hash> */
	const json_t *update_obj; /* its ControllerRevision, or NULL */
	const char *current_rev;  /* status.currentRevision when that revision still exists, else update_rev */
};

/* True when the member's pod runs revision rev (its controller-revision-hash label). */
bool cluster_at_revision(const struct identity *id, const char *rev);

/* The status the cluster should show (new reference). */
json_t *cluster_desired_status(const struct plan *p);

/* True when have differs from want in anything want sets. */
bool cluster_status_differs(const json_t *have, const json_t *want);

#endif
