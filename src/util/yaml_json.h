/*
 * Reads YAML into JSON (jansson): the YAML 1.2 core schema (null, bool,
 * int, float; everything else is a string), anchors, aliases and "<<"
 * merge keys. Only the first document is read. Also reads JSON under the
 * same limits. Thread-safe on distinct inputs.
 *
 * Every document is read under limits (struct doc_limits), so that a small
 * text cannot become a large tree: an alias is kept as a shared reference,
 * and whatever later copies or serialises the tree (json_deep_copy,
 * json_dumps) expands it, so the limits count every alias as a copy of
 * what it names. What the reader accepts expands to no more than
 * max_nodes keys and values and max_expanded_bytes of their text.
 *
 * Neither count bounds memory: jansson spends about 80 bytes of heap per
 * byte of "{}"-heavy JSON. So the tree itself is built under a budget of
 * max_parsed_bytes of heap (util/json_budget.h counts what jansson
 * allocates): JSON is handed to jansson a chunk at a time and the parse
 * ends where its cost would pass the budget, so an over-budget document is
 * never built; YAML is checked after each event (the other limits bound
 * one event's share).
 */
#ifndef SOP_UTIL_YAML_JSON_H
#define SOP_UTIL_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

/* What the readers return on failure; *msg then says which. */
#define DOC_INVALID (-1)   /* not YAML (or JSON), or a construct that is not supported */
#define DOC_TOO_LARGE (-2) /* beyond one of the limits */

#define DOC_MAX_DEPTH 64 /* the deepest any limits may allow */

struct doc_limits {
	size_t max_bytes;          /* of the text */
	size_t max_depth;          /* nested mappings and sequences; at most DOC_MAX_DEPTH */
	size_t max_aliases;        /* YAML anchors and aliases together */
	size_t max_nodes;          /* keys and values, every alias counted as a copy */
	size_t max_expanded_bytes; /* text of keys and scalars, every alias counted as a copy */
	size_t max_parsed_bytes;   /* heap the tree may take while it is built (0: no budget) */
	const char *budget;        /* names the budget in messages, e.g. "the AdmissionReview budget" */
};

/* For text users write into annotations (a Pod template, resources): see yaml_json.c. */
extern const struct doc_limits doc_limits_annotation;
/* For files the operator is pointed at (kubeconfig): bounded, but larger. */
extern const struct doc_limits doc_limits_file;

/*
 * Converts the first YAML document of text under doc_limits_file. On
 * success returns 0 and *out is a new reference (JSON null for an empty
 * document); on failure returns DOC_INVALID or DOC_TOO_LARGE, *out is NULL
 * and *msg is a new message with the line and column where known.
 */
int yaml_to_json(const char *text, size_t len, json_t **out, char **msg)
	__attribute__((warn_unused_result));

/* yaml_to_json under lim (borrowed). */
int yaml_to_json_limited(const char *text, size_t len, const struct doc_limits *lim, json_t **out,
			 char **msg) __attribute__((warn_unused_result));

/*
 * Reads JSON text (an object or an array unless flags has JSON_DECODE_ANY;
 * flags as for json_loadb) under lim (borrowed): the size, depth and node
 * count are checked on the text before a tree is built, so a refused text
 * costs no memory. Returns 0 with *out a new reference, or DOC_INVALID
 * (*msg: jansson's error "... at line L, column C") or DOC_TOO_LARGE (*msg:
 * which limit), *out NULL and *msg a new message. The parse takes at most
 * max_parsed_bytes of heap: it stops and frees what it built where going
 * on could pass it (DOC_TOO_LARGE). A real out-of-memory aborts.
 */
int json_load_limited(const char *text, size_t len, size_t flags, const struct doc_limits *lim,
		      json_t **out, char **msg) __attribute__((warn_unused_result));

#endif
