/*
 * merge_patch_holds: after a write whose answer was lost, the operator
 * reads the object and asks whether its merge patch is there. A wrong
 * "yes" records a step that did not happen; a wrong "no" loses its Event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/merge_patch.h"

static bool holds(const char *obj_text, const char *patch_text)
{
	json_t *obj = obj_text ? json_loads(obj_text, 0, NULL) : NULL;
	json_t *patch = json_loads(patch_text, 0, NULL);
	assert_non_null(patch);
	bool r = merge_patch_holds(obj, patch);
	json_decref(obj);
	json_decref(patch);
	return r;
}

static void test_set_values(void **state)
{
	(void)state;
	const char *cm = "{\"metadata\":{\"name\":\"x\",\"annotations\":{\"a\":\"1\",\"b\":\"2\"}},\"data\":{\"k\":\"v\"}}";
	assert_true(holds(cm, "{\"metadata\":{\"annotations\":{\"a\":\"1\"}}}"));
	assert_true(holds(cm, "{\"data\":{\"k\":\"v\"},\"metadata\":{\"annotations\":{\"b\":\"2\"}}}"));
	assert_true(holds(cm, "{}"));
	assert_false(holds(cm, "{\"metadata\":{\"annotations\":{\"a\":\"2\"}}}"));
	assert_false(holds(cm, "{\"metadata\":{\"annotations\":{\"c\":\"1\"}}}"));
	assert_false(holds(cm, "{\"data\":{\"k\":\"v\",\"l\":\"w\"}}"));
	/* Types count: "1" is not 1. */
	assert_false(holds("{\"spec\":{\"replicas\":\"1\"}}", "{\"spec\":{\"replicas\":1}}"));
	assert_true(holds("{\"spec\":{\"replicas\":1}}", "{\"spec\":{\"replicas\":1}}"));
}

static void test_null_removes(void **state)
{
	(void)state;
	assert_true(holds("{\"metadata\":{\"annotations\":{\"a\":\"1\"}}}", "{\"metadata\":{\"annotations\":{\"b\":null}}}"));
	assert_false(holds("{\"metadata\":{\"annotations\":{\"b\":\"1\"}}}", "{\"metadata\":{\"annotations\":{\"b\":null}}}"));
	/* A member that is null in the object is there: the patch would remove it. */
	assert_false(holds("{\"a\":null}", "{\"a\":null}"));
	/* Under an absent member the patch makes an empty object (RFC 7386): a change. */
	assert_false(holds("{\"metadata\":{}}", "{\"metadata\":{\"annotations\":{\"b\":null}}}"));
}

/* An array is replaced whole, never merged. */
static void test_arrays_whole(void **state)
{
	(void)state;
	assert_true(holds("{\"f\":[\"a\",\"b\"]}", "{\"f\":[\"a\",\"b\"]}"));
	assert_false(holds("{\"f\":[\"a\",\"b\"]}", "{\"f\":[\"a\"]}"));
	assert_false(holds("{\"f\":[\"a\"]}", "{\"f\":[\"a\",\"b\"]}"));
}

/* An object where the object has a scalar, or nothing: the patch would make one. */
static void test_object_over_scalar_or_absent(void **state)
{
	(void)state;
	assert_false(holds("{\"s\":\"x\"}", "{\"s\":{\"a\":\"1\"}}"));
	assert_false(holds("{}", "{\"s\":{\"a\":\"1\"}}"));
	assert_false(holds(NULL, "{\"s\":\"x\"}"));
	assert_false(holds("\"x\"", "{}"));
}

/* The resourceVersion precondition changes with the write itself; the uid does not. */
static void test_preconditions(void **state)
{
	(void)state;
	const char *after = "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"8\",\"annotations\":{\"s\":\"x\"}}}";
	assert_true(holds(after, "{\"metadata\":{\"resourceVersion\":\"7\",\"annotations\":{\"s\":\"x\"}}}"));
	assert_true(holds(after, "{\"metadata\":{\"uid\":\"u1\",\"annotations\":{\"s\":\"x\"}}}"));
	/* Another object made since under the name: not ours. */
	assert_false(holds(after, "{\"metadata\":{\"uid\":\"u2\",\"annotations\":{\"s\":\"x\"}}}"));
	/* Only at the top: a resourceVersion deeper is content. */
	assert_false(holds("{\"spec\":{\"metadata\":{\"resourceVersion\":\"8\"}}}",
			   "{\"spec\":{\"metadata\":{\"resourceVersion\":\"7\"}}}"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_values),
		cmocka_unit_test(test_null_removes),
		cmocka_unit_test(test_arrays_whole),
		cmocka_unit_test(test_object_over_scalar_or_absent),
		cmocka_unit_test(test_preconditions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
