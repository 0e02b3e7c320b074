#include "client/object_peek.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/list_scan.h"
#include "util/yaml_json.h"

/* One short string: 4 KiB of text and the parse's headroom (json_budget.h) bound what it takes. */
static const struct doc_limits field_limits = {
	.max_bytes = 4096,
	.max_depth = 1,
	.max_nodes = 1,
	.max_expanded_bytes = 4096,
	.max_parsed_bytes = 256u << 10,
	.budget = "the budget for an object's name",
};

/* Copies the string member key of the object at text into out (size n); "" when it cannot. */
static void string_member(const char *text, size_t len, const char *key, char *out, size_t n)
{
	out[0] = '\0';
	size_t vlen = 0;
	const char *v = json_member_span(text, len, key, &vlen);
	json_t *s = NULL;
	char *msg = NULL;
	if (!v || json_load_limited(v, vlen, JSON_DECODE_ANY, &field_limits, &s, &msg) < 0) {
		free(msg);
		return;
	}
	const char *str = json_string_value(s);
	if (str && strlen(str) < n)
		snprintf(out, n, "%s", str);
	json_decref(s);
}

bool kube_object_id_peek(const char *text, size_t len, struct kube_object_id *id)
{
	memset(id, 0, sizeof(*id));
	size_t mlen = 0;
	const char *meta = json_member_span(text, len, "metadata", &mlen);
	if (!meta)
		return false;
	string_member(meta, mlen, "namespace", id->namespace, sizeof(id->namespace));
	string_member(meta, mlen, "name", id->name, sizeof(id->name));
	string_member(meta, mlen, "uid", id->uid, sizeof(id->uid));
	string_member(meta, mlen, "resourceVersion", id->resource_version, sizeof(id->resource_version));
	return id->name[0] != '\0';
}

bool kube_watch_event_peek(const char *text, size_t len, char *type, size_t n, struct kube_object_id *id)
{
	string_member(text, len, "type", type, n);
	size_t olen = 0;
	const char *obj = json_member_span(text, len, "object", &olen);
	bool named = obj ? kube_object_id_peek(obj, olen, id) : (memset(id, 0, sizeof(*id)), false);
	return type[0] && named;
}
