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

/* db-0 at 200Mi used of 300Mi (66 %), read 2 minutes ago; db-1 at 10 %. */
#define USAGE_DB0 "used=209715200,available=104857600,capacity=335544320,inodesUsed=0,inodes=0,observed=2025-11-24T15:58:00Z"
#define USAGE_DB1 "used=31457280,available=283115520,capacity=335544320,inodesUsed=0,inodes=0,observed=2025-11-24T15:58:00Z"

/* The claims, db-0 and db-1 with usage0 and usage1 as the operator published them (NULL: nothing). */
static json_t *claims(const char *usage0, const char *usage1)
{
	json_t *c = json_loads("[{\"metadata\":{\"name\":\"data-db-0\",\"namespace\":\"ns\",\"annotations\":{}},"
			       "\"spec\":{\"storageClassName\":\"c1\",\"resources\":{\"requests\":{\"storage\":\"320Mi\"}}}},"
			       "{\"metadata\":{\"name\":\"data-db-1\",\"namespace\":\"ns\",\"annotations\":{}},"
			       "\"spec\":{\"storageClassName\":\"c1\",\"resources\":{\"requests\":{\"storage\":\"320Mi\"}}}},"
			       "{\"metadata\":{\"name\":\"data-other-0\",\"namespace\":\"ns\"}}]",
			       0, NULL);
	const char *usage[] = {usage0, usage1};
	for (size_t i = 0; i < 2; i++)
		if (usage[i])
			json_object_set_new(json_object_get(json_object_get(json_array_get(c, i), "metadata"), "annotations"),
					    "stateful-operator.io/usage", json_string(usage[i]));
	return c;
}

static json_t *classes(void)
{
	return json_loads("[{\"metadata\":{\"name\":\"c1\",\"annotations\":"
			  "{\"autoresize.stateful-operator.io/granularity\":\"64Mi\"}}}]",
			  0, NULL);
}

static json_t *row_for(const json_t *sts, const char *usage0, const char *usage1)
{
	json_t *rows = json_array(), *c = claims(usage0, usage1), *k = classes();
	status_autoresize_rows(rows, "sts", sts, c, k, NULL, NULL, NOW_MS);
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
	json_t *sts = set_with("used=60%, step=20%, max=448Mi, cooldown=1h", "320Mi", NULL);
	json_t *row = row_for(sts, USAGE_DB0, USAGE_DB1);
	assert_string_equal(field(row, "phase"), "Due");
	assert_string_equal(field(row, "nextGrowth"), "now");
	/* 320Mi + 20 % = 384Mi, a multiple of the class's 64Mi. */
	assert_string_equal(field(row, "nextSize"), "384Mi");
	assert_non_null(strstr(field(row, "progress"), "data-db-0 used 67% (200Mi of 320Mi, 2m ago)"));
	assert_int_equal(json_array_size(json_object_get(row, "claims")), 2); /* data-other-0 is not db's */
	json_decref(row);
	json_decref(sts);
}

static void test_cooldown_says_when(void **state)
{
	(void)state;
	/* Grown 10 minutes ago, cooldown 1h: next at 16:50. */
	json_t *sts = set_with("used=60%, max=448Mi, cooldown=1h", "320Mi", "{\"data\":\"2025-11-24T15:50:00Z\"}");
	json_t *row = row_for(sts, USAGE_DB0, USAGE_DB1);
	assert_string_equal(field(row, "phase"), "Cooldown");
	assert_string_equal(field(row, "nextGrowth"), "2025-11-24T16:50:00Z");
	json_decref(row);
	json_decref(sts);
}

static void test_at_maximum_and_below(void **state)
{
	(void)state;
	json_t *sts = set_with("used=60%, max=448Mi", "448Mi", NULL);
	json_t *row = row_for(sts, USAGE_DB0, USAGE_DB1);
	assert_string_equal(field(row, "phase"), "AtMaximum");
	assert_true(json_is_null(json_object_get(row, "nextGrowth")));
	json_decref(row);
	json_decref(sts);
	sts = set_with("used=90%, max=1Gi", "320Mi", NULL);
	row = row_for(sts, USAGE_DB0, USAGE_DB1);
	assert_string_equal(field(row, "phase"), "Watching");
	json_decref(row);
	json_decref(sts);
}

/* The operator reads no usage (--autoresize-source=none) or has not polled yet: unknown, with a hint, not an error. */
static void test_unpublished_usage_is_unknown(void **state)
{
	(void)state;
	json_t *sts = set_with("used=60%, max=1Gi", "320Mi", NULL);
	json_t *row = row_for(sts, NULL, NULL);
	assert_string_equal(field(row, "phase"), "Unknown");
	assert_non_null(strstr(field(row, "progress"), "usage unknown"));
	assert_non_null(strstr(field(row, "progress"), "--autoresize-source=none"));
	assert_null(strstr(field(row, "progress"), "nodes/proxy"));
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(row, "claims"), 0), "usedRatio")));
	json_decref(row);
	json_decref(sts);
}

/* Anyone who may write a claim may write the annotation: junk is unknown usage, never shown or decided on. */
static void test_junk_usage_is_not_shown(void **state)
{
	(void)state;
	json_t *sts = set_with("used=60%, max=1Gi", "320Mi", NULL);
	/* db-0 claims more used than its capacity; db-1's figures are fine. */
	json_t *row = row_for(sts, "used=999999999999,available=0,capacity=335544320,observed=2025-11-24T15:58:00Z",
			      USAGE_DB1);
	assert_string_equal(field(row, "phase"), "Watching");
	assert_non_null(strstr(field(row, "progress"), "data-db-1 used 10%"));
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(row, "claims"), 0), "usedRatio")));
	json_decref(row);
	json_decref(sts);
}

/* Figures 30 minutes old: shown with their age, marked stale (the operator refreshes them every 10 minutes). */
static void test_old_usage_is_marked_stale(void **state)
{
	(void)state;
	json_t *sts = set_with("used=90%, max=1Gi", "320Mi", NULL);
	json_t *row = row_for(sts, "used=209715200,available=104857600,capacity=335544320,observed=2025-11-24T15:30:00Z",
			      NULL);
	assert_non_null(strstr(field(row, "progress"), "data-db-0 used 67% (200Mi of 320Mi, 30m ago: stale)"));
	const json_t *c0 = json_array_get(json_object_get(row, "claims"), 0);
	assert_true(json_is_true(json_object_get(c0, "stale")));
	assert_string_equal(json_string_value(json_object_get(c0, "observed")), "2025-11-24T15:30:00Z");
	json_decref(row);
	json_decref(sts);
}

static void test_invalid_policy_says_what_to_fix(void **state)
{
	(void)state;
	json_t *sts = set_with("used=60%", "320Mi", NULL); /* no max */
	json_t *row = row_for(sts, USAGE_DB0, USAGE_DB1);
	assert_string_equal(field(row, "phase"), "Invalid");
	assert_int_equal(strncmp(field(row, "progress"), "max:", 4), 0);
	json_decref(row);
	json_decref(sts);
}

/* A set without a policy of its own, its template of class c1; the class's and the namespace's policies (NULL: none). */
static json_t *rows_under(const char *own, const char *class_policy, const char *ns_policy)
{
	json_t *sts = set_with(own ? own : "x", "320Mi", NULL);
	json_t *ann = json_object_get(json_object_get(sts, "metadata"), "annotations");
	if (!own)
		json_object_del(ann, "autoresize.stateful-operator.io/data");
	json_t *vct = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	json_object_set_new(json_object_get(vct, "spec"), "storageClassName", json_string("c1"));
	json_t *k = classes();
	if (class_policy)
		json_object_set_new(json_object_get(json_object_get(json_array_get(k, 0), "metadata"), "annotations"),
				    "autoresize.stateful-operator.io/policy", json_string(class_policy));
	json_t *ns = ns_policy ? json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "ns", "annotations",
					   "autoresize.stateful-operator.io/policy", ns_policy)
			       : NULL;
	json_t *rows = json_array(), *c = claims(USAGE_DB0, USAGE_DB1);
	status_autoresize_rows(rows, "sts", sts, c, k, ns, NULL, NOW_MS);
	json_decref(c);
	json_decref(k);
	json_decref(ns);
	json_decref(sts);
	return rows;
}

static const char *source_of(const json_t *row, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(row, "policySource"), key));
	return v ? v : "(null)";
}

static void test_class_policy_covers_a_set_without_its_own(void **state)
{
	(void)state;
	json_t *rows = rows_under(NULL, "used=60%, max=1Gi", NULL);
	assert_int_equal(json_array_size(rows), 1);
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(field(row, "phase"), "Due");
	assert_string_equal(field(row, "policy"), "used=60%, max=1Gi");
	assert_non_null(strstr(field(row, "progress"), "; max 1Gi; policy of StorageClass c1"));
	assert_string_equal(source_of(row, "kind"), "storageclass");
	assert_string_equal(source_of(row, "name"), "c1");
	assert_string_equal(source_of(row, "annotation"), "autoresize.stateful-operator.io/policy");
	json_decref(rows);
	/* No policy anywhere: no row. */
	rows = rows_under(NULL, NULL, NULL);
	assert_int_equal(json_array_size(rows), 0);
	json_decref(rows);
}

static void test_namespace_beats_class_and_workload_beats_both(void **state)
{
	(void)state;
	json_t *rows = rows_under(NULL, "used=60%, max=1Gi", "used=90%, max=2Gi");
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(field(row, "phase"), "Watching");
	assert_string_equal(field(row, "policy"), "used=90%, max=2Gi");
	assert_non_null(strstr(field(row, "progress"), "; policy of Namespace ns"));
	assert_string_equal(source_of(row, "kind"), "namespace");
	assert_string_equal(source_of(row, "name"), "ns");
	json_decref(rows);
	rows = rows_under("used=95%, max=3Gi", "used=60%, max=1Gi", "used=90%, max=2Gi");
	row = json_array_get(rows, 0);
	assert_string_equal(field(row, "policy"), "used=95%, max=3Gi");
	assert_null(strstr(field(row, "progress"), "policy of"));
	assert_string_equal(source_of(row, "kind"), "workload");
	assert_string_equal(source_of(row, "name"), "db");
	assert_string_equal(source_of(row, "annotation"), "autoresize.stateful-operator.io/data");
	json_decref(rows);
}

static void test_opt_out_and_refused_class_policy(void **state)
{
	(void)state;
	json_t *rows = rows_under("mode=off", "used=60%, max=1Gi", NULL);
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(field(row, "phase"), "Off");
	assert_string_equal(field(row, "progress"), "mode=off in autoresize.stateful-operator.io/data: no autoresize");
	json_decref(rows);
	rows = rows_under(NULL, "used=60, max=1Gi", NULL);
	row = json_array_get(rows, 0);
	assert_string_equal(field(row, "phase"), "Invalid");
	assert_string_equal(field(row, "progress"), "autoresize.stateful-operator.io/policy on StorageClass c1: used: "
						    "\"60\" is not a whole percentage; use a whole percentage from 1% to "
						    "99%, e.g. used=80%");
	assert_string_equal(source_of(row, "kind"), "storageclass");
	json_decref(rows);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_due_names_the_fullest_claim_and_the_next_size),
		cmocka_unit_test(test_cooldown_says_when),
		cmocka_unit_test(test_at_maximum_and_below),
		cmocka_unit_test(test_unpublished_usage_is_unknown),
		cmocka_unit_test(test_junk_usage_is_not_shown),
		cmocka_unit_test(test_old_usage_is_marked_stale),
		cmocka_unit_test(test_invalid_policy_says_what_to_fix),
		cmocka_unit_test(test_class_policy_covers_a_set_without_its_own),
		cmocka_unit_test(test_namespace_beats_class_and_workload_beats_both),
		cmocka_unit_test(test_opt_out_and_refused_class_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
