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

#include "client/kube_client.h"
#include "observability.h"
#include "runtime/controller.h"
#include "runtime/events.h"
#include "runtime/manager.h"

struct state_seal;

struct cluster_deps {
	struct kube_client *client;    /* borrowed */
	struct manager *manager;       /* borrowed: the caches come from it */
	struct event_recorder *events; /* borrowed */
	struct observability *obs;     /* borrowed; may be NULL */
	const struct state_seal *seal; /* borrowed: seals the state written, checks the state read */
	bool can_read_nodes;           /* false in namespace scope: node loss is then not detected */
	int workers;
};

/* Registers the caches it reads and returns the controller (add it to the manager). */
struct controller *cluster_controller_new(const struct cluster_deps *deps);

#endif
