#include "repeat_rule.h"

#include <jansson.h>
#include <string.h>

#define MAX_SEGMENTS 8 /* /apis/<group>/<version>/namespaces/<ns>/<resource>/<name>/<subresource> */

/* What a write's path says: the resource, and whether it names one object (or its subresource). */
struct api_path {
	const char *resource; /* points into the path */
	size_t resource_len;
	bool named;
};

static bool segment_is(const char *seg, size_t len, const char *word)
{
	return len == strlen(word) && !strncmp(seg, word, len);
}

/*
 * /api/v1/[namespaces/<ns>/]<resource>[/<name>[/<sub>]] or the same under
 * /apis/<group>/<version>. False for any other path.
 */
static bool parse_api_path(const char *path, struct api_path *out)
{
	const char *seg[MAX_SEGMENTS];
	size_t len[MAX_SEGMENTS];
	int n = 0;
	const char *s = path;
	while (*s == '/' && n < MAX_SEGMENTS) {
		s++;
		len[n] = strcspn(s, "/?");
		seg[n++] = s;
		s += len[n - 1];
	}
	if (*s == '/' || n == 0)
		return false;
	int base = segment_is(seg[0], len[0], "api") ? 2 : segment_is(seg[0], len[0], "apis") ? 3 : -1;
	if (base < 0 || n <= base)
		return false;
	/* namespaces/<ns>/<resource>: a namespaced resource; namespaces[/<name>]: the namespaces themselves. */
	int r = n - base >= 3 && segment_is(seg[base], len[base], "namespaces") ? base + 2 : base;
	out->resource = seg[r];
	out->resource_len = len[r];
	out->named = n > r + 1;
	return true;
}

/* path's query has key=<a value>. */
static bool query_has(const char *path, const char *key)
{
	size_t klen = strlen(key);
	for (const char *p = strchr(path, '?'); p; p = strchr(p + 1, '&')) {
		const char *value = p + 1 + klen;
		if (!strncmp(p + 1, key, klen) && value[0] == '=' && value[1] && value[1] != '&')
			return true;
	}
	return false;
}

static bool str_set(const json_t *v)
{
	return json_string_length(v) > 0;
}

static bool metadata_guarded(const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	return str_set(json_object_get(meta, "resourceVersion")) || str_set(json_object_get(meta, "uid"));
}

static bool json_patch_guarded(const json_t *ops)
{
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		const char *name = json_string_value(json_object_get(op, "op"));
		const char *path = json_string_value(json_object_get(op, "path"));
		if (name && path && !strcmp(name, "test") &&
		    (!strcmp(path, "/metadata/resourceVersion") || !strcmp(path, "/metadata/uid")))
			return true;
	}
	return false;
}

bool repeat_is_harmless(const char *method, const char *path, const char *body)
{
	struct api_path ap;
	bool parsed = parse_api_path(path, &ap);
	if (query_has(path, "dryRun") || (parsed && segment_is(ap.resource, ap.resource_len, "events")))
		return true;
	bool del = !strcmp(method, "DELETE");
	if (del && (query_has(path, "uid") || query_has(path, "resourceVersion")))
		return true;
	json_t *doc = body && *body ? json_loads(body, 0, NULL) : NULL;
	bool harmless = false;
	if (del) {
		const json_t *pre = json_object_get(doc, "preconditions");
		harmless = str_set(json_object_get(pre, "uid")) || str_set(json_object_get(pre, "resourceVersion"));
	} else if (!strcmp(method, "PATCH") && json_is_array(doc)) {
		harmless = json_patch_guarded(doc);
	} else if (!strcmp(method, "PATCH") || !strcmp(method, "PUT")) {
		harmless = metadata_guarded(doc);
	} else if (!strcmp(method, "POST")) {
		harmless = parsed && !ap.named && str_set(json_object_get(json_object_get(doc, "metadata"), "name"));
	}
	json_decref(doc);
	return harmless;
}
