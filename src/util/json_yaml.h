/*
 * A jansson value written as YAML by libyaml's emitter, the way kubectl
 * writes objects: block style, keys in the value's order, plain scalars
 * where they read back as the same string, and double quotes where a
 * plain one would not: strings a YAML 1.1 or 1.2 reader takes for another
 * type ("true", "yes", "123", "1e3", "0x1f", "null", "~", "", dates, "<<"),
 * strings with controls (written as escapes), and whatever libyaml itself
 * will not write plain (": ", a leading "-", ...). Empty objects and
 * arrays are "{}" and "[]". Reading the text back with yaml_to_json gives
 * the same JSON.
 *
 * Pure; thread-safe on distinct values.
 */
#ifndef SOP_UTIL_JSON_YAML_H
#define SOP_UTIL_JSON_YAML_H

#include <jansson.h>
#include <stdbool.h>

/* v (borrowed) as one YAML document ending in a newline, without "---". New string. */
char *json_to_yaml(const json_t *v);

/* Whether a YAML reader would take s, written plain, for something other than a string. */
bool yaml_plain_looks_typed(const char *s);

#endif
