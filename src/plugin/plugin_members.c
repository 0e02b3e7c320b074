#include <stdlib.h>

#include "client/kube_object.h"
#include "plugin/plugin_members.h"
#include "plugin/plugin_table.h"
#include "util/xalloc.h"

static char *table_text(const json_t *members, const struct plugin_format *f, const void *ctx)
{
	(void)ctx;
	bool wide = f->output == PLUGIN_OUT_WIDE;
	static const char *const headers[] = {"IDENTITY", "POD", "READY", "PHASE", "NODE", "REVISION"};
	struct table *t = table_new(wide ? 6 : 4, headers);
	if (f->no_headers)
		table_hide_headers(t);
	size_t i;
	const json_t *m;
	json_array_foreach(members, i, m) {
		const json_t *ready = json_object_get(m, "ready");
		const char *cells[] = {kube_obj_str(m, "identity"), kube_obj_str(m, "pod"),
				       ready ? (json_is_true(ready) ? "true" : "false") : NULL, kube_obj_str(m, "phase"),
				       kube_obj_str(m, "node"), kube_obj_str(m, "revision")};
		table_add(t, cells);
	}
	char *text = table_render(t);
	table_free(t);
	return text;
}

int members_render(const json_t *members, const struct plugin_format *f, char **out, char **err)
{
	static const struct plugin_listing listing = {.name_of = plugin_pod_of, .table = table_text};
	return plugin_render(members, f, &listing, out, err);
}
