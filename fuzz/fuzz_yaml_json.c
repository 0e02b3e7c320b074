/*
 * The YAML (and JSON) reader (util/yaml_json.c) on any text, under small
 * limits so that the fuzzer reaches them. What it accepts stays within
 * them once aliases are expanded (the promise that keeps a small
 * annotation from becoming a large tree), serialises, and reads back as
 * the same value (JSON is YAML).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "util/yaml_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct doc_limits fuzz_limits = {
	.max_bytes = 8192,
	.max_depth = 16,
	.max_aliases = 16,
	.max_nodes = 200,
	.max_expanded_bytes = 2000,
	.max_parsed_bytes = 16384, /* small: the parse budget's refusals get fuzzed too */
	.budget = "the fuzz budget",
};

struct expansion {
	size_t nodes; /* keys and scalar values */
	size_t bytes; /* of keys and string values */
};

/* Walks v with every shared (aliased) subtree counted each time it appears. */
static void measure(const json_t *v, struct expansion *e)
{
	const char *key;
	json_t *item;
	size_t i;
	if (e->nodes > fuzz_limits.max_nodes || e->bytes > fuzz_limits.max_expanded_bytes)
		return; /* already past: stop before a bomb takes the time */
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item) {
			e->nodes++;
			e->bytes += strlen(key);
			measure(item, e);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			measure(item, e);
	} else {
		e->nodes++;
		if (json_is_string(v))
			e->bytes += json_string_length(v);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL;
	char *msg = NULL;
	int rc = yaml_to_json_limited((const char *)data, size, &fuzz_limits, &doc, &msg);
	if (rc < 0) {
		FUZZ_CHECK(rc == DOC_INVALID || rc == DOC_TOO_LARGE, "a refusal is invalid or too large");
		FUZZ_CHECK(doc == NULL && msg != NULL, "a refusal has no tree and says why");
		free(msg);
		return 0;
	}
	FUZZ_CHECK(doc != NULL && msg == NULL, "success gives a tree and no message");

	struct expansion e = {0, 0};
	measure(doc, &e);
	FUZZ_CHECK(e.nodes <= fuzz_limits.max_nodes, "the expanded tree has at most max_nodes keys and values");
	FUZZ_CHECK(e.bytes <= fuzz_limits.max_expanded_bytes, "the expanded tree has at most max_expanded_bytes");

	char *text = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
	FUZZ_CHECK(text != NULL, "an accepted tree serialises");
	/*
	 * YAML reads U+2028 and U+2029 (which a "\L" or "\P" escape makes, and
	 * which JSON writes raw) as line breaks and folds them: such text is not
	 * read back the same, by YAML's definition, not by a fault of ours.
	 */
	if (strstr(text, "\xe2\x80\xa8") || strstr(text, "\xe2\x80\xa9")) {
		free(text);
		json_decref(doc);
		return 0;
	}
	json_t *again = NULL;
	if (yaml_to_json(text, strlen(text), &again, &msg) < 0) {
		free(msg);
		FUZZ_CHECK(0, "the tree written as JSON reads back");
	}
	FUZZ_CHECK(json_equal(doc, again), "the tree written as JSON reads back the same");
	json_decref(again);
	free(text);
	json_decref(doc);
	return 0;
}
