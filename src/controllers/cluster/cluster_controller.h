/*
 * The StatefulCluster controller (SPEC section "cluster"): reconciles each
 * StatefulCluster one step at a time as cluster_plan.c decides. It keeps
 * two things in memory only, both safe to lose in a crash: the pods it
 * deleted whose deletion its cache may not show yet (so a rolling update
 * never counts a going pod as available), and the last creation the API
 * server refused (the ReplicaFailure condition).
 */
#ifndef SOP_CLUSTER_CONTROLLER_H
#define SOP_CLUSTER_CONTROLLER_H

#include <stdbool.h>

#include "controllers/controller_deps.h"
#include "runtime/controller.h"
#include "runtime/store.h"

struct cluster_deps {
	struct controller_deps base;
	bool can_read_nodes; /* false in namespace scope: node loss is then not detected */
};

/* Registers the caches it reads and returns the controller (add it to the manager). */
struct controller *cluster_controller_new(const struct cluster_deps *deps);

/* The caches the controller reads (borrowed); nodes is NULL in namespace scope. */
struct cluster_caches {
	struct store *clusters, *pods, *pvcs, *revisions, *nodes;
};

/* Adds the indexes cluster_read needs; before the caches start. */
void cluster_caches_index(const struct cluster_caches *c);

/* What one reconcile reads; each a new reference or NULL. */
struct cluster_reads {
	json_t *cluster, *pods, *pvcs, *revisions, *nodes;
};

/*
 * Reads what a reconcile of StatefulCluster key ("ns/name") decides on: the
 * cluster as cached, only the pods and claims that may be its members'
 * (set_index.h), its revisions (by owner UID) and the nodes its pods run
 * on; never the rest of its namespace.
 */
void cluster_read(const struct cluster_caches *c, const char *key, struct cluster_reads *out);
void cluster_reads_release(struct cluster_reads *r);

#endif
