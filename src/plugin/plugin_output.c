#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_jsonpath.h"
#include "plugin/plugin_output.h"
#include "util/json_yaml.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

struct plugin_format plugin_format_of(const struct plugin_args *a)
{
	return (struct plugin_format){.output = a->output, .jsonpath = a->jsonpath, .no_headers = a->no_headers};
}

bool plugin_format_is_doc(const struct plugin_format *f)
{
	return f->output == PLUGIN_OUT_JSON || f->output == PLUGIN_OUT_YAML || f->output == PLUGIN_OUT_JSONPATH;
}

int plugin_format_doc(const json_t *doc, const struct plugin_format *f, char **out, char **err)
{
	*out = NULL;
	if (f->output == PLUGIN_OUT_JSONPATH) {
		struct jsonpath *jp = NULL;
		if (jsonpath_parse(f->jsonpath ? f->jsonpath : "", &jp, err) < 0)
			return -1;
		int rc = jsonpath_eval(jp, doc, out, err);
		jsonpath_free(jp);
		return rc;
	}
	char *text = f->output == PLUGIN_OUT_YAML ? json_to_yaml(doc) : json_dumps(doc, JSON_INDENT(2) | JSON_ENCODE_ANY);
	/* Lossless: a program reads the same values, a terminal is shown no control. */
	char *shown = text_escape_json(text ? text : "");
	*out = f->output == PLUGIN_OUT_YAML ? xstrdup(shown) : xasprintf("%s\n", shown);
	free(shown);
	free(text);
	return 0;
}

/* One line per row that names an object, an adjacent repeat once, clean. New string. */
static char *names_text(const json_t *rows, char *(*name_of)(const json_t *row))
{
	struct strbuf sb = STRBUF_INIT;
	char *last = NULL;
	size_t i;
	const json_t *row;
	json_array_foreach(rows, i, row) {
		char *name = name_of(row);
		if (!name || (last && !strcmp(last, name))) {
			free(name);
			continue;
		}
		char *clean = text_sanitize(name, 0);
		strbuf_appendf(&sb, "%s\n", clean);
		free(clean);
		free(last);
		last = name;
	}
	free(last);
	return strbuf_detach(&sb);
}

int plugin_render(const json_t *rows, const struct plugin_format *f, const struct plugin_listing *l, char **out,
		  char **err)
{
	if (plugin_format_is_doc(f))
		return plugin_format_doc(rows, f, out, err);
	*out = f->output == PLUGIN_OUT_NAME ? names_text(rows, l->name_of) : l->table(rows, f, l->ctx);
	return 0;
}

char *plugin_pod_of(const json_t *row)
{
	const char *pod = json_string_value(json_object_get(row, "pod"));
	return pod ? xasprintf("pod/%s", pod) : NULL;
}

const char *plugin_kind_resource(const char *short_kind)
{
	if (short_kind && !strcmp(short_kind, "sts"))
		return "statefulset.apps";
	if (short_kind && !strcmp(short_kind, "stc"))
		return "statefulcluster.stateful-operator.io";
	return short_kind ? short_kind : "unknown";
}
