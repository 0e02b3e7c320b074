/*
 * The usage sources' parsers (controllers/autoresize/usage_summary.c and
 * usage_prometheus.c) on any text; the first byte picks the parser (even,
 * "0": the kubelet's stats summary; odd, "1": Prometheus' answer). A
 * refusal says why and adds nothing; an answer taken adds only
 * "namespace/claim" keys whose usage reads back with no negative figure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/autoresize/usage_source.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	bool prometheus = data[0] & 1;
	size--;
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);
	if (size)
		memcpy(text, data + 1, size);
	json_t *table = json_object();
	char *why = NULL;
	int rc = prometheus ? usage_parse_prometheus(text, size, table, &why)
			    : usage_parse_summary(text, size, table, &why);
	if (rc < 0) {
		FUZZ_CHECK(rc == -1 && why != NULL, "a refusal says why");
		FUZZ_CHECK(json_object_size(table) == 0, "a refusal adds nothing");
	} else {
		FUZZ_CHECK(rc == 0 && why == NULL, "success leaves no message");
	}
	const char *key;
	json_t *value;
	json_object_foreach(table, key, value) {
		const char *slash = strchr(key, '/');
		FUZZ_CHECK(slash && slash != key && slash[1], "keys are namespace/claim");
		struct volume_usage u;
		FUZZ_CHECK(usage_from_json(value, &u), "a usage reads back");
		FUZZ_CHECK(u.capacity_bytes >= 0 && u.used_bytes >= 0 && u.available_bytes >= 0 && u.inodes >= 0 &&
				   u.inodes_used >= 0,
			   "no negative figure");
	}
	free(why);
	json_decref(table);
	free(text);
	return 0;
}
