/* The List scanner: items handed over one by one, whatever the layout; bad input refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "client/list_scan.h"

struct got {
	int n;
	char items[8][256];
	int stop_after;
};

static int collect(void *ctx, const char *text, size_t len)
{
	struct got *g = ctx;
	if (g->n < 8 && len < sizeof(g->items[0])) {
		memcpy(g->items[g->n], text, len);
		g->items[g->n][len] = '\0';
	}
	g->n++;
	return g->stop_after && g->n >= g->stop_after ? 7 : 0;
}

static void test_items_and_metadata(void **state)
{
	(void)state;
	const char *list = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
			   "\"metadata\":{\"resourceVersion\":\"42\",\"continue\":\"abc\"},"
			   "\"items\":[{\"metadata\":{\"name\":\"a\"}},"
			   "{\"metadata\":{\"name\":\"b\",\"annotations\":{\"x\":\"}]{[\\\"\"}}}]}";
	struct got g = {0};
	const char *meta;
	size_t meta_len;
	assert_int_equal(list_scan(list, strlen(list), collect, &g, &meta, &meta_len), 0);
	assert_int_equal(g.n, 2);
	/* Each item is exactly one whole object that parses on its own. */
	for (int i = 0; i < 2; i++) {
		json_t *o = json_loads(g.items[i], 0, NULL);
		assert_non_null(o);
		const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		assert_string_equal(name, i ? "b" : "a");
		json_decref(o);
	}
	json_t *m = json_loadb(meta, meta_len, 0, NULL);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "resourceVersion")), "42");
	json_decref(m);
}

static void test_whitespace_and_key_order(void **state)
{
	(void)state;
	const char *list = " \n{ \"items\" : [ 1 , \"two\" ,\t{\"k\": [true, null]} , [] ] ,\r\n"
			   "  \"metadata\" : { } , \"kind\" : \"List\" } ";
	struct got g = {0};
	const char *meta;
	size_t meta_len;
	assert_int_equal(list_scan(list, strlen(list), collect, &g, &meta, &meta_len), 0);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.items[0], "1");
	assert_string_equal(g.items[1], "\"two\"");
	assert_string_equal(g.items[2], "{\"k\": [true, null]}");
	assert_string_equal(g.items[3], "[]");
	assert_int_equal(meta_len, 3);
}

static void test_empty_items(void **state)
{
	(void)state;
	const char *list = "{\"metadata\":{},\"items\":[]}";
	struct got g = {0};
	assert_int_equal(list_scan(list, strlen(list), collect, &g, NULL, NULL), 0);
	assert_int_equal(g.n, 0);
}

static void test_callback_stops(void **state)
{
	(void)state;
	const char *list = "{\"items\":[1,2,3,4]}";
	struct got g = {.stop_after = 2};
	assert_int_equal(list_scan(list, strlen(list), collect, &g, NULL, NULL), 7);
	assert_int_equal(g.n, 2);
}

static void test_malformed_is_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",
		"[]",
		"{}",
		"{\"metadata\":{}}",                      /* no items */
		"{\"items\":{}}",                         /* items not an array */
		"{\"items\":[1,2}",                       /* wrong closer */
		"{\"items\":[{\"a\":1}",                  /* truncated */
		"{\"items\":[{\"a\":\"unterminated}]}",   /* string never ends */
		"{\"items\":[1 2]}",                      /* missing comma */
		"{\"items\":[1,]}",                       /* trailing comma */
		"{\"items\" [1]}",                        /* missing colon */
		"{items:[1]}",                            /* unquoted key */
		"{\"items\":[\"a\nb\"]}",                 /* raw newline inside a string */
		"{\"items\":[]",                          /* object never closed */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct got g = {0};
		if (list_scan(bad[i], strlen(bad[i]), collect, &g, NULL, NULL) != -1)
			fail_msg("accepted bad list #%zu: %s", i, bad[i]);
	}
}

/* A list whose one item nests depth arrays. New string. */
static char *deep_list(size_t depth)
{
	char *s = calloc(1, 2 * depth + 32);
	assert_non_null(s);
	strcpy(s, "{\"items\":[");
	memset(s + strlen(s), '[', depth);
	memset(s + strlen(s), ']', depth);
	strcat(s, "]}");
	return s;
}

/*
 * Items as deep as the API server can send (Go's JSON stops at 10,000
 * levels) are handed over, for their parser to refuse or read; deeper is
 * refused, however deep, rather than overflowing a stack.
 */
static void test_deep_nesting_is_bounded(void **state)
{
	(void)state;
	char *s = deep_list(10000);
	struct got g = {0};
	assert_int_equal(list_scan(s, strlen(s), collect, &g, NULL, NULL), 0);
	assert_int_equal(g.n, 1);
	free(s);

	/* Mixed brackets are matched at every level. */
	s = deep_list(3000);
	s[strlen("{\"items\":[") + 2999] = '{';
	assert_int_equal(list_scan(s, strlen(s), collect, &g, NULL, NULL), -1);
	free(s);

	for (size_t depth = 10001; depth <= 1000000; depth *= 99) {
		s = deep_list(depth);
		memset(&g, 0, sizeof(g));
		assert_int_equal(list_scan(s, strlen(s), collect, &g, NULL, NULL), -1);
		assert_int_equal(g.n, 0);
		free(s);
	}
}

static void test_value_span(void **state)
{
	(void)state;
	assert_int_equal(json_value_span("123,", 4), 3);
	assert_int_equal(json_value_span("  \"a\\\"b\" x", 10), 8);
	assert_int_equal(json_value_span("{\"a\":[1,{}]}tail", 16), 12);
	assert_int_equal(json_value_span("{\"a\":[1,{}]", 11), 0);
	assert_int_equal(json_value_span("", 0), 0);
	assert_int_equal(json_value_span("]", 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items_and_metadata),
		cmocka_unit_test(test_whitespace_and_key_order),
		cmocka_unit_test(test_empty_items),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_malformed_is_refused),
		cmocka_unit_test(test_deep_nesting_is_bounded),
		cmocka_unit_test(test_value_span),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
