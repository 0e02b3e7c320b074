/*
 * The StatefulCluster controller's reading of a cluster (controllers/cluster,
 * cluster_plan: its spec, its state annotation, its members). The input is
 * a JSON object: the StatefulCluster itself, or {"cluster": ..., "pods":
 * [...], "pvcs": [...], "revisions": [...], "nodes": [...]} to give it
 * members. Every shape yields one well-formed next step: a create or patch
 * with a body, a delete or patch of a named object, a refusal that says
 * why. And the same step from the pods as the Pod cache keeps them
 * (pod_fields.h): the planner reads nothing the cache drops.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "controllers/cluster/cluster_plan.h"
#include "controllers/pod_fields.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The array doc names key, or an empty one (borrowed from doc or empty). */
static const json_t *array_or(const json_t *doc, const char *key, const json_t *empty)
{
	const json_t *v = json_object_get(doc, key);
	return json_is_array(v) ? v : empty;
}

static void check_action(const struct action *a)
{
	FUZZ_CHECK(a->verb >= ACTION_NOTHING && a->verb <= ACTION_OWN, "a known verb");
	FUZZ_CHECK(action_name(a) != NULL, "a step has a name");
	if (a->verb == ACTION_CREATE || a->verb == ACTION_PATCH)
		FUZZ_CHECK(a->body != NULL && a->resource != NULL, "a create or patch has a body and a resource");
	if (a->verb == ACTION_PATCH || a->verb == ACTION_DELETE)
		FUZZ_CHECK(a->name[0] != '\0', "a patch or delete names its object");
	if (a->verb == ACTION_REFUSE)
		FUZZ_CHECK(a->event_message != NULL, "a refusal says why");
}

static bool streq_or_null(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool json_same(const json_t *a, const json_t *b)
{
	return a == b || (a && b && json_equal(a, b));
}

/* a and b are the same step. */
static bool same_action(const struct action *a, const struct action *b)
{
	return a->verb == b->verb && streq_or_null(a->what, b->what) && a->resource == b->resource &&
	       !strcmp(a->name, b->name) && !strcmp(a->uid, b->uid) && json_same(a->body, b->body) &&
	       json_same(a->state, b->state) && streq_or_null(a->event_reason, b->event_reason) &&
	       streq_or_null(a->event_message, b->event_message) && streq_or_null(a->status, b->status) &&
	       a->requeue_ms == b->requeue_ms;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = fuzz_json_object(data, size);
	if (!doc)
		return 0;
	json_t *empty = json_array();
	const json_t *wrapped = json_object_get(doc, "cluster");
	struct cluster_inputs in = {
		.cluster = json_is_object(wrapped) ? wrapped : doc,
		.pods = array_or(doc, "pods", empty),
		.pvcs = array_or(doc, "pvcs", empty),
		.revisions = array_or(doc, "revisions", empty),
		.nodes = json_is_array(json_object_get(doc, "nodes")) ? json_object_get(doc, "nodes") : NULL,
		.now_ms = 1767225600000LL, /* 2026-01-01T00:00:00Z */
	};
	struct action a, b;
	cluster_plan(&in, &a);
	check_action(&a);
	/* The pods as the Pod cache keeps them. */
	json_t *trimmed = json_deep_copy(in.pods), *pod;
	size_t i;
	json_array_foreach(trimmed, i, pod)
		pod_fields_keep(pod);
	in.pods = trimmed;
	cluster_plan(&in, &b);
	FUZZ_CHECK(same_action(&a, &b), "the same step from the pods the cache keeps");
	action_release(&a);
	action_release(&b);
	json_decref(trimmed);
	json_decref(empty);
	json_decref(doc);
	return 0;
}
