#include "webhook/template_fields.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/quantity.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

const char *template_name(const json_t *t)
{
	return kube_obj_str(t, "metadata.name");
}

const char *template_size(const json_t *t)
{
	return kube_obj_str(t, "spec.resources.requests.storage");
}

const json_t *template_find(const json_t *list, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(list, i, t) {
		if (same_str(template_name(t), name))
			return t;
	}
	return NULL;
}

/* ---- comparing values ---- */

static bool is_nothing(const json_t *v)
{
	return !v || json_is_null(v);
}

bool template_same_map(const json_t *a, const json_t *b)
{
	bool a_empty = is_nothing(a) || (json_is_object(a) && !json_object_size(a));
	bool b_empty = is_nothing(b) || (json_is_object(b) && !json_object_size(b));
	return (a_empty && b_empty) || (!a_empty && !b_empty && json_equal(a, b));
}

static char *child_path(const char *prefix, const char *key)
{
	return *prefix ? xasprintf("%s.%s", prefix, key) : xstrdup(key);
}

/* Appends to names (", "-separated) each path under prefix where a and b differ; null is the same as absent. */
static void list_differences(const json_t *a, const json_t *b, const char *prefix, struct strbuf *names)
{
	if (json_is_object(a) && json_is_object(b)) {
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)a, key, v) {
			char *path = child_path(prefix, key);
			list_differences(v, json_object_get(b, key), path, names);
			free(path);
		}
		json_object_foreach((json_t *)b, key, v) {
			if (json_object_get(a, key))
				continue;
			char *path = child_path(prefix, key);
			list_differences(NULL, v, path, names);
			free(path);
		}
		return;
	}
	if ((is_nothing(a) && is_nothing(b)) || (a && b && json_equal(a, b)))
		return;
	strbuf_appendf(names, "%s%s", names->len ? ", " : "", prefix);
}

/* A template without the parts that may change (new reference): what must stay as stored. */
static json_t *fixed_part(const json_t *t)
{
	json_t *md = json_deep_copy(json_object_get(t, "metadata"));
	json_t *spec = json_deep_copy(json_object_get(t, "spec"));
	if (!json_is_object(md)) {
		json_decref(md);
		md = json_object();
	}
	if (!json_is_object(spec)) {
		json_decref(spec);
		spec = json_object();
	}
	json_object_del(md, "name");
	json_object_del(md, "labels");
	json_object_del(md, "annotations");
	json_object_del(spec, "storageClassName");
	json_object_del(spec, "volumeAttributesClassName");
	json_object_del(json_object_get(json_object_get(spec, "resources"), "requests"), "storage");
	return json_pack("{s:o, s:o}", "metadata", md, "spec", spec);
}

/* The fields of old and new that differ and may not change, ", "-separated (new string; "" when none). */
char *template_fixed_differences(const json_t *old, const json_t *new)
{
	json_t *a = fixed_part(old), *b = fixed_part(new);
	struct strbuf names = STRBUF_INIT;
	list_differences(a, b, "", &names);
	json_decref(a);
	json_decref(b);
	return strbuf_detach(&names);
}

/* "10Gi" and "10240Mi" are one size: a manifest may write it either way. */
static bool same_size(const char *a, const char *b)
{
	struct quantity qa, qb;
	return same_str(a, b) || (a && b && quantity_parse(a, &qa, NULL) == 0 && quantity_parse(b, &qb, NULL) == 0 &&
				  quantity_cmp(&qa, &qb) == 0);
}

bool template_same(const json_t *old, const json_t *new)
{
	char *fixed = template_fixed_differences(old, new);
	bool same = !*fixed && same_size(template_size(old), template_size(new)) &&
		    same_str(kube_obj_str(old, "spec.storageClassName"), kube_obj_str(new, "spec.storageClassName")) &&
		    same_str(kube_obj_str(old, "spec.volumeAttributesClassName"),
			     kube_obj_str(new, "spec.volumeAttributesClassName")) &&
		    template_same_map(kube_obj_labels(old), kube_obj_labels(new)) &&
		    template_same_map(kube_obj_annotations(old), kube_obj_annotations(new));
	free(fixed);
	return same;
}

json_t *template_desired_form(const json_t *t)
{
	json_t *md = json_pack("{s:s}", "name", template_name(t));
	const json_t *labels = kube_obj_labels(t), *annotations = kube_obj_annotations(t);
	if (json_is_object(labels) && json_object_size(labels))
		json_object_set_new(md, "labels", json_deep_copy(labels));
	if (json_is_object(annotations) && json_object_size(annotations))
		json_object_set_new(md, "annotations", json_deep_copy(annotations));
	json_t *spec = json_deep_copy(json_object_get(t, "spec"));
	return json_pack("{s:o, s:o}", "metadata", md, "spec", spec ? spec : json_object());
}

char *template_desired_text(const json_t *templates)
{
	json_t *arr = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(templates, i, t) {
		json_array_append_new(arr, template_desired_form(t));
	}
	char *text = json_dumps(arr, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(arr);
	return text;
}

/* ---- the pod template ---- */

static bool uses_volume(const json_t *container, const char *name)
{
	static const char *const kinds[] = {"volumeMounts", "volumeDevices"};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t i;
		json_t *m;
		json_array_foreach(json_object_get(container, kinds[k]), i, m) {
			if (same_str(kube_obj_str(m, "name"), name))
				return true;
		}
	}
	return false;
}

const char *template_mounted_by(const json_t *sts, const char *name)
{
	const json_t *pod = json_object_get(json_object_get(json_object_get(sts, "spec"), "template"), "spec");
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(pod, "volumes"), i, c) {
		if (same_str(kube_obj_str(c, "name"), name))
			return NULL;
	}
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		json_array_foreach(json_object_get(pod, lists[l]), i, c) {
			if (uses_volume(c, name))
				return kube_obj_str(c, "name") ? kube_obj_str(c, "name") : "?";
		}
	}
	return NULL;
}
