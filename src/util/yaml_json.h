/*
 * Reads YAML into JSON (jansson): the YAML 1.2 core schema (null, bool,
 * int, float; everything else is a string), anchors, aliases and "<<"
 * merge keys, nesting up to 64 levels. Only the first document is read.
 * Thread-safe on distinct inputs.
 */
#ifndef SOP_UTIL_YAML_JSON_H
#define SOP_UTIL_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

/*
 * Converts the first YAML document of text. On success *out is a new
 * reference (JSON null for an empty document); on failure returns -1 and
 * *msg is a new message with the line and column.
 */
int yaml_to_json(const char *text, size_t len, json_t **out, char **msg)
	__attribute__((warn_unused_result));

#endif
