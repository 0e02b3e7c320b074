/*
 * The fault proxy's decisions (tests/integration/support/fault_plan.c): a
 * replayable seed, the asked rate, every kind reached, watches only cut or
 * refused, no fault at 0 %, and when a run surely injected a kind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "fault_plan.h"

#define LIST "/api/v1/pods?limit=500"
#define WATCH "/api/v1/pods?allowWatchBookmarks=true&resourceVersion=12&watch=true"

static void test_same_seed_same_faults_in_any_order(void **unused)
{
	(void)unused;
	struct fault_plan p = {42, 10};
	enum fault_kind first[200];
	for (unsigned long n = 0; n < 200; n++)
		first[n] = fault_decide(&p, "PATCH", "/apis/apps/v1/namespaces/a/statefulsets/web", n);
	/* Asked again backwards, with other requests in between: the same answers. */
	for (unsigned long n = 200; n-- > 0;) {
		(void)fault_decide(&p, "GET", LIST, n);
		assert_int_equal(fault_decide(&p, "PATCH", "/apis/apps/v1/namespaces/a/statefulsets/web", n), first[n]);
	}
	/* Another seed: another sequence. */
	struct fault_plan q = {43, 10};
	int differ = 0;
	for (unsigned long n = 0; n < 200; n++)
		differ += fault_decide(&q, "PATCH", "/apis/apps/v1/namespaces/a/statefulsets/web", n) != first[n];
	assert_true(differ > 0);
}

static void test_rate_and_every_kind(void **unused)
{
	(void)unused;
	struct fault_plan p = {7, 10};
	int count[FAULT_KINDS] = {0};
	for (unsigned long n = 0; n < 20000; n++)
		count[fault_decide(&p, n % 2 ? "GET" : "PUT", LIST, n)]++;
	int faults = 20000 - count[FAULT_NONE];
	/* 10 % of 20,000 is 2,000; a fair draw lands well within +-10 %. */
	assert_in_range(faults, 1800, 2200);
	for (int k = FAULT_TOO_MANY; k <= FAULT_LATENCY; k++)
		if (count[k] < 150)
			fail_msg("fault %s only %d times", fault_kind_names[k], count[k]);
	assert_int_equal(count[FAULT_CUT_WATCH], 0); /* not a watch */
	for (unsigned long n = 0; n < 1000; n++) {
		int ms = fault_latency_ms(&p, "GET", LIST, n);
		assert_in_range(ms, 50, 1000);
	}
}

static void test_watches_are_refused_or_cut(void **unused)
{
	(void)unused;
	struct fault_plan p = {9, 50};
	int cut = 0;
	for (unsigned long n = 0; n < 2000; n++) {
		enum fault_kind k = fault_decide(&p, "GET", WATCH, n);
		assert_true(k == FAULT_NONE || k == FAULT_TOO_MANY || k == FAULT_UNAVAILABLE ||
			    k == FAULT_RESET_BEFORE || k == FAULT_CUT_WATCH);
		cut += k == FAULT_CUT_WATCH;
	}
	assert_true(cut > 200);
	assert_true(fault_is_watch("/api/v1/pods?watch=1"));
	assert_true(fault_is_watch("/api/v1/pods?limit=1&watch=true"));
	assert_false(fault_is_watch("/api/v1/pods?watch=false"));
	assert_false(fault_is_watch("/api/v1/pods?nowatch=true"));
	assert_false(fault_is_watch("/api/v1/namespaces/watch=true/pods"));
}

static void test_zero_percent_is_no_fault(void **unused)
{
	(void)unused;
	struct fault_plan p = {1, 0};
	for (unsigned long n = 0; n < 5000; n++)
		assert_int_equal(fault_decide(&p, "DELETE", "/api/v1/namespaces/a/pods/x", n), FAULT_NONE);
}

static void test_surely_injected(void **unused)
{
	(void)unused;
	/* (6/7)^89 is just above one in a million, (6/7)^90 below. */
	for (int k = FAULT_TOO_MANY; k <= FAULT_LATENCY; k++) {
		assert_false(fault_surely_injected((enum fault_kind)k, 0));
		assert_false(fault_surely_injected((enum fault_kind)k, 89));
		assert_true(fault_surely_injected((enum fault_kind)k, 90));
	}
	assert_false(fault_surely_injected(FAULT_CUT_WATCH, 1000000));
	assert_false(fault_surely_injected(FAULT_NONE, 1000000));
	/* The bound holds for fault_decide's draws: 90 faults of 300 seeds show every kind. */
	for (uint64_t seed = 1; seed <= 300; seed++) {
		struct fault_plan p = {seed, 10};
		int count[FAULT_KINDS] = {0}, faults = 0;
		for (unsigned long n = 0; faults < 90; n++) {
			enum fault_kind k = fault_decide(&p, "PATCH", "/api/v1/namespaces/a/pods/x", n);
			count[k]++;
			faults += k != FAULT_NONE;
		}
		for (int k = FAULT_TOO_MANY; k <= FAULT_LATENCY; k++)
			if (!count[k])
				fail_msg("seed %llu: no %s in 90 faults", (unsigned long long)seed, fault_kind_names[k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_faults_in_any_order),
		cmocka_unit_test(test_rate_and_every_kind),
		cmocka_unit_test(test_watches_are_refused_or_cut),
		cmocka_unit_test(test_zero_percent_is_no_fault),
		cmocka_unit_test(test_surely_injected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
