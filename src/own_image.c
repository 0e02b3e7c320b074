/* The image this operator runs (see own_image.h). */
#include "own_image.h"

#include <string.h>

#include "util/xalloc.h"

#define OPERATOR_CONTAINER "manager"

char *own_image_of_pod(const json_t *pod, char **why)
{
	const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
	const json_t *chosen = NULL;
	*why = NULL;
	if (json_array_size(containers) == 1) {
		chosen = json_array_get(containers, 0);
	} else {
		size_t i;
		const json_t *c;
		json_array_foreach(containers, i, c) {
			const char *name = json_string_value(json_object_get(c, "name"));
			if (name && !strcmp(name, OPERATOR_CONTAINER))
				chosen = c;
		}
	}
	const char *image = json_string_value(json_object_get(chosen, "image"));
	if (!image || !*image) {
		*why = xasprintf("the pod has %zu containers and none named \"" OPERATOR_CONTAINER "\" with an image",
				 json_array_size(containers));
		return NULL;
	}
	return xstrdup(image);
}
