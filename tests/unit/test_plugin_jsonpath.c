/*
 * -o jsonpath=TEMPLATE (plugin_jsonpath.h): what kubectl users write
 * evaluates as kubectl does, and what the subset leaves out is refused by
 * name when the template is parsed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_jsonpath.h"

static const char doc_text[] =
	"{\"kind\":\"List\",\"items\":["
	"{\"name\":\"web\",\"n\":3,\"ok\":true,\"none\":null,\"tags\":[\"a\",\"b\"],"
	"\"metadata\":{\"annotations\":{\"stateful-operator.io/resize-status\":\"Copying 1/3\"}}},"
	"{\"name\":\"db\",\"n\":1.5,\"ok\":false,\"tags\":[],\"sub\":{\"x\":1}}]}";

/* The text of template over doc_text; fails the test when it does not evaluate. New string. */
static char *eval(const char *template)
{
	json_t *doc = json_loads(doc_text, 0, NULL);
	assert_non_null(doc);
	struct jsonpath *jp = NULL;
	char *err = NULL, *out = NULL;
	if (jsonpath_parse(template, &jp, &err) < 0)
		fail_msg("%s: %s", template, err);
	if (jsonpath_eval(jp, doc, &out, &err) < 0)
		fail_msg("%s: %s", template, err);
	jsonpath_free(jp);
	json_decref(doc);
	return out;
}

static void expect(const char *template, const char *want)
{
	char *got = eval(template);
	if (strcmp(got, want))
		fail_msg("%s: got \"%s\", want \"%s\"", template, got, want);
	free(got);
}

static void test_paths(void **state)
{
	(void)state;
	expect("{.kind}", "List");
	expect("{$.kind}", "List");
	expect("{.items[0].name}", "web");
	expect("{.items[-1].name}", "db");
	expect("{.items[*].name}", "web db");
	expect("{.items[*].n}", "3 1.5");
	expect("{.items[*].ok}", "true false");
	expect("{.items[0].none}", "null");
	expect("{.items[0].tags}", "[\"a\",\"b\"]");
	expect("{.items[1].sub}", "{\"x\":1}");
	expect("{.items[0]['name']}", "web");
	expect("{.items[0][\"name\"]}", "web");
	expect("{.items[0].metadata.annotations['stateful-operator.io/resize-status']}", "Copying 1/3");
	expect("{.items[0].metadata.annotations.stateful-operator\\.io/resize-status}", "Copying 1/3");
	expect("{.items[1].sub[*]}", "1");
	/* Missing keys print nothing (kubectl get's allowMissingKeys). */
	expect("{.items[*].missing}", "");
	expect("{.nothing.deeper}", "");
	expect("name: {.items[0].name}!", "name: web!");
	expect("{ .kind }", "List");
}

static void test_range_and_literals(void **state)
{
	(void)state;
	expect("{range .items[*]}{.name}{\"\\t\"}{.n}{\"\\n\"}{end}", "web\t3\ndb\t1.5\n");
	expect("{range .items}{.name},{end}", "web,db,");
	expect("{range[*]}{end}{range.items[*]}{.n};{end}", "3;1.5;");
	expect("{range .items[*]}[{range .tags[*]}{@}{end}]{end}", "[ab][]");
	expect("{range .items[*]}{.name}{\"\\n\"}{end}total {.items[0].n}", "web\ndb\ntotal 3");
	expect("{'single'}", "single");
	/* The document -o json prints for status is an array of rows: its root indexes. */
	json_t *rows = json_loads("[{\"name\":\"a\"},{\"name\":\"b\"}]", 0, NULL);
	struct jsonpath *jp = NULL;
	char *err = NULL, *out = NULL;
	assert_int_equal(jsonpath_parse("{[*].name} {range [*]}<{.name}>{end}", &jp, &err), 0);
	assert_int_equal(jsonpath_eval(jp, rows, &out, &err), 0);
	assert_string_equal(out, "a b <a><b>");
	free(out);
	jsonpath_free(jp);
	json_decref(rows);
}

/* Values are tenants' text: no control reaches the terminal; the template's own "\n" does. */
static void test_values_are_clean(void **state)
{
	(void)state;
	json_t *doc = json_pack("{s:s, s:[s]}", "m", "a\033]0;x\007b\nc\xe2\x80\xae", "l", "\033[2J");
	struct jsonpath *jp = NULL;
	char *err = NULL, *out = NULL;
	assert_int_equal(jsonpath_parse("{.m}{\"\\n\"}{.l}", &jp, &err), 0);
	assert_int_equal(jsonpath_eval(jp, doc, &out, &err), 0);
	assert_null(strchr(out, '\033'));
	assert_null(strchr(out, '\007'));
	assert_null(strstr(out, "\xe2\x80\xae"));
	assert_non_null(strstr(out, "b c"));          /* the value's newline: a space */
	assert_non_null(strstr(out, "\n[\"\\u001B[2J\"]")); /* the literal's newline kept; a list as escaped JSON */
	free(out);
	jsonpath_free(jp);
	json_decref(doc);
}

static void expect_refused(const char *template, const char *why)
{
	struct jsonpath *jp = NULL;
	char *err = NULL;
	if (jsonpath_parse(template, &jp, &err) == 0)
		fail_msg("%s: accepted", template);
	assert_null(jp);
	if (!strstr(err, why))
		fail_msg("%s: message \"%s\" does not say \"%s\"", template, err, why);
	assert_non_null(strstr(err, "supported:")); /* and what is */
	free(err);
}

static void test_refused(void **state)
{
	(void)state;
	expect_refused("{..name}", "recursive descent");
	expect_refused("{.items..name}", "recursive descent");
	expect_refused("{.items[?(@.n>1)].name}", "filters");
	expect_refused("{.items[0:2]}", "slices");
	expect_refused("{.items[:2]}", "slices");
	expect_refused("{.items[0,1]}", "unions");
	expect_refused("{.items.*}", "use [*]");
	expect_refused("{.items[0]", "not closed");
	expect_refused("{range .items[*]}{.name}", "without {end}");
	expect_refused("{.name}{end}", "without {range}");
	expect_refused("{name}", "expected .field");
	expect_refused("{\"\\q\"}", "unknown escape");
	expect_refused("{\"open}", "not closed");
	expect_refused("{.a[x]}", "after '['");
	expect_refused("{.a b}", "expected '}'");
}

static void test_eval_errors(void **state)
{
	(void)state;
	json_t *doc = json_loads(doc_text, 0, NULL);
	struct jsonpath *jp = NULL;
	char *err = NULL, *out = NULL;
	assert_int_equal(jsonpath_parse("{.items[5].name}", &jp, &err), 0);
	assert_int_equal(jsonpath_eval(jp, doc, &out, &err), -1);
	assert_null(out);
	assert_non_null(strstr(err, "out of range (2 items)"));
	free(err);
	jsonpath_free(jp);
	assert_int_equal(jsonpath_parse("{range .kind}x{end}", &jp, &err), 0);
	assert_int_equal(jsonpath_eval(jp, doc, &out, &err), -1);
	assert_non_null(strstr(err, "needs a list"));
	free(err);
	jsonpath_free(jp);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_range_and_literals),
		cmocka_unit_test(test_values_are_clean),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_eval_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
