/* The real nodes of the test bed's volumes (see local_nodes.h). */
#include "local_nodes.h"

#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "util/xalloc.h"

int local_nodes_add(struct local_nodes *l, const char *name, const char *dir)
{
	if (l->n == LOCAL_NODES_MAX)
		return -1;
	l->node[l->n++] = (struct local_node){.name = name, .dir = dir};
	return 0;
}

const struct local_node *local_nodes_find(const struct local_nodes *l, const char *name)
{
	for (size_t i = 0; name && i < l->n; i++)
		if (!strcmp(l->node[i].name, name))
			return &l->node[i];
	return NULL;
}

const struct local_node *local_nodes_for_claim(const struct local_nodes *l, const json_t *pvc, char **why)
{
	*why = NULL;
	const char *selected = json_string_value(json_object_get(
		json_object_get(json_object_get(pvc, "metadata"), "annotations"), LOCAL_ANN_SELECTED_NODE));
	if (!selected) {
		if (!l->n)
			*why = xstrdup("no real node serves these volumes");
		return l->n ? &l->node[0] : NULL;
	}
	const struct local_node *node = local_nodes_find(l, selected);
	if (!node) {
		char *names = xstrdup("");
		for (size_t i = 0; i < l->n; i++) {
			char *more = xasprintf("%s%s%s", names, i ? ", " : "", l->node[i].name);
			free(names);
			names = more;
		}
		*why = xasprintf("%s names node %s, which has no real volumes (the real nodes: %s); "
				 "schedule the claim's pod to a real node", LOCAL_ANN_SELECTED_NODE, selected,
				 *names ? names : "none");
		free(names);
	}
	return node;
}

const struct local_node *local_nodes_of_volume(const struct local_nodes *l, const json_t *pv)
{
	const json_t *terms = json_object_get(
		json_object_get(json_object_get(json_object_get(pv, "spec"), "nodeAffinity"), "required"),
		"nodeSelectorTerms");
	size_t i, j;
	const json_t *term, *expr;
	json_array_foreach(terms, i, term) {
		json_array_foreach(json_object_get(term, "matchExpressions"), j, expr) {
			const char *key = kube_obj_str(expr, "key"), *op = kube_obj_str(expr, "operator");
			if (key && op && !strcmp(key, "kubernetes.io/hostname") && !strcmp(op, "In"))
				return local_nodes_find(l, json_string_value(json_array_get(
								   json_object_get(expr, "values"), 0)));
		}
	}
	return NULL;
}
