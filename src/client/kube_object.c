#include "client/kube_object.h"

#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"
#include "util/yaml_json.h"

#define MAX_ORDINAL_DIGITS 9

const char *kube_obj_str(const json_t *obj, const char *path)
{
	const json_t *cur = obj;
	const char *p = path;
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		cur = json_object_getn(cur, p, n);
		p += n;
		if (*p == '.')
			p++;
	}
	return json_string_value(cur);
}

long long kube_obj_int(const json_t *obj, const char *a, const char *b, long long dflt)
{
	const json_t *v = json_object_get(obj, a);
	if (b)
		v = json_object_get(v, b);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const json_t *metadata(const json_t *obj)
{
	return json_object_get(obj, "metadata");
}

const json_t *kube_obj_labels(const json_t *obj)
{
	return json_object_get(metadata(obj), "labels");
}

const json_t *kube_obj_annotations(const json_t *obj)
{
	return json_object_get(metadata(obj), "annotations");
}

const char *kube_obj_label(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(kube_obj_labels(obj), key));
}

const char *kube_obj_annotation(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(kube_obj_annotations(obj), key));
}

json_t *kube_obj_annotation_json(const json_t *obj, const char *key)
{
	const char *text = kube_obj_annotation(obj, key);
	json_t *v = NULL;
	char *msg = NULL;
	if (text && json_load_limited(text, strlen(text), 0, &doc_limits_annotation, &v, &msg) < 0)
		free(msg);
	return v;
}

bool kube_obj_annotation_true(const json_t *obj, const char *key)
{
	const char *v = kube_obj_annotation(obj, key);
	return v && !strcmp(v, "true");
}

bool kube_obj_terminating(const json_t *obj)
{
	return kube_obj_str(obj, "metadata.deletionTimestamp") != NULL;
}

bool kube_obj_has_finalizer(const json_t *obj, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(metadata(obj), "finalizers"), i, v) {
		if (json_string_value(v) && !strcmp(json_string_value(v), name))
			return true;
	}
	return false;
}

/* uid NULL: any owner. */
static bool has_owner(const json_t *obj, const char *uid, bool controller_only)
{
	size_t i;
	const json_t *ref;
	json_array_foreach(json_object_get(metadata(obj), "ownerReferences"), i, ref) {
		const char *u = kube_obj_str(ref, "uid");
		if ((!uid || (u && !strcmp(u, uid))) && (!controller_only || json_is_true(json_object_get(ref, "controller"))))
			return true;
	}
	return false;
}

bool kube_obj_has_controller(const json_t *obj)
{
	return has_owner(obj, NULL, true);
}

bool kube_obj_owned_by(const json_t *obj, const char *uid)
{
	return uid && has_owner(obj, uid, false);
}

bool kube_obj_controlled_by(const json_t *obj, const char *uid)
{
	return uid && has_owner(obj, uid, true);
}

void kube_obj_each_owner(const json_t *obj, const char *kind, void (*fn)(void *ctx, const char *name), void *ctx)
{
	size_t i;
	const json_t *ref;
	json_array_foreach(json_object_get(metadata(obj), "ownerReferences"), i, ref) {
		const char *k = kube_obj_str(ref, "kind");
		const char *name = kube_obj_str(ref, "name");
		if (k && name && !strcmp(k, kind))
			fn(ctx, name);
	}
}

bool kube_obj_condition(const json_t *obj, const char *type, const char **message)
{
	size_t i;
	json_t *cond;
	json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, cond) {
		const char *t = json_string_value(json_object_get(cond, "type"));
		const char *s = json_string_value(json_object_get(cond, "status"));
		if (t && !strcmp(t, type) && s && !strcmp(s, "True")) {
			if (message)
				*message = json_string_value(json_object_get(cond, "message"));
			return true;
		}
	}
	return false;
}

bool kube_pod_ready(const json_t *pod)
{
	return pod && !kube_obj_terminating(pod) && kube_obj_condition(pod, "Ready", NULL);
}

char *kube_obj_key(const json_t *obj)
{
	const char *ns = kube_obj_str(obj, "metadata.namespace");
	const char *name = kube_obj_str(obj, "metadata.name");
	if (!name)
		name = "";
	return ns && *ns ? xasprintf("%s/%s", ns, name) : xstrdup(name);
}

const json_t *kube_list_find(const json_t *list, const char *ns, const char *name)
{
	size_t i;
	json_t *o;
	if (!name)
		return NULL;
	json_array_foreach(list, i, o) {
		const char *n = kube_obj_str(o, "metadata.name");
		const char *s = kube_obj_str(o, "metadata.namespace");
		if (n && !strcmp(n, name) && (!ns || (s && !strcmp(s, ns))))
			return o;
	}
	return NULL;
}

long long kube_name_number(const char *name, const char *prefix, int max_digits)
{
	size_t n = strlen(prefix);
	if (!name || strncmp(name, prefix, n))
		return -1;
	const char *d = name + n;
	size_t len = strspn(d, "0123456789");
	if (len == 0 || d[len] || len > (size_t)max_digits || len > 18 || (d[0] == '0' && len > 1))
		return -1;
	return strtoll(d, NULL, 10);
}

long long kube_name_ordinal(const char *name, const char *prefix)
{
	return kube_name_number(name, prefix, MAX_ORDINAL_DIGITS);
}

const json_t *kube_array_find(const json_t *arr, const char *path, const char *value)
{
	size_t i;
	const json_t *item;
	json_array_foreach(arr, i, item) {
		const char *v = kube_obj_str(item, path);
		if (v && !strcmp(v, value))
			return item;
	}
	return NULL;
}
