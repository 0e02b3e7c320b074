#include "client/label_selector.h"

#include <string.h>

static bool has_value(const json_t *values, const char *v)
{
	size_t i;
	const json_t *x;
	json_array_foreach(values, i, x) {
		const char *s = json_string_value(x);
		if (s && v && !strcmp(s, v))
			return true;
	}
	return false;
}

/* -1: malformed; 0: no match; 1: match. */
static int expression_matches(const json_t *e, const json_t *labels)
{
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *op = json_string_value(json_object_get(e, "operator"));
	const json_t *values = json_object_get(e, "values");
	if (!key || !op)
		return -1;
	size_t nvalues = json_is_array(values) ? json_array_size(values) : 0;
	if (values && !json_is_array(values) && !json_is_null(values))
		return -1;
	const char *v = json_string_value(json_object_get(labels, key));
	if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
		if (nvalues == 0)
			return -1; /* the API server requires values here */
		bool in = has_value(values, v);
		return !strcmp(op, "In") ? in : !in;
	}
	if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
		if (nvalues)
			return -1; /* and forbids them here */
		return !strcmp(op, "Exists") ? v != NULL : v == NULL;
	}
	return -1;
}

static int evaluate(const json_t *selector, const json_t *labels)
{
	if (!json_is_object(selector))
		return -1;
	const json_t *ml = json_object_get(selector, "matchLabels");
	const json_t *me = json_object_get(selector, "matchExpressions");
	if ((ml && !json_is_object(ml) && !json_is_null(ml)) || (me && !json_is_array(me) && !json_is_null(me)))
		return -1;
	int result = 1;
	const char *k;
	const json_t *want;
	json_object_foreach((json_t *)ml, k, want) {
		const char *w = json_string_value(want);
		if (!w)
			return -1;
		const char *have = json_string_value(json_object_get(labels, k));
		if (!have || strcmp(have, w))
			result = 0;
	}
	size_t i;
	const json_t *e;
	json_array_foreach(me, i, e) {
		int r = expression_matches(e, labels);
		if (r < 0)
			return -1;
		if (r == 0)
			result = 0;
	}
	return result;
}

bool label_selector_matches(const json_t *selector, const json_t *labels)
{
	return evaluate(selector, labels) == 1;
}

bool label_selector_valid(const json_t *selector)
{
	return evaluate(selector, NULL) >= 0;
}
