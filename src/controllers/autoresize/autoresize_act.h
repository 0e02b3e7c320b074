/*
 * The autoresize controller's inside (autoresize_controller.h): what one
 * poll knows, and the decision and the write for one workload.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_ACT_H
#define SOP_CONTROLLERS_AUTORESIZE_ACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controllers/autoresize/autoresize_controller.h"
#include "controllers/autoresize/autoresize_said.h"
#include "runtime/metrics.h"
#include "runtime/store.h"

struct autoresize_ctx {
	struct autoresize_deps deps;
	struct usage_source *source;
	/* Caches (borrowed); clusters NULL without the StatefulCluster API, classes and nodes in namespace scope. */
	struct store *sets, *clusters, *pvcs, *pods, *classes, *nodes;
	/* What was said last: a Warning once per change, not per poll (bounded, autoresize_said.h). */
	struct autoresize_said said;
	struct metric_family *usage_ratio, *autoresizes, *reads, *requests; /* NULL without metrics */
};

struct poll {
	json_t *table;      /* "ns/claim" -> usage object (usage_source.h) */
	json_t *errors;     /* the source's failures, strings */
	json_t *node_names; /* set of the nodes asked */
	json_t *mounts;     /* who may report which claim, from the pods of the workloads (usage_source.h) */
	struct usage_node *nodes;
	int nnodes, cap_nodes;
	int64_t now_ms;
};

/* Decides for every template with a policy of w (a StatefulSet, or a StatefulCluster), and acts. */
void autoresize_consider(struct autoresize_ctx *ac, struct poll *p, const json_t *w, bool cluster);

/*
 * Writes the usage p read of each claim in p->mounts onto the claim
 * (usage_published.h), where it moved enough or aged (autoresize_publish.c).
 */
void autoresize_publish_usage(struct autoresize_ctx *ac, const struct poll *p);

#endif
