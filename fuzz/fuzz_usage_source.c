/*
 * The usage sources' parsers (controllers/autoresize/usage_summary.c and
 * usage_prometheus.c) on any text; the first byte picks the parser (even,
 * "0": the kubelet's stats summary; odd, "1": Prometheus' answer). A
 * refusal says why and adds nothing; an answer taken adds only
 * "namespace/claim" keys whose usage reads back with no negative figure,
 * and of a summary (node n1's) only claims that a pod on n1 mounts.
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
	/* db-0 runs on n1 (the node asked), db-1 on n2. */
	json_t *mounts = json_pack("{s:{s:{s:b}}, s:{s:{s:b}}}", "shop/data-db-0", "n1", "db-0", 1, "shop/data-db-1",
				   "n2", "db-1", 1);
	char *why = NULL;
	int rc = prometheus ? usage_parse_prometheus(text, size, table, &why)
			    : usage_parse_summary(text, size, "n1", mounts, table, &why);
	if (rc < 0) {
		FUZZ_CHECK(rc == -1 && why != NULL, "a refusal says why");
		FUZZ_CHECK(json_object_size(table) == 0, "a refusal adds nothing");
	} else {
		FUZZ_CHECK((prometheus ? rc == 0 : rc >= 0) && why == NULL, "success leaves no message");
	}
	const char *key;
	json_t *value;
	json_object_foreach(table, key, value) {
		const char *slash = strchr(key, '/');
		FUZZ_CHECK(slash && slash != key && slash[1], "keys are namespace/claim");
		FUZZ_CHECK(prometheus || !strcmp(key, "shop/data-db-0"), "a node reports only the claims it mounts");
		struct volume_usage u;
		FUZZ_CHECK(usage_from_json(value, &u), "a usage reads back");
		FUZZ_CHECK(u.capacity_bytes >= 0 && u.used_bytes >= 0 && u.available_bytes >= 0 && u.inodes >= 0 &&
				   u.inodes_used >= 0,
			   "no negative figure");
	}
	free(why);
	json_decref(mounts);
	json_decref(table);
	free(text);
	return 0;
}
