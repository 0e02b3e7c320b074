/* The "said once" memory of autoresize (autoresize_said.h), bounded. */
#include "controllers/autoresize/autoresize_said.h"

#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/autoresize/autoresize_policy.h"
#include "util/log.h"
#include "util/xalloc.h"

void autoresize_said_init(struct autoresize_said *m)
{
	m->said = json_object();
	m->full_logged = false;
}

void autoresize_said_release(struct autoresize_said *m)
{
	json_decref(m->said);
	m->said = NULL;
}

bool autoresize_said_news(struct autoresize_said *m, const char *key, const char *news)
{
	const json_t *was = json_object_get(m->said, key);
	if (was && !strcmp(json_string_value(was), news))
		return false;
	if (!was && json_object_size(m->said) >= AUTORESIZE_SAID_MAX) {
		if (!m->full_logged)
			log_warn("autoresize", "%d Warnings remembered, the most kept: news of other workloads or "
					       "templates is not said until some of those go (key %.120s)",
				 AUTORESIZE_SAID_MAX, key);
		m->full_logged = true;
		return false;
	}
	json_object_set_new(m->said, key, json_stringn_nocheck(news, strlen(news)));
	return true;
}

bool autoresize_said_forget(struct autoresize_said *m, const char *key)
{
	return json_object_del(m->said, key) == 0;
}

/* Into live, "<ns>/<name>/<template>" for each policy of each workload of ws, and the workload's own (template "*"). */
static void add_live(json_t *live, const json_t *ws)
{
	size_t plen = strlen(ANNOTATION_AUTORESIZE_PREFIX), i;
	const json_t *w;
	json_array_foreach(ws, i, w) {
		const char *ns = kube_obj_str(w, "metadata.namespace"), *name = kube_obj_str(w, "metadata.name");
		if (!ns || !name)
			continue;
		char *all = xasprintf("%s/%s/*", ns, name);
		json_object_set_new(live, all, json_true());
		free(all);
		const char *key;
		const json_t *v;
		json_object_foreach((json_t *)kube_obj_annotations(w), key, v) {
			if (strncmp(key, ANNOTATION_AUTORESIZE_PREFIX, plen))
				continue;
			char *tpl = xasprintf("%s/%s/%s", ns, name, key + plen);
			json_object_set_new(live, tpl, json_true());
			free(tpl);
		}
	}
}

void autoresize_said_prune(struct autoresize_said *m, const json_t *sets, const json_t *clusters,
			   const json_t *also)
{
	json_t *live = json_object();
	if (also)
		json_object_update(live, (json_t *)also);
	add_live(live, sets);
	add_live(live, clusters);
	const char *key;
	json_t *v, *tmp;
	json_object_foreach_safe(m->said, tmp, key, v) {
		/* Names and annotation names hold no '/': the third one ends "<ns>/<name>/<template>". */
		const char *end = strchr(key, '/');
		for (int n = 1; end && n < 3; n++)
			end = strchr(end + 1, '/');
		char *owner = end ? xstrndup(key, (size_t)(end - key)) : NULL;
		if (!owner || !json_object_get(live, owner))
			json_object_del(m->said, key);
		free(owner);
	}
	json_decref(live);
	if (json_object_size(m->said) < AUTORESIZE_SAID_MAX)
		m->full_logged = false;
}

size_t autoresize_said_size(const struct autoresize_said *m)
{
	return json_object_size(m->said);
}
