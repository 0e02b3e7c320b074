/*
 * `-o jsonpath=TEMPLATE`: the part of kubectl's JSONPath templates that
 * scripts use, over the document `-o json` prints. A template is text with
 * {...} expressions:
 *
 *   {.a.b}  {.a['key.with.dots']}  {.a.b\.c}  {.items[0]}  {.items[-1]}
 *   {.items[*].name}  {[*].name}  {$.a}  {@.a}  {"\n"}  {"\t"}
 *   {range .items[*]}{.name}{"\n"}{end}
 *
 * A missing key prints nothing (kubectl get's allowMissingKeys); an index
 * past the end is an error. Several results of one expression are joined
 * by a space; strings print bare, numbers and booleans as JSON, objects
 * and arrays as compact JSON. Everything else kubectl's JSONPath knows
 * (recursive descent "..", filters "[?(...)]", slices "[a:b]", unions
 * "[a,b]", ".*") is refused when the template is parsed, by name, so the
 * mistake is shown before any request.
 *
 * Values from the document are tenants' text: each one printed goes
 * through text_sanitize (one line, no control); the template's own
 * literals ({"\n"}) are the user's and print as written.
 *
 * Pure; thread-safe on distinct objects.
 */
#ifndef SOP_PLUGIN_JSONPATH_H
#define SOP_PLUGIN_JSONPATH_H

#include <jansson.h>

struct jsonpath;

/*
 * Parses template into *out (new; jsonpath_free). Returns 0, or -1 with
 * *err a new message that quotes the template, names the construct and
 * where it is.
 */
int jsonpath_parse(const char *template, struct jsonpath **out, char **err) __attribute__((warn_unused_result));
void jsonpath_free(struct jsonpath *jp);

/*
 * The text of jp over doc (borrowed): 0 with *out a new string, or -1
 * with *err a new message (an index out of range, range over a scalar).
 */
int jsonpath_eval(const struct jsonpath *jp, const json_t *doc, char **out, char **err)
	__attribute__((warn_unused_result));

#endif
