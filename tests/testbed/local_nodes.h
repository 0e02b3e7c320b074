/*
 * The real nodes whose volumes testbed-pvc-resizer provisions, and which of
 * them a claim's or a PV's volume is on. Each node has its own directory of
 * backing files and mount points (scripts/local-cluster-node.sh). A claim
 * that names a node (annotation volume.kubernetes.io/selected-node: the
 * scheduler's, for a WaitForFirstConsumer class) gets its volume there;
 * one that names none, on the first node (local-node-0: every test written
 * for one real node). Pure; test-bed code.
 */
#ifndef SOP_TESTBED_LOCAL_NODES_H
#define SOP_TESTBED_LOCAL_NODES_H

#include <stddef.h>

#include <jansson.h>

#define LOCAL_NODES_MAX 4
#define LOCAL_ANN_SELECTED_NODE "volume.kubernetes.io/selected-node"

struct local_node {
	const char *name; /* borrowed (argv) */
	const char *dir;  /* borrowed (argv) */
};

struct local_nodes {
	struct local_node node[LOCAL_NODES_MAX]; /* [0]: the default */
	size_t n;
};

/* Adds a node; -1 (nothing added) when LOCAL_NODES_MAX are there already. */
int local_nodes_add(struct local_nodes *l, const char *name, const char *dir) __attribute__((warn_unused_result));

/* The node called name, or NULL. */
const struct local_node *local_nodes_find(const struct local_nodes *l, const char *name);

/*
 * Where the volume of claim pvc (borrowed) goes: the node it names, or the
 * first. NULL when it names a node that is not one of these (*why, malloc'd,
 * says which and what to do) or there is none.
 */
const struct local_node *local_nodes_for_claim(const struct local_nodes *l, const json_t *pvc, char **why);

/* The node a PV (borrowed) of ours is bound to (its nodeAffinity's hostname), or NULL. */
const struct local_node *local_nodes_of_volume(const struct local_nodes *l, const json_t *pv);

#endif
