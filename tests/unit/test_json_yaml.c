/*
 * JSON written as YAML by libyaml (util/json_yaml.h): plain where safe,
 * quoted where a reader would take the string for another type, controls
 * escaped; yaml_to_json reads back the same JSON for tricky values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_yaml.h"
#include "util/text_sanitize.h"
#include "util/yaml_json.h"

/* v written and read back must be v; returns the text (new). */
static char *round_trip(const json_t *v)
{
	char *y = json_to_yaml(v);
	json_t *back = NULL;
	char *msg = NULL;
	if (yaml_to_json(y, strlen(y), &back, &msg) < 0)
		fail_msg("does not read back: %s\n%s", msg, y);
	if (!json_equal(v, back)) {
		char *b = json_dumps(back, JSON_ENCODE_ANY);
		fail_msg("reads back as %s:\n%s", b, y);
	}
	json_decref(back);
	return y;
}

static void test_tricky_strings_round_trip(void **state)
{
	(void)state;
	static const char *const strings[] = {
		"true", "True", "false", "yes", "no", "on", "off", "y", "n", "null", "Null", "~", "", "123", "-1",
		"+1", "1.5", "1e3", "1E-3", ".5", "0x1f", "0o17", "017", "1_000", "12:30", "2001-12-14", ".inf",
		"-.inf", ".nan", "2026-11-28T13:00:00Z", "2001-12-14t21:59:43.10-05:00", "0b101", "20Gi", "1d", "0xZ", "500m", "a: b", "- c", "#d", "x #y", "[1]", "{a: 1}", "*alias", "&anchor",
		"!tag", "|", ">", "%x", "@x", "`x", "'q'", "\"dq\"", " lead", "trail ", "line1\nline2", "tab\there",
		"\033]0;x\007", "\xc2\x9b" "2J", "bidi\xe2\x80\xae" "x", "del\x7f", "caf\xc3\xa9", "日本語", "---", "...",
		"? k", "key:", "a\\b", "$HOME", "=", "<<",
	};
	json_t *obj = json_object();
	json_t *arr = json_array();
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		json_object_set_new(obj, strings[i], json_string(strings[i]));
		json_array_append_new(arr, json_string(strings[i]));
	}
	json_t *doc = json_loads("{\"scalars\": [-7, 0.25, 1e300, 1.0, true, false, null], \"emptyMap\": {},"
				 " \"emptyList\": [], \"empties\": [{}, []], \"nested\": [[1, [2]], {\"a\": {\"b\": [\"c\"]}}]}",
				 0, NULL);
	assert_non_null(doc);
	json_object_set_new(doc, "map", obj);
	json_object_set_new(doc, "list", arr);
	char *y = round_trip(doc);
	free(y);
	json_decref(doc);
}

static void test_plain_where_safe(void **state)
{
	(void)state;
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:i, s:b, s:n, s:[s, s], s:{}, s:[]}", "name", "web", "storage",
				"20Gi", "flag", "true", "count", "3", "num", 3, "ok", 1, "none", "items", "a", "b", "empty", "list");
	char *y = round_trip(doc);
	assert_string_equal(y, "name: web\n"
			       "storage: 20Gi\n"
			       "flag: \"true\"\n"
			       "count: \"3\"\n"
			       "num: 3\n"
			       "ok: true\n"
			       "none: null\n"
			       "items:\n"
			       "- a\n"
			       "- b\n"
			       "empty: {}\n"
			       "list: []\n");
	free(y);
	json_decref(doc);
	json_t *empty = json_array();
	y = json_to_yaml(empty);
	assert_string_equal(y, "[]\n");
	free(y);
	json_decref(empty);
}

/* A long value stays one line (no folding), and keys that look typed are quoted too. */
static void test_long_and_typed_keys(void **state)
{
	(void)state;
	char longv[300];
	memset(longv, 'x', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = 0;
	for (size_t i = 10; i < sizeof(longv) - 1; i += 11)
		longv[i] = ' ';
	json_t *doc = json_pack("{s:s, s:s}", "long", longv, "true", "k");
	char *y = round_trip(doc);
	assert_non_null(strstr(y, "\"true\": k\n"));
	assert_int_equal(strchr(y, '\n') - y, (long)strlen("long: ") + (long)strlen(longv));
	free(y);
	json_decref(doc);
}

/* After the text_escape_json pass the plugin makes, no control shows and the value still reads back. */
static void test_controls_escaped(void **state)
{
	(void)state;
	json_t *doc = json_pack("{s:s}", "m", "a\033[2Jb\xc2\x9b" "c\xe2\x80\xae" "d\x7f" "e\te\n");
	char *y = json_to_yaml(doc);
	char *shown = text_escape_json(y);
	for (const char *p = shown; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\n')
			fail_msg("control 0x%02x in:\n%s", *p, shown);
	assert_null(strstr(shown, "\xc2\x9b"));
	assert_null(strstr(shown, "\xe2\x80\xae"));
	assert_null(strchr(shown, 0x7f));
	json_t *back = NULL;
	char *msg = NULL;
	assert_int_equal(yaml_to_json(shown, strlen(shown), &back, &msg), 0);
	if (!json_equal(back, doc))
		fail_msg("escaped YAML does not read back the same:\n%s", shown);
	json_decref(back);
	free(shown);
	free(y);
	json_decref(doc);
}

static void test_looks_typed(void **state)
{
	(void)state;
	assert_true(yaml_plain_looks_typed("1e3"));
	assert_true(yaml_plain_looks_typed("NO"));
	assert_true(yaml_plain_looks_typed(""));
	assert_false(yaml_plain_looks_typed("20Gi"));
	assert_false(yaml_plain_looks_typed("web-0"));
	assert_false(yaml_plain_looks_typed("e"));
	assert_false(yaml_plain_looks_typed("1d"));
	assert_true(yaml_plain_looks_typed("0x1F"));
	assert_true(yaml_plain_looks_typed("2026-11-28T13:00:00Z"));
	assert_true(yaml_plain_looks_typed("2001-12-14 21:59:43.10 -5"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tricky_strings_round_trip),
		cmocka_unit_test(test_plain_where_safe),
		cmocka_unit_test(test_long_and_typed_keys),
		cmocka_unit_test(test_controls_escaped),
		cmocka_unit_test(test_looks_typed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
