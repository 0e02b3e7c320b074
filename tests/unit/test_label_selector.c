/*
 * Label selectors (label_selector.c): matchLabels and each operator as the
 * API server reads them, the empty and the NULL selector, and malformed
 * terms, which match nothing and are reported invalid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/label_selector.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

struct match_case {
	const char *selector; /* JSON */
	const char *labels;   /* JSON, or NULL: no labels */
	bool want;
};

static const struct match_case cases[] = {
	/* matchLabels: every pair must be there with that value. */
	{"{\"matchLabels\": {\"app\": \"web\"}}", "{\"app\": \"web\"}", true},
	{"{\"matchLabels\": {\"app\": \"web\"}}", "{\"app\": \"web\", \"tier\": \"db\"}", true},
	{"{\"matchLabels\": {\"app\": \"web\"}}", "{\"app\": \"web-cleanup\"}", false},
	{"{\"matchLabels\": {\"app\": \"web\"}}", "{\"App\": \"web\"}", false},
	{"{\"matchLabels\": {\"app\": \"web\"}}", "{}", false},
	{"{\"matchLabels\": {\"app\": \"web\"}}", NULL, false},
	{"{\"matchLabels\": {\"app\": \"web\", \"tier\": \"db\"}}", "{\"app\": \"web\"}", false},
	{"{\"matchLabels\": {\"app\": \"web\", \"tier\": \"db\"}}", "{\"app\": \"web\", \"tier\": \"db\"}", true},
	{"{\"matchLabels\": {\"app\": \"\"}}", "{\"app\": \"\"}", true},
	{"{\"matchLabels\": {\"app\": \"\"}}", "{}", false},
	/* In / NotIn. */
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"a\", \"web\"]}]}",
	 "{\"app\": \"web\"}", true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"a\", \"b\"]}]}",
	 "{\"app\": \"web\"}", false},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"web\"]}]}", "{}", false},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"web\"]}]}", NULL, false},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}",
	 "{\"app\": \"db\"}", true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}",
	 "{\"app\": \"web\"}", false},
	/* NotIn holds for a label set without the key, as in apps/v1. */
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}", "{}", true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}", NULL, true},
	/* Exists / DoesNotExist. */
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}]}", "{\"app\": \"\"}", true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}]}", "{\"other\": \"x\"}", false},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\", \"values\": []}]}", "{\"app\": \"x\"}",
	 true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"DoesNotExist\"}]}", "{\"other\": \"x\"}", true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"DoesNotExist\"}]}", NULL, true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"DoesNotExist\"}]}", "{\"app\": \"x\"}", false},
	/* Terms are ANDed: matchLabels with matchExpressions, and the expressions together. */
	{"{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\","
	 " \"values\": [\"db\"]}]}",
	 "{\"app\": \"web\", \"tier\": \"db\"}", true},
	{"{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\","
	 " \"values\": [\"db\"]}]}",
	 "{\"app\": \"web\", \"tier\": \"cache\"}", false},
	{"{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\","
	 " \"values\": [\"db\"]}]}",
	 "{\"app\": \"db\", \"tier\": \"db\"}", false},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}, {\"key\": \"canary\","
	 " \"operator\": \"DoesNotExist\"}]}",
	 "{\"app\": \"web\"}", true},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}, {\"key\": \"canary\","
	 " \"operator\": \"DoesNotExist\"}]}",
	 "{\"app\": \"web\", \"canary\": \"1\"}", false},
	/* The empty selector matches everything, labels or none. */
	{"{}", "{\"app\": \"web\"}", true},
	{"{}", "{}", true},
	{"{}", NULL, true},
	{"{\"matchLabels\": {}, \"matchExpressions\": []}", "{\"app\": \"web\"}", true},
	{"{\"matchLabels\": null, \"matchExpressions\": null}", NULL, true},
};

static json_t *load(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
	if (!j)
		fail_msg("bad test JSON %s: %s", text, err.text);
	return j;
}

static void test_matches(void **state)
{
	(void)state;
	for (size_t i = 0; i < NITEMS(cases); i++) {
		json_t *sel = load(cases[i].selector);
		json_t *labels = cases[i].labels ? load(cases[i].labels) : NULL;
		bool got = label_selector_matches(sel, labels);
		if (got != cases[i].want)
			fail_msg("case %zu: selector %s, labels %s: got %s", i, cases[i].selector,
				 cases[i].labels ? cases[i].labels : "(none)", got ? "match" : "no match");
		if (!label_selector_valid(sel))
			fail_msg("case %zu: selector %s reported invalid", i, cases[i].selector);
		json_decref(sel);
		json_decref(labels);
	}
}

/* Nothing to select with selects nothing: a caller that has no selector adopts nothing. */
static void test_null_selector(void **state)
{
	(void)state;
	json_t *labels = load("{\"app\": \"web\"}");
	assert_false(label_selector_matches(NULL, labels));
	assert_false(label_selector_matches(NULL, NULL));
	assert_false(label_selector_valid(NULL));
	json_decref(labels);
}

/* Malformed terms, as the API server would refuse them: each matches nothing, even labels that fit the rest. */
static const char *const malformed[] = {
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Like\", \"values\": [\"web\"]}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"in\", \"values\": [\"web\"]}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"values\": [\"web\"]}]}",
	"{\"matchExpressions\": [{\"operator\": \"Exists\"}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\"}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": []}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\"}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": \"web\"}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\", \"values\": [\"web\"]}]}",
	"{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"DoesNotExist\", \"values\": [\"x\"]}]}",
	/* A malformed term spoils a selector whose other terms match. */
	"{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Is\","
	" \"values\": [\"web\"]}]}",
	"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}, {\"key\": \"app\"}]}",
	/* Shapes that are not a selector. */
	"{\"matchLabels\": {\"app\": 1}}",
	"{\"matchLabels\": [\"app\"]}",
	"{\"matchExpressions\": {\"key\": \"app\", \"operator\": \"Exists\"}}",
	"[]",
	"\"app=web\"",
};

static void test_malformed(void **state)
{
	(void)state;
	json_t *labels = load("{\"app\": \"web\", \"tier\": \"db\"}");
	for (size_t i = 0; i < NITEMS(malformed); i++) {
		json_t *sel = load(malformed[i]);
		if (label_selector_matches(sel, labels) || label_selector_matches(sel, NULL))
			fail_msg("case %zu: malformed selector %s matched", i, malformed[i]);
		if (label_selector_valid(sel))
			fail_msg("case %zu: malformed selector %s reported valid", i, malformed[i]);
		json_decref(sel);
	}
	json_decref(labels);
}

/* Labels are only read: the caller's objects come from a shared cache. */
static void test_nothing_changed(void **state)
{
	(void)state;
	json_t *sel = load("{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": [{\"key\": \"tier\","
			   " \"operator\": \"NotIn\", \"values\": [\"x\"]}]}");
	json_t *labels = load("{\"app\": \"web\"}");
	json_t *sel_copy = json_deep_copy(sel);
	json_t *labels_copy = json_deep_copy(labels);
	assert_true(label_selector_matches(sel, labels));
	assert_true(label_selector_valid(sel));
	assert_true(json_equal(sel, sel_copy));
	assert_true(json_equal(labels, labels_copy));
	json_decref(sel);
	json_decref(labels);
	json_decref(sel_copy);
	json_decref(labels_copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches),
		cmocka_unit_test(test_null_selector),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_nothing_changed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
