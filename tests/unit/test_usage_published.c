/*
 * The usage the operator publishes on claims (usage_published.h): the
 * text `kubectl stateful status` reads, what it refuses, and when the
 * operator writes it again (the write load on the API server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/autoresize/usage_published.h"

#define T0 1764000000LL /* 2025-11-24T16:00:00Z */
#define GI (1LL << 30)

static const struct volume_usage ten_gi = {.capacity_bytes = 10 * GI, .used_bytes = 4 * GI,
					   .available_bytes = 6 * GI, .inodes = 655360, .inodes_used = 1000};

static void test_text_reads_back(void **state)
{
	(void)state;
	char *text = usage_published_text(&ten_gi, T0);
	assert_string_equal(text, "used=4294967296,available=6442450944,capacity=10737418240,inodesUsed=1000,"
				  "inodes=655360,observed=2025-11-24T16:00:00Z");
	struct usage_published p;
	assert_int_equal(usage_published_parse(text, &p), 0);
	assert_memory_equal(&p.usage, &ten_gi, sizeof(ten_gi));
	assert_int_equal(p.observed_s, T0);
	free(text);
	/* Inodes are optional (Prometheus may lack them), other keys skipped: a later operator may add some. */
	assert_int_equal(usage_published_parse("used=1,available=2,capacity=3,observed=2025-11-24T16:00:00Z,next=x", &p), 0);
	assert_int_equal(p.usage.inodes, 0);
}

static void test_junk_is_refused(void **state)
{
	(void)state;
	static const char *const junk[] = {
		"",
		"used=1,available=2,capacity=3",                              /* no time */
		"used=1,available=2,observed=2025-11-24T16:00:00Z",           /* no capacity */
		"used=1,used=1,available=2,capacity=3,observed=2025-11-24T16:00:00Z", /* twice */
		"used=-1,available=2,capacity=3,observed=2025-11-24T16:00:00Z",
		"used= 1,available=2,capacity=3,observed=2025-11-24T16:00:00Z",
		"used=1Gi,available=2,capacity=3,observed=2025-11-24T16:00:00Z",
		"used=4,available=2,capacity=3,observed=2025-11-24T16:00:00Z", /* more used than there is */
		"used=0,available=0,capacity=0,observed=2025-11-24T16:00:00Z", /* no file system */
		"used=1,available=2,capacity=2305843009213693952,observed=2025-11-24T16:00:00Z", /* 2^61 */
		"used=1,available=2,capacity=99999999999999999999999,observed=2025-11-24T16:00:00Z",
		"used=1,available=2,capacity=9525111204606846977,observed=2025-11-24T16:00:00Z", /* 19 digits, past int64 once times ten */
		"used=1,available=2,capacity=3,inodesUsed=5,inodes=4,observed=2025-11-24T16:00:00Z",
		"used=1,available=2,capacity=3,observed=yesterday",
		"used=1,available=2,capacity=3,observed=2025-11-24T16:00:00Z,",
		"used=1,available=2,capacity=3,,observed=2025-11-24T16:00:00Z",
		"used,available=2,capacity=3,observed=2025-11-24T16:00:00Z",
	};
	struct usage_published p;
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		if (usage_published_parse(junk[i], &p) == 0)
			fail_msg("accepted: %s", junk[i]);
	assert_int_equal(usage_published_parse(NULL, &p), -1);
	/* Longer than any text the operator writes. */
	char *big = malloc(USAGE_TEXT_MAX + 64);
	snprintf(big, USAGE_TEXT_MAX + 64, "used=1,available=2,capacity=3,observed=2025-11-24T16:00:00Z,x=%0*d",
		 USAGE_TEXT_MAX, 0);
	assert_int_equal(usage_published_parse(big, &p), -1);
	free(big);
}

static void test_bounds(void **state)
{
	(void)state;
	assert_true(usage_valid(&ten_gi));
	struct volume_usage u = ten_gi;
	u.capacity_bytes = USAGE_BOUND;
	assert_true(usage_valid(&u));
	u.capacity_bytes = USAGE_BOUND + 1;
	assert_false(usage_valid(&u));
	u = ten_gi;
	u.available_bytes = -1;
	assert_false(usage_valid(&u));
	u = ten_gi;
	u.inodes = 0; /* not known: nothing may be used of it */
	assert_false(usage_valid(&u));
	u.inodes_used = 0;
	assert_true(usage_valid(&u));
}

static void test_written_when_moved_or_old(void **state)
{
	(void)state;
	struct usage_published old = {.usage = ten_gi, .observed_s = T0};
	struct volume_usage now = ten_gi;
	assert_true(usage_published_due(NULL, &now, T0));
	assert_false(usage_published_due(&old, &now, T0 + 60));
	/* Less than 1 % of 10Gi (107374183 bytes, rounded up): not worth a write. */
	now.used_bytes += 107374182;
	now.available_bytes -= 107374182;
	assert_false(usage_published_due(&old, &now, T0 + 60));
	now.used_bytes += 1;
	assert_true(usage_published_due(&old, &now, T0 + 60));
	/* The volume grew: the capacity is news at once. */
	now = ten_gi;
	now.capacity_bytes += GI;
	assert_true(usage_published_due(&old, &now, T0 + 60));
	/* Inodes: 1 % of them. */
	now = ten_gi;
	now.inodes_used += 6553;
	assert_false(usage_published_due(&old, &now, T0 + 60));
	now.inodes_used += 1;
	assert_true(usage_published_due(&old, &now, T0 + 60));
	/* Unchanged, but 10 minutes old: written again, so its age shows the operator still polls. */
	now = ten_gi;
	assert_false(usage_published_due(&old, &now, T0 + USAGE_PUBLISH_REFRESH_S - 1));
	assert_true(usage_published_due(&old, &now, T0 + USAGE_PUBLISH_REFRESH_S));
	/* From the future (a clock set back, or a hand): replaced. */
	assert_true(usage_published_due(&old, &now, T0 - 3600));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_reads_back),
		cmocka_unit_test(test_junk_is_refused),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_written_when_moved_or_old),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
