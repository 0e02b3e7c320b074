/*
 * Label selectors (client/label_selector.c) on a fuzzed
 * {"selector": ..., "labels": ...}. Matching never crashes on any shape;
 * a NULL selector matches nothing, an empty one everything, and a valid
 * selector of matchLabels alone matches its own labels. The
 * StatefulCluster's status.selector string is built from the same input.
 */
#include <stdint.h>
#include <stdlib.h>

#include "client/label_selector.h"
#include "controllers/cluster/cluster_plan.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = fuzz_json_object(data, size);
	if (!doc)
		return 0;
	const json_t *selector = json_object_get(doc, "selector");
	const json_t *labels = json_object_get(doc, "labels");
	bool valid = label_selector_valid(selector);
	bool matches = label_selector_matches(selector, labels);
	FUZZ_CHECK(!label_selector_matches(NULL, labels), "a NULL selector matches nothing");
	FUZZ_CHECK(!matches || selector != NULL, "only a selector matches");

	json_t *empty = json_object();
	FUZZ_CHECK(label_selector_matches(empty, labels), "an empty selector matches everything");
	json_decref(empty);

	const json_t *own = json_object_get(selector, "matchLabels");
	if (valid && json_is_object(own) && json_object_size(selector) == 1)
		FUZZ_CHECK(label_selector_matches(selector, own), "matchLabels match the labels they name");
	free(cluster_selector_string(selector));
	json_decref(doc);
	return 0;
}
