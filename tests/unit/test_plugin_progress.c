/*
 * The plugin's progress drawing: sizes, the bar at every fill, the
 * percentage without overflow, the rate between readings, and a replica's
 * line in each stage fitting the terminal's width.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_progress.h"

static void test_bytes(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(progress_bytes(0, b, sizeof(b)), "0 B");
	assert_string_equal(progress_bytes(1023, b, sizeof(b)), "1023 B");
	assert_string_equal(progress_bytes(1024, b, sizeof(b)), "1.0 KiB");
	assert_string_equal(progress_bytes(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(progress_bytes(20LL << 30, b, sizeof(b)), "20.0 GiB");
	assert_string_equal(progress_bytes(LLONG_MAX, b, sizeof(b)), "8.0 EiB");
	assert_string_equal(progress_bytes(-5, b, sizeof(b)), "0 B");
}

static void test_percent(void **state)
{
	(void)state;
	assert_int_equal(progress_percent(0, 0), 0);
	assert_int_equal(progress_percent(5, 0), 0);
	assert_int_equal(progress_percent(1, 3), 33);
	assert_int_equal(progress_percent(2, 3), 66);
	assert_int_equal(progress_percent(3, 3), 100);
	assert_int_equal(progress_percent(4, 3), 100);
	assert_int_equal(progress_percent(LLONG_MAX / 2, LLONG_MAX), 49);
	assert_int_equal(progress_percent(LLONG_MAX - 1, LLONG_MAX), 99);
}

static void test_bar(void **state)
{
	(void)state;
	char b[64];
	assert_string_equal(progress_bar(0, 100, 12, b, sizeof(b)), "[          ]");
	assert_string_equal(progress_bar(50, 100, 12, b, sizeof(b)), "[====>     ]");
	assert_string_equal(progress_bar(100, 100, 12, b, sizeof(b)), "[==========]");
	assert_string_equal(progress_bar(200, 100, 12, b, sizeof(b)), "[==========]");
	assert_string_equal(progress_bar(5, 0, 12, b, sizeof(b)), "[          ]");
	assert_string_equal(progress_bar(2, 2, 1, b, sizeof(b)), "[=]"); /* at least one cell */
	assert_string_equal(progress_bar(1, 2, 1, b, sizeof(b)), "[ ]");
	/* Every fill: the width holds and the bar only grows. */
	size_t last = 0;
	for (long long done = 0; done <= 1000; done += 7) {
		progress_bar(done, 1000, 30, b, sizeof(b));
		assert_int_equal(strlen(b), 30);
		assert_int_equal(b[0], '[');
		assert_int_equal(b[29], ']');
		size_t filled = strspn(b + 1, "=>");
		assert_true(filled >= last);
		last = filled;
	}
	/* A buffer smaller than the width: cut to it. */
	char small[8];
	assert_int_equal(strlen(progress_bar(1, 2, 40, small, sizeof(small))), 7);
}

static void test_rate(void **state)
{
	(void)state;
	struct progress_rate r = {0};
	progress_rate_update(&r, 100, 1000);
	assert_true(r.per_s < 0); /* one reading: no rate yet */
	progress_rate_update(&r, 100, 2000);
	assert_true(r.per_s < 0); /* the same reading again */
	/* 2000 bytes since the reading that last moved, 2 s before. */
	progress_rate_update(&r, 2100, 3000);
	assert_true(r.per_s > 999.9 && r.per_s < 1000.1);
	progress_rate_update(&r, 2100, 4000);
	assert_true(r.per_s > 999.9); /* kept until the count moves */
	progress_rate_update(&r, 4100, 5000);
	assert_true(r.per_s > 999.9 && r.per_s < 1000.1);
	progress_rate_update(&r, 50, 6000);
	assert_true(r.per_s < 0); /* a retried pod starts again */
	char b[32];
	assert_string_equal(progress_rate_text(-1, b, sizeof(b)), "-");
	assert_string_equal(progress_rate_text(3.0 * 1048576, b, sizeof(b)), "3.0 MiB/s");
}

static void test_replica_line(void **state)
{
	(void)state;
	struct replica_progress p = {.ordinal = 2, .stage = REPLICA_COPYING, .per_s = 45.2 * 1048576};
	p.copy.bytes = 1LL << 30;
	p.copy.total_bytes = 2LL << 30;
	p.copy.files = 120;
	p.copy.total_files = 300;
	char *line = progress_replica_line("web", &p, 100);
	assert_non_null(strstr(line, "web-2  ["));
	assert_non_null(strstr(line, "]   50%  1.0 GiB/2.0 GiB  120/300 files  45.2 MiB/s"));
	assert_true(strlen(line) <= 100);
	free(line);
	for (int width = 40; width <= 200; width += 13) {
		line = progress_replica_line("web", &p, width);
		/* The bar shrinks to fit, down to 10 cells; from 70 columns the line fits. */
		const char *open = strchr(line, '['), *close = strchr(line, ']');
		assert_true(close - open + 1 >= 10 && close - open + 1 <= 50);
		if (width >= 70)
			assert_true(strlen(line) <= (size_t)width);
		free(line);
	}
	p.stage = REPLICA_WAITING;
	line = progress_replica_line("web", &p, 80);
	assert_string_equal(line, "web-2  waiting");
	free(line);
	p.stage = REPLICA_DONE;
	line = progress_replica_line("web", &p, 80);
	assert_string_equal(line, "web-2  done");
	free(line);
	p.stage = REPLICA_FINISHING;
	p.step = "Swap";
	line = progress_replica_line("web", &p, 80);
	assert_string_equal(line, "web-2  Swap");
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),   cmocka_unit_test(test_percent),      cmocka_unit_test(test_bar),
		cmocka_unit_test(test_rate),    cmocka_unit_test(test_replica_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
