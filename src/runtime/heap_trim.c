#include "runtime/heap_trim.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/clock.h"

static atomic_uint_fast64_t last_trim_ns;

void heap_trim_when_idle(void)
{
	uint64_t now = clock_mono_ns(), last = atomic_load(&last_trim_ns);
	if (last && now - last < (uint64_t)HEAP_TRIM_INTERVAL_MS * 1000000)
		return;
	/* One thread trims; the others see the new time and go on. */
	if (!atomic_compare_exchange_strong(&last_trim_ns, &last, now))
		return;
	malloc_trim(0);
}
