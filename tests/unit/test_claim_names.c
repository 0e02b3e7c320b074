/*
 * Names to the StatefulSets they may belong to: what wakes a set when one
 * of its claims, or a pod the orphan delete left without an owner, changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "controllers/claim_names.h"

static void expect_set(const char *pod, const char *want)
{
	char *got = pod_set_name(pod);
	if (want)
		assert_string_equal(got, want);
	else
		assert_null(got);
	free(got);
}

static void test_pod_set_name(void **state)
{
	(void)state;
	expect_set("db-0", "db");
	expect_set("my-db-12", "my-db");
	expect_set("db-0-1", "db-0"); /* a set named db-0 */
	expect_set("db", NULL);
	expect_set("db-", NULL);
	expect_set("db-x1", NULL);
	expect_set("-3", NULL); /* no set name before the dash */
	expect_set(NULL, NULL);
}

struct seen {
	char names[4][32];
	int n;
};

static void collect(void *ctx, const char *sts)
{
	struct seen *s = ctx;
	assert_true(s->n < 4);
	strcpy(s->names[s->n++], sts);
}

static void test_claim_candidates(void **state)
{
	(void)state;
	struct seen s = {.n = 0};
	claim_statefulset_candidates("data-my-db-2", collect, &s);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "my-db");
	assert_string_equal(s.names[1], "db");

	s.n = 0;
	claim_statefulset_candidates("data-db-x", collect, &s);
	claim_statefulset_candidates("data-db-", collect, &s);
	claim_statefulset_candidates(NULL, collect, &s);
	assert_int_equal(s.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_set_name),
		cmocka_unit_test(test_claim_candidates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
