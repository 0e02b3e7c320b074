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
	struct store *sets, *clusters, *pvcs, *pods, *classes, *nodes, *namespaces;
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

/* Store indexes: the workloads with a policy of their own; the Namespaces and StorageClasses with one. */
#define AUTORESIZE_POLICY_INDEX "autoresize-policy"
#define AUTORESIZE_SOURCE_INDEX "autoresize-source-policy"

/* ---- the Namespaces' and StorageClasses' policies (autoresize_sources.c) ---- */

/* Index function: obj carries ANNOTATION_AUTORESIZE_POLICY (autoresize_rule.h). */
size_t autoresize_index_source(const json_t *obj, char ***values);
/* The objects of s (NULL: none) that carry a policy: a new array of copies. */
json_t *autoresize_sources(struct store *s);
/* StorageClass name (NULL or "": the default class) from the cache: new reference, NULL when none or not read. */
json_t *autoresize_class_of(struct autoresize_ctx *ac, const char *name);
/* The class a template's claims get (its storageClassName; none when ""): new reference or NULL. */
json_t *autoresize_template_class(struct autoresize_ctx *ac, const json_t *vct);
/* Namespace ns from the cache: new reference, NULL when not read (namespace scope) or not cached. */
json_t *autoresize_namespace_of(struct autoresize_ctx *ac, const char *ns);
/*
 * The workloads of s (NULL: none) a poll covers: those with a policy of
 * their own, and, when some Namespace or StorageClass has a policy, those
 * whose templates it covers (their subjects "<ns>/<name>/<template>" are
 * added to live, for autoresize_said_prune). A new array of copies.
 */
json_t *autoresize_targets(struct autoresize_ctx *ac, struct store *s, json_t *live);
/*
 * A policy of a Namespace or StorageClass that cannot be read: a Warning
 * AutoResizePolicyInvalid on that object, once per change (and a log
 * line); their subjects are added to live.
 */
void autoresize_check_sources(struct autoresize_ctx *ac, json_t *live);

/* Decides for every template with a policy of w (a StatefulSet, or a StatefulCluster), and acts. */
void autoresize_consider(struct autoresize_ctx *ac, struct poll *p, const json_t *w, bool cluster);

/*
 * Writes the usage p read of each claim in p->mounts onto the claim
 * (usage_published.h), where it moved enough or aged (autoresize_publish.c).
 */
void autoresize_publish_usage(struct autoresize_ctx *ac, const struct poll *p);

#endif
