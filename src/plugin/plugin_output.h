/*
 * How a command that lists prints it, kubectl's way (-o, --no-headers):
 * the table (or its -o wide form) is the command's own; json, yaml and
 * jsonpath=TEMPLATE print one document, the same for the three; name
 * prints kind.group/name lines. Documents keep every value, controls as
 * \uXXXX escapes (text_escape_json), so a tenant's string reads back the
 * same yet shows nothing a terminal acts on.
 *
 * Pure; thread-safe.
 */
#ifndef SOP_PLUGIN_OUTPUT_H
#define SOP_PLUGIN_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>

#include "plugin/plugin_args.h"

struct plugin_format {
	enum plugin_output output;
	const char *jsonpath; /* PLUGIN_OUT_JSONPATH: the template (borrowed) */
	bool no_headers;
};

/* The format a's flags ask for. */
struct plugin_format plugin_format_of(const struct plugin_args *a);

/* Whether f prints the document (json, yaml, jsonpath) rather than a table or names. */
bool plugin_format_is_doc(const struct plugin_format *f);

/*
 * doc (borrowed) as f's document: JSON indented by 2 and a newline, YAML
 * (json_to_yaml), or the jsonpath template's text (no newline added, as
 * kubectl). 0 with *out a new string, or -1 with *err a new message.
 */
int plugin_format_doc(const json_t *doc, const struct plugin_format *f, char **out, char **err)
	__attribute__((warn_unused_result));

/* A listing's parts, for plugin_render. */
struct plugin_listing {
	/* -o name of one row: a new "kind.group/name" string, or NULL when the row names no object. */
	char *(*name_of)(const json_t *row);
	/* The table of rows (-o wide: f->output is PLUGIN_OUT_WIDE; f->no_headers). New string. */
	char *(*table)(const json_t *rows, const struct plugin_format *f, const void *ctx);
	const void *ctx; /* borrowed, for table */
};

/* A name_of for rows with a "pod" field: "pod/NAME", NULL without one. */
char *plugin_pod_of(const json_t *row);

/*
 * rows (an array, borrowed) as f asks: the document, -o name's lines (an
 * object named by adjacent rows once), or the table. 0 with *out a new
 * string, or -1 with *err a new message (a jsonpath evaluation).
 */
int plugin_render(const json_t *rows, const struct plugin_format *f, const struct plugin_listing *l, char **out,
		  char **err) __attribute__((warn_unused_result));

/* "statefulset.apps" for "sts", "statefulcluster.stateful-operator.io" for "stc": -o name's prefix (kubectl's). */
const char *plugin_kind_resource(const char *short_kind);

#endif
