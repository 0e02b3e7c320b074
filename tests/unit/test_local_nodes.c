/*
 * Which real node of the test bed a local volume goes to and is found on
 * (tests/testbed/local_nodes.c): the claim's selected node when it is a
 * real one, else the first (local-node-0, where every test written for one
 * real node expects its volumes); a claim naming another node is refused
 * with a message that says which nodes there are; a PV is found on the node
 * its nodeAffinity names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "local_nodes.h"

static struct local_nodes two(void)
{
	struct local_nodes l = {0};
	if (local_nodes_add(&l, "local-node-0", "/s/node/volumes") < 0 ||
	    local_nodes_add(&l, "local-node-1", "/s/node-1/volumes") < 0)
		fail_msg("two nodes refused");
	return l;
}

/* A claim; selected (may be NULL) its volume.kubernetes.io/selected-node. */
static json_t *claim(const char *selected)
{
	json_t *pvc = json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata", "namespace", "db", "name", "data-db-0",
				"annotations", "volume.kubernetes.io/storage-provisioner",
				"testbed.stateful-operator.io/local");
	if (selected)
		json_object_set_new(json_object_get(json_object_get(pvc, "metadata"), "annotations"),
				    LOCAL_ANN_SELECTED_NODE, json_string(selected));
	return pvc;
}

static void test_claim_without_a_node_goes_to_the_first(void **state)
{
	(void)state;
	struct local_nodes l = two();
	json_t *pvc = claim(NULL);
	char *why = NULL;
	const struct local_node *n = local_nodes_for_claim(&l, pvc, &why);
	assert_non_null(n);
	assert_string_equal(n->name, "local-node-0");
	assert_string_equal(n->dir, "/s/node/volumes");
	assert_null(why);
	json_decref(pvc);
}

static void test_claim_goes_to_its_selected_node(void **state)
{
	(void)state;
	struct local_nodes l = two();
	json_t *pvc = claim("local-node-1");
	char *why = NULL;
	const struct local_node *n = local_nodes_for_claim(&l, pvc, &why);
	assert_non_null(n);
	assert_string_equal(n->name, "local-node-1");
	assert_string_equal(n->dir, "/s/node-1/volumes");
	assert_null(why);
	json_decref(pvc);
}

static void test_claim_on_another_node_is_refused_with_the_nodes_named(void **state)
{
	(void)state;
	struct local_nodes l = two();
	json_t *pvc = claim("kwok-node-0");
	char *why = NULL;
	assert_null(local_nodes_for_claim(&l, pvc, &why));
	assert_non_null(why);
	assert_string_equal(why, "volume.kubernetes.io/selected-node names node kwok-node-0, which has no real "
				 "volumes (the real nodes: local-node-0, local-node-1); schedule the claim's pod to a "
				 "real node");
	free(why);
	json_decref(pvc);
}

static void test_no_nodes_serve_nothing(void **state)
{
	(void)state;
	struct local_nodes l = {0};
	json_t *pvc = claim(NULL);
	char *why = NULL;
	assert_null(local_nodes_for_claim(&l, pvc, &why));
	assert_non_null(why);
	free(why);
	json_decref(pvc);
}

static void test_at_most_the_maximum(void **state)
{
	(void)state;
	struct local_nodes l = {0};
	for (int i = 0; i < LOCAL_NODES_MAX; i++)
		assert_int_equal(local_nodes_add(&l, "n", "d"), 0);
	assert_int_equal(local_nodes_add(&l, "n", "d"), -1);
	assert_int_equal(l.n, LOCAL_NODES_MAX);
}

/* A PV as the provisioner makes it, bound to node. */
static json_t *volume(const char *node)
{
	return json_pack("{s:{s:s}, s:{s:{s:s}, s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}}", "metadata", "name", "pvc-1",
			 "spec", "local", "path", "/x", "nodeAffinity", "required", "nodeSelectorTerms",
			 "matchExpressions", "key", "kubernetes.io/hostname", "operator", "In", "values", node);
}

static void test_volume_is_found_on_its_node(void **state)
{
	(void)state;
	struct local_nodes l = two();
	json_t *pv1 = volume("local-node-1"), *pv0 = volume("local-node-0"), *other = volume("kwok-node-0");
	json_t *bare = json_pack("{s:{s:s}}", "metadata", "name", "pv-x");
	const struct local_node *n = local_nodes_of_volume(&l, pv1);
	assert_non_null(n);
	assert_string_equal(n->dir, "/s/node-1/volumes");
	n = local_nodes_of_volume(&l, pv0);
	assert_non_null(n);
	assert_string_equal(n->dir, "/s/node/volumes");
	assert_null(local_nodes_of_volume(&l, other));
	assert_null(local_nodes_of_volume(&l, bare));
	json_decref(pv1);
	json_decref(pv0);
	json_decref(other);
	json_decref(bare);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_without_a_node_goes_to_the_first),
		cmocka_unit_test(test_claim_goes_to_its_selected_node),
		cmocka_unit_test(test_claim_on_another_node_is_refused_with_the_nodes_named),
		cmocka_unit_test(test_no_nodes_serve_nothing),
		cmocka_unit_test(test_at_most_the_maximum),
		cmocka_unit_test(test_volume_is_found_on_its_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
