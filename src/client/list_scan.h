/*
 * Walks the text of a Kubernetes List response ({"kind":..., "metadata":
 * {...}, "items":[...]}) without building a tree of the whole list: each
 * item's bytes are handed over one at a time, so a caller can parse,
 * use and free one object before the next. A page of 500 pods is a few MB
 * of text but tens of MB as a parsed tree. Pure; thread-safe.
 */
#ifndef SOP_CLIENT_LIST_SCAN_H
#define SOP_CLIENT_LIST_SCAN_H

#include <stddef.h>

/* One item: text[0..len) is a complete JSON value. Return 0 to go on, non-zero to stop. */
typedef int (*list_item_fn)(void *ctx, const char *text, size_t len);

/*
 * Calls item for every element of the top-level "items" array, in order,
 * and sets *meta and *meta_len (may be NULL) to the top-level "metadata"
 * value's bytes (*meta NULL when absent). Returns 0; the callback's
 * non-zero value when it stopped; -1 when text is not a JSON object with an
 * "items" array (nothing after the fault is delivered).
 */
int list_scan(const char *text, size_t len, list_item_fn item, void *ctx, const char **meta,
	      size_t *meta_len) __attribute__((warn_unused_result));

/*
 * The length of the JSON value at text (after leading white space, which
 * it counts), or 0 when it is not a complete value. Checks structure only
 * (brackets, strings, escapes), not the grammar of numbers and literals.
 */
size_t json_value_span(const char *text, size_t len);

/*
 * The value of the top-level member key of the JSON object at text (after
 * leading white space): its first byte, *value_len its length; NULL when
 * text is not an object or has no such member before a fault. Keys are
 * compared as written, without unescaping (the API server writes plain
 * ones). Linear in len, allocates nothing: for reading a few fields of a
 * document too large to parse.
 */
const char *json_member_span(const char *text, size_t len, const char *key, size_t *value_len);

#endif
