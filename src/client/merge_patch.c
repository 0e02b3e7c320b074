#include "client/merge_patch.h"

#include <string.h>

static bool holds(const json_t *obj, const json_t *patch, bool top)
{
	if (!json_is_object(patch))
		return obj && json_equal(obj, patch);
	/* Applied to a non-object, a patch object makes a new object: a change. */
	if (!json_is_object(obj))
		return false;
	const char *key;
	const json_t *value;
	json_object_foreach((json_t *)patch, key, value) {
		const json_t *have = json_object_get(obj, key);
		if (json_is_null(value)) {
			if (have)
				return false;
			continue;
		}
		if (top && !strcmp(key, "metadata") && json_is_object(value) && json_object_get(value, "resourceVersion")) {
			json_t *meta = json_copy((json_t *)value);
			json_object_del(meta, "resourceVersion");
			bool ok = holds(have, meta, false);
			json_decref(meta);
			if (!ok)
				return false;
			continue;
		}
		if (!holds(have, value, false))
			return false;
	}
	return true;
}

bool merge_patch_holds(const json_t *obj, const json_t *patch)
{
	return holds(obj, patch, true);
}
