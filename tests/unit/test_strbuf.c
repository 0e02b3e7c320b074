/*
 * strbuf's cap: appends past it are refused, and the allocation itself
 * never grows past cap + 1 (the capped buffers hold network input, so
 * the cap is what memory is sized by).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/strbuf.h"

static void test_cap_bounds_the_allocation(void **state)
{
	(void)state;
	/* 100000 is just over a power of two step (65536): doubling would reach 131072. */
	const size_t cap = 100000;
	static char chunk[4096];
	memset(chunk, 'a', sizeof(chunk));
	struct strbuf sb;
	strbuf_init(&sb, cap);
	while (sb.len + sizeof(chunk) <= cap)
		assert_int_equal(strbuf_add(&sb, chunk, sizeof(chunk)), 0);
	assert_int_equal(strbuf_add(&sb, chunk, cap - sb.len), 0);
	assert_int_equal(sb.len, cap);
	assert_true(sb.alloc <= cap + 1);
	assert_int_equal(strbuf_add(&sb, "x", 1), -1);
	assert_int_equal(sb.len, cap);
	assert_int_equal(sb.buf[cap], '\0');
	strbuf_release(&sb);

	/* The same through strbuf_addf. */
	strbuf_init(&sb, 100);
	assert_int_equal(strbuf_addf(&sb, "%0*d", 65, 0), 0);
	assert_int_equal(strbuf_addf(&sb, "%0*d", 35, 0), 0);
	assert_int_equal(sb.len, 100);
	assert_true(sb.alloc <= 101);
	assert_int_equal(strbuf_addf(&sb, "x"), -1);
	strbuf_release(&sb);
}

static void test_uncapped_still_grows(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < 1000; i++)
		strbuf_appendf(&sb, "%04d", i);
	assert_int_equal(sb.len, 4000);
	assert_int_equal(strncmp(sb.buf + 3996, "0999", 4), 0);
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_bounds_the_allocation),
		cmocka_unit_test(test_uncapped_still_grows),
	};
	return cmocka_run_group_tests_name("strbuf", tests, NULL, NULL);
}
