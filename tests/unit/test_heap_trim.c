/*
 * The heap is trimmed once work is over, even when the last queue drained
 * within HEAP_TRIM_INTERVAL_MS of a trim: that trim is owed and done by
 * the next tick past the interval (what bench/fleet's RSS after a burst of
 * resizes counts), never more than once an interval.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "runtime/heap_trim.h"
#include "util/clock.h"

static void test_a_trim_put_off_is_done_after_the_interval(void **state)
{
	(void)state;
	heap_trim_when_idle(); /* the first: at once */
	assert_int_equal(heap_trims(), 1);
	heap_trim_when_idle(); /* within the interval: put off */
	heap_trim_owed();
	assert_int_equal(heap_trims(), 1);
	clock_sleep_ms(HEAP_TRIM_INTERVAL_MS + 100);
	heap_trim_owed(); /* the tick after the interval */
	assert_int_equal(heap_trims(), 2);
	heap_trim_owed(); /* nothing owed since */
	assert_int_equal(heap_trims(), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_trim_put_off_is_done_after_the_interval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
