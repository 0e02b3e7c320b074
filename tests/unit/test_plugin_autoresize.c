/*
 * The autoresize rows of `kubectl stateful status`: what the user reads to
 * know whether a volume will grow, when, and to what size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "plugin/plugin_autoresize.h"

#define NOW_MS 1764000000000LL /* 2025-11-24T16:00:00Z */

static json_t *set_with(const char *policy, const char *size, const char *last)
{
	json_t *sts = json_pack("{s:s, s:{s:s, s:s, s:{s:s}}, s:{s:[{s:{s:s}, s:{s:{s:{s:s}}}}]}}", "kind",
				"StatefulSet", "metadata", "name", "db", "namespace", "ns", "annotations",
				"autoresize.stateful-operator.io/data", policy, "spec", "volumeClaimTemplates", "metadata",
				"name", "data", "spec", "resources", "requests", "storage", size);
	if (last)
		json_object_set_new(json_object_get(json_object_get(sts, "metadata"), "annotations"),
				    "stateful-operator.io/autoresize-last", json_string(last));
	return sts;
}

static json_t *claims(void)
{
	return json_loads("[{\"metadata\":{\"name\":\"data-db-0\",\"namespace\":\"ns\"},\"spec\":{\"storageClassName\":\"c1\","
			  "\"resources\":{\"requests\":{\"storage\":\"320Mi\"}}}},"
			  "{\"metadata\":{\"name\":\"data-db-1\",\"namespace\":\"ns\"},\"spec\":{\"storageClassName\":\"c1\","
			  "\"resources\":{\"requests\":{\"storage\":\"320Mi\"}}}},"
			  "{\"metadata\":{\"name\":\"data-other-0\",\"namespace\":\"ns\"}}]",
			  0, NULL);
}

static json_t *classes(void)
{
	return json_loads("[{\"metadata\":{\"name\":\"c1\",\"annotations\":"
			  "{\"autoresize.stateful-operator.io/granularity\":\"64Mi\"}}}]",
			  0, NULL);
}

/* db-0 at 200Mi used of 300Mi (66 %), db-1 at 10 %. */
static json_t *usage(void)
{
	return json_loads("{\"ns/data-db-0\":{\"capacity\":335544320,\"used\":209715200,\"available\":104857600,"
			  "\"inodes\":0,\"inodesUsed\":0},"
			  "\"ns/data-db-1\":{\"capacity\":335544320,\"used\":31457280,\"available\":283115520,"
			  "\"inodes\":0,\"inodesUsed\":0}}",
			  0, NULL);
}

static json_t *row_for(const json_t *sts, const struct autoresize_usage_view *u)
{
	json_t *rows = json_array(), *c = claims(), *k = classes();
	status_autoresize_rows(rows, "sts", sts, c, k, u, NULL, NOW_MS);
	json_decref(c);
	json_decref(k);
	assert_int_equal(json_array_size(rows), 1);
	json_t *row = json_incref(json_array_get(rows, 0));
	json_decref(rows);
	assert_string_equal(json_string_value(json_object_get(row, "operation")), "autoresize/data");
	return row;
}

static const char *field(const json_t *row, const char *name)
{
	const char *v = json_string_value(json_object_get(row, name));
	return v ? v : "(null)";
}

static void test_due_names_the_fullest_claim_and_the_next_size(void **state)
{
	(void)state;
	json_t *table = usage();
	struct autoresize_usage_view u = {table, NULL};
	json_t *sts = set_with("used=60%, step=20%, max=448Mi, cooldown=1h", "320Mi", NULL);
	json_t *row = row_for(sts, &u);
	assert_string_equal(field(row, "phase"), "Due");
	assert_string_equal(field(row, "nextGrowth"), "now");
	/* 320Mi + 20 % = 384Mi, a multiple of the class's 64Mi. */
	assert_string_equal(field(row, "nextSize"), "384Mi");
	assert_non_null(strstr(field(row, "progress"), "data-db-0 used 67% (200Mi of 320Mi)"));
	assert_int_equal(json_array_size(json_object_get(row, "claims")), 2); /* data-other-0 is not db's */
	json_decref(row);
	json_decref(sts);
	json_decref(table);
}

static void test_cooldown_says_when(void **state)
{
	(void)state;
	json_t *table = usage();
	struct autoresize_usage_view u = {table, NULL};
	/* Grown 10 minutes ago, cooldown 1h: next at 16:50. */
	json_t *sts = set_with("used=60%, max=448Mi, cooldown=1h", "320Mi", "{\"data\":\"2025-11-24T15:50:00Z\"}");
	json_t *row = row_for(sts, &u);
	assert_string_equal(field(row, "phase"), "Cooldown");
	assert_string_equal(field(row, "nextGrowth"), "2025-11-24T16:50:00Z");
	json_decref(row);
	json_decref(sts);
	json_decref(table);
}

static void test_at_maximum_and_below(void **state)
{
	(void)state;
	json_t *table = usage();
	struct autoresize_usage_view u = {table, NULL};
	json_t *sts = set_with("used=60%, max=448Mi", "448Mi", NULL);
	json_t *row = row_for(sts, &u);
	assert_string_equal(field(row, "phase"), "AtMaximum");
	assert_true(json_is_null(json_object_get(row, "nextGrowth")));
	json_decref(row);
	json_decref(sts);
	sts = set_with("used=90%, max=1Gi", "320Mi", NULL);
	row = row_for(sts, &u);
	assert_string_equal(field(row, "phase"), "Watching");
	json_decref(row);
	json_decref(sts);
	json_decref(table);
}

static void test_unknown_usage_says_why(void **state)
{
	(void)state;
	json_t *table = json_object();
	struct autoresize_usage_view u = {table, "node n1: nodes \"n1\" is forbidden: cannot get resource \"nodes/proxy\""};
	json_t *sts = set_with("used=60%, max=1Gi", "320Mi", NULL);
	json_t *row = row_for(sts, &u);
	assert_string_equal(field(row, "phase"), "Unknown");
	assert_non_null(strstr(field(row, "progress"), "nodes/proxy"));
	json_decref(row);
	json_decref(sts);
	json_decref(table);
}

static void test_invalid_policy_says_what_to_fix(void **state)
{
	(void)state;
	json_t *table = usage();
	struct autoresize_usage_view u = {table, NULL};
	json_t *sts = set_with("used=60%", "320Mi", NULL); /* no max */
	json_t *row = row_for(sts, &u);
	assert_string_equal(field(row, "phase"), "Invalid");
	assert_int_equal(strncmp(field(row, "progress"), "max:", 4), 0);
	json_decref(row);
	json_decref(sts);
	json_decref(table);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_due_names_the_fullest_claim_and_the_next_size),
		cmocka_unit_test(test_cooldown_says_when),
		cmocka_unit_test(test_at_maximum_and_below),
		cmocka_unit_test(test_unknown_usage_says_why),
		cmocka_unit_test(test_invalid_policy_says_what_to_fix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
