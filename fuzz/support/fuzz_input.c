#include "fuzz_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

void fuzz_check(int ok, const char *cond, const char *msg)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz invariant broken: %s (%s)\n", msg, cond);
	abort();
}

char *fuzz_string(const uint8_t *data, size_t size)
{
	return xstrndup((const char *)data, size);
}

json_t *fuzz_json_object(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (doc && !json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

json_t *fuzz_statefulset_annotated(const uint8_t *data, size_t size)
{
	json_t *sts = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{}},"
				" s:{s:i, s:s, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}},"
				" s:[{s:{s:s}, s:{s:[s], s:{s:{s:s}}}}]}}",
				"apiVersion", "apps/v1", "kind", "StatefulSet",
				"metadata", "name", "db", "namespace", "ns", "uid", "uid-db", "annotations",
				"spec", "replicas", 3, "serviceName", "db", "selector", "matchLabels", "app", "db",
				"template", "metadata", "labels", "app", "db", "spec", "containers", "name", "db",
				"image", "postgres:16", "volumeClaimTemplates", "metadata", "name", "data", "spec",
				"accessModes", "ReadWriteOnce", "resources", "requests", "storage", "1Gi");
	FUZZ_CHECK(sts != NULL, "the fixed StatefulSet builds");
	const uint8_t *nl = memchr(data, '\n', size);
	if (!nl)
		return sts;
	char *key = fuzz_string(data, (size_t)(nl - data));
	char *value = fuzz_string(nl + 1, size - (size_t)(nl - data) - 1);
	json_t *ann = json_object_get(json_object_get(sts, "metadata"), "annotations");
	/* Not UTF-8: the API server never stores such a key or value. */
	json_object_set_new(ann, key, json_string(value));
	free(key);
	free(value);
	return sts;
}
