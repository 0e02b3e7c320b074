#include "webhook/class_lookup.h"

#include "client/kube_object.h"
#include "util/strbuf.h"

#define DEFAULT_CLASS_ANNOTATION "storageclass.kubernetes.io/is-default-class"

char *class_names(const json_t *list)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o) {
		const char *name = kube_obj_str(o, "metadata.name");
		strbuf_appendf(&sb, "%s%s", sb.len ? ", " : "", name ? name : "?");
	}
	if (!sb.len)
		strbuf_appendf(&sb, "none");
	return strbuf_detach(&sb);
}

const json_t *class_default(const json_t *classes)
{
	size_t i;
	json_t *sc;
	json_array_foreach(classes, i, sc) {
		if (kube_obj_annotation_true(sc, DEFAULT_CLASS_ANNOTATION))
			return sc;
	}
	return NULL;
}
